"""A snapshot of variables taken between two training steps, and the saver that writes it.

A resource variable's read shares its buffer, and assigning that read to another resource
variable shares it too: the snapshot costs no copy. TensorFlow copies a buffer that is shared
before it updates it in place (copy-on-write), so the next training step pays one copy of each
variable it updates while the snapshot is held. A reference variable (``use_resource=False``) is
updated in place without that check: its snapshot is a copy. A resource variable that sparse ops
use (``tf.gather``) copies on every read, so its snapshot is a copy too.
"""
from tensorflow.python.ops import resource_variable_ops
from tensorflow.python.training.saving import saveable_object_util

from tfloop.compat import tf, tfv1

__all__ = ["VariableSnapshot", "variables_bytes"]


def variables_bytes(variables):
    """The bytes of ``variables`` by their static shapes; a variable of unknown shape, or of a
    type of no fixed size (strings), counts 0."""
    total = 0
    for v in variables:
        shape, dtype = v.shape, v.dtype.base_dtype
        if shape.is_fully_defined() and dtype != tf.string:
            total += shape.num_elements() * dtype.size
    return total


def _checkpoint_name(variable):
    """The tensor name of ``variable`` in a checkpoint and its slice (a partitioned variable's
    part), as ``tf.compat.v1.train.Saver`` names them."""
    info = variable._save_slice_info
    if info is not None:
        return info.full_name, info.spec
    return variable.op.name, ""


class VariableSnapshot:
    """Snapshot variables into shadow variables (kept out of every collection) with one session
    call, write the snapshot with a ``tf.compat.v1.train.Saver`` of the shadows (same tensor
    names and slices as a Saver of the variables), and release it. Build it before the graph is
    finalized.

    Args:
        variables (list): the variables to snapshot.
        saver_kwargs: for the shadows' Saver (``max_to_keep``, ...).

    Example:
        >>> snapshot = VariableSnapshot(tfv1.global_variables(), max_to_keep=5)
        >>> snapshot.take(sess)       # between two steps
        >>> snapshot.saver.save(sess, "train_log/model", global_step=step)  # any thread
        >>> snapshot.release(sess)
    """

    def __init__(self, variables, **saver_kwargs):
        takes, releases, saveables = [], [], []
        with tf.name_scope("checkpoint_snapshot"):
            for v in variables:
                dtype = v.dtype.base_dtype
                with tf.device(v.device):
                    shadow = tfv1.Variable(
                        tf.zeros([0], dtype), trainable=False, collections=[],
                        validate_shape=False, use_resource=True, shape=tf.TensorShape(None),
                        name="shadow")
                    value = v.read_value()
                    if not resource_variable_ops.is_resource_variable(v):
                        value = tf.raw_ops.DeepCopy(x=value)
                    takes.append(shadow.assign(value, read_value=False))
                    releases.append(shadow.assign(tf.zeros([0], dtype), read_value=False))
                name, spec = _checkpoint_name(v)
                saveables.append(saveable_object_util.ResourceVariableSaveable(shadow, spec, name))
            self._take = tf.group(*takes, name="take")
            self._release = tf.group(*releases, name="release")
        self.saver = tfv1.train.Saver(var_list=saveables, **saver_kwargs)

    def take(self, sess):
        """Snapshot the variables' current values."""
        sess.run(self._take)

    def release(self, sess):
        """Let go of the snapshot (its memory, or the buffers the variables shared with it)."""
        sess.run(self._release)
