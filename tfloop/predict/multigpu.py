"""Predictors over several devices: one tower per device, sharing one set of variables."""
import copy

from tfloop.compat import tf
from tfloop.predict.config import PredictConfig
from tfloop.predict.offline import build_predict_graph, check_config
from tfloop.tfutils.predictor import OnlinePredictor, PredictorBase
from tfloop.tfutils.sesscreate import NewSessionCreator
from tfloop.utils import logger
from tfloop.utils.checks import is_int

__all__ = ["MultiTowerOfflinePredictor", "DataParallelOfflinePredictor", "resolve_towers"]


def resolve_towers(towers, who: str) -> list:
    """Device strings for ``towers``: GPU indices (logical CPU devices on a machine without GPUs)
    or device strings such as ``"/cpu:1"``."""
    if isinstance(towers, (str, int)) or not hasattr(towers, "__iter__"):
        raise TypeError(f"{who}: towers must be a list of GPU indices or device strings, got "
                        f"{towers!r}.")
    towers = list(towers)
    if not towers:
        raise ValueError(f"{who}: towers is empty; give at least one GPU index or device.")
    gpus = len(tf.config.list_physical_devices("GPU"))
    devices = []
    for t in towers:
        if is_int(t):
            if t < 0:
                raise ValueError(f"{who}: tower {t} is not a GPU index; use '/cpu:0' for the CPU.")
            devices.append(f"/device:GPU:{t}" if gpus else f"/device:CPU:{t}")
        elif isinstance(t, str):
            devices.append(tf.DeviceSpec.from_string(t).to_string())
        else:
            raise TypeError(f"{who}: towers items must be GPU indices or device strings, got "
                            f"{t!r}.")
    if len(set(devices)) != len(devices):
        raise ValueError(f"{who}: towers {towers} name a device twice.")
    if not gpus and all(isinstance(t, int) for t in towers):
        logger.info(f"{who}: no GPU, towers {towers} run on logical CPU devices {devices}.")
    return devices


def _with_cpu_devices(config, devices):
    """The config's session creator, with as many logical CPU devices as the towers use."""
    cpus = [tf.DeviceSpec.from_string(d).device_index or 0 for d in devices
            if (tf.DeviceSpec.from_string(d).device_type or "").upper() == "CPU"]
    creator = config.session_creator
    if cpus and isinstance(creator, NewSessionCreator):
        session_config = copy.deepcopy(creator.config)
        session_config.device_count["CPU"] = max(session_config.device_count.get("CPU", 1),
                                                 max(cpus) + 1)
        creator = NewSessionCreator(creator.target, session_config)
    return creator


def _build_towers(config, devices):
    graph = config._maybe_create_graph()
    towers = []
    with graph.as_default():
        for i, device in enumerate(devices):
            towers.append(build_predict_graph(config, f"tower{i}", device))
            logger.info(f"Predict tower 'tower{i}' built on {device}.")
    creator = _with_cpu_devices(config, devices)
    original, config.session_creator = config.session_creator, creator
    try:
        sess = config._create_session(graph)
    finally:
        config.session_creator = original
    if config.create_graph:
        graph.finalize()
    return graph, sess, towers


class MultiTowerOfflinePredictor(PredictorBase):
    """One predict tower per device in one graph and session, with one predictor per tower
    (e.g. one per worker thread). Calling it runs the first tower.

    Args:
        config (PredictConfig): as for :class:`OfflinePredictor`.
        towers (list): GPU indices (logical CPU devices without GPUs) or device strings.

    Example:
        >>> multi = MultiTowerOfflinePredictor(config, [0, 1])
        >>> first, second = multi.get_predictors()   # run them from two threads
    """

    def __init__(self, config: PredictConfig, towers: list) -> None:
        check_config(config, "MultiTowerOfflinePredictor")
        self.devices = resolve_towers(towers, "MultiTowerOfflinePredictor")
        self.return_input = config.return_input
        self.graph, self.sess, built = _build_towers(config, self.devices)
        self.predictors = [OnlinePredictor(inputs, outputs, config.return_input, self.sess,
                                           run_context=config.precision.rewriter_environment)
                           for inputs, outputs in built]

    def _do_call(self, dp):
        return self.predictors[0]._do_call(dp)

    def get_predictor(self, n: int) -> list:
        """The predictors for ``n`` workers: tower ``i % towers`` for worker ``i``."""
        if n > len(self.predictors):
            logger.warning(f"MultiTowerOfflinePredictor: {n} predictors asked for, "
                           f"{len(self.predictors)} towers: towers are shared round-robin.")
        return [self.predictors[k % len(self.predictors)] for k in range(n)]

    def get_predictors(self) -> list:
        """One :class:`OnlinePredictor` per tower."""
        return list(self.predictors)


class DataParallelOfflinePredictor(OnlinePredictor):
    """One predictor over every tower: each call runs a batch of its own on each device.

    Inputs and outputs are not split or concatenated: the call takes
    ``[input 0 of tower 0, input 1 of tower 0, ..., input 0 of tower 1, ...]`` and returns the
    outputs in the same order.

    Args:
        config (PredictConfig): as for :class:`OfflinePredictor`.
        towers (list): GPU indices (logical CPU devices without GPUs) or device strings.

    Example:
        >>> predictor = DataParallelOfflinePredictor(config, [0, 1])   # one input, one output
        >>> prob_a, prob_b = predictor(images_a, images_b)
    """

    def __init__(self, config: PredictConfig, towers: list) -> None:
        check_config(config, "DataParallelOfflinePredictor")
        self.devices = resolve_towers(towers, "DataParallelOfflinePredictor")
        self.graph, sess, built = _build_towers(config, self.devices)
        inputs = [t for tower_inputs, _ in built for t in tower_inputs]
        outputs = [t for _, tower_outputs in built for t in tower_outputs]
        super().__init__(inputs, outputs, config.return_input, sess,
                         run_context=config.precision.rewriter_environment)
