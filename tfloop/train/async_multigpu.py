"""Asynchronous data parallel on the devices of one machine (tensorpack's AsyncMultiGPUTrainer).

Every tower reads the shared variables, computes its gradients and applies them with its own
``apply_gradients`` call; nothing waits for or averages the other towers' gradients. All towers
run in the same ``session.run``, so their updates race on the shared variables as tensorpack's do
(a tower may read a variable before or after another tower updated it).
"""
from tfloop.compat import tf, tfv1
from tfloop.tfutils.gradproc import ScaleGradient
from tfloop.train.multigpu import DataParallelTrainer
from tfloop.utils import logger
from tfloop.utils.checks import check_bool

__all__ = ["AsyncMultiGPUTrainer"]


class AsyncMultiGPUTrainer(DataParallelTrainer):
    """Data-parallel training where each tower updates the shared variables on its own.

    A step runs every tower once: each one applies its own gradients (scaled by ``1/N`` with
    ``scale_gradient``, so the step moves the variables about as far as a synchronous step).
    Each tower's update is one optimizer step: an optimizer that counts steps (Adam's bias
    correction) advances N times per training step, and ``global_step`` advances once.
    Variables live on the towers' devices (fewest bytes first), or on the CPU with 4 towers or
    more, as in tensorpack.

    Args:
        gpus: an int N, GPU indices, or device strings (see :func:`resolve_devices`).
        scale_gradient (bool): multiply each tower's gradients by ``1/N``.

    Example:
        >>> launch_train_with_config(config, AsyncMultiGPUTrainer(2))
    """

    def __init__(self, gpus, scale_gradient=True):
        super().__init__(gpus)
        self.scale_gradient = check_bool(scale_gradient, "AsyncMultiGPUTrainer: scale_gradient")
        self.ps_devices = ["/device:CPU:0"] if self.num_towers >= 4 else list(self.devices)

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        global_step, opt, grads, var_lists = self._towers_on_shared_variables(input, get_opt_fn)
        variables = var_lists[0]
        scale = ScaleGradient((".*", 1.0 / self.num_towers), verbose=False) \
            if self.scale_gradient and self.num_towers > 1 else None
        updates = []
        with tf.name_scope("async_apply_gradients"):
            for i, tower_grads in enumerate(grads):
                pairs = list(zip(tower_grads, var_lists[i]))
                with tfv1.device(self.devices[i]):
                    if scale is not None:
                        pairs = scale.process(pairs)
                    updates.append(opt.apply_gradients(
                        pairs, global_step=global_step if i == 0 else None,
                        name=f"apply_grad_{i}"))
        logger.info(f"{type(self).__name__}: {self.num_towers} towers on "
                    f"{', '.join(self.devices)}, each applying its own gradients; variables on "
                    f"{', '.join(sorted({v.device for v in variables}))}.")
        return tf.group(*updates, name="train_op")
