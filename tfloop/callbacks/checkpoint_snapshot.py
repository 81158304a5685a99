"""A snapshot of variables taken between two training steps, and the saver that writes it.

The snapshot is a copy into host buffers that are kept from one save to the next: the first save
allocates them, later ones copy into memory already mapped. Measured on a 2-core CPU machine (256
MB of variables updated in place every step), this stalls training 0.2-0.3 s per save, against
0.9-1.2 s for a snapshot that shares the variables' buffers, because the step after it then copies
every variable it updates into freshly allocated memory (TensorFlow's copy-on-write; what
TensorFlow's asynchronous checkpoint does). The price: the host memory of one more copy of the
saved variables, for the whole run.

The write runs in the thread that calls ``saver.save`` (never in the session's inter-op pool,
where it would hold a thread the training step needs). In a local directory it reads the shadows
where they are (a ``numpy_function`` of them) and writes the checkpoint's files itself, the data
into the file of a deleted checkpoint (:mod:`tfloop.callbacks.checkpoint_inplace`); TensorFlow's
``SaveV2`` writes the other cases (a URL, partitioned variables, strings).
"""
import functools

from tensorflow.python.client.session import SessionInterface
from tensorflow.python.training import saver as saver_lib
from tensorflow.python.training.saving import saveable_object

from tfloop.callbacks.checkpoint_bundle import fast_crc32c, writable_dtype
from tfloop.callbacks.checkpoint_inplace import InPlaceWriter
from tfloop.compat import tf, tfv1
from tfloop.utils import files

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


class _Shadows(saveable_object.SaveableObject):
    """The shadows of the parts (slices) of one checkpoint tensor, or of one whole variable."""

    def __init__(self, name, parts):
        self._refs = [ref for ref, _ in parts]
        specs = [saveable_object.SaveSpec(ref, spec, name, dtype=ref.dtype.base_dtype)
                 for ref, spec in parts]
        super().__init__(self._refs[0], specs, name)

    def restore(self, restored_tensors, restored_shapes):
        return tf.group(*[tfv1.assign(ref, value, validate_shape=False)
                          for ref, value in zip(self._refs, restored_tensors)])


def _host_device(variable):
    """The CPU of the machine (job and task) that holds ``variable``."""
    spec = tf.DeviceSpec.from_string(variable.device or "")
    return spec.replace(device_type="CPU", device_index=0).to_string()


class _InCallerThread(SessionInterface):
    """A session whose runs execute in the calling thread (``RunOptions.inter_op_thread_pool =
    -1``), not in the session's inter-op pool, where they would hold a thread that the training
    step needs for as long as the write takes."""

    def __init__(self, sess):
        self._sess = sess

    @property
    def graph(self):
        return self._sess.graph

    @property
    def sess_str(self):
        return self._sess.sess_str

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        in_caller = tfv1.RunOptions(inter_op_thread_pool=-1)
        if options is not None:
            in_caller.MergeFrom(options)
            in_caller.inter_op_thread_pool = -1
        return self._sess.run(fetches, feed_dict=feed_dict, options=in_caller,
                              run_metadata=run_metadata)


class _SnapshotSaver(tfv1.train.Saver):
    """The shadows' Saver: it writes in the thread that calls :meth:`save`, and keeps the data
    file of each checkpoint it deletes for the in-place writer, when it has one."""

    def __init__(self, *args, in_place_writer=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._in_place_writer = in_place_writer

    def save(self, sess, *args, **kwargs):
        return super().save(_InCallerThread(sess), *args, **kwargs)

    def _MaybeDeleteOldCheckpoints(self, meta_graph_suffix="meta"):
        writer = self._in_place_writer
        if writer is None:
            return super()._MaybeDeleteOldCheckpoints(meta_graph_suffix)
        if self._checkpoints_to_be_deleted:        # the one TensorFlow deletes now, unless kept
            writer.keep_data_of(self._CheckpointFilename(self._checkpoints_to_be_deleted[0]))
        try:
            return super()._MaybeDeleteOldCheckpoints(meta_graph_suffix)
        finally:
            writer.settle()


class _InPlaceBuilder(saver_lib.BulkSaverBuilder):
    """Builds the Saver's save op as a call of :class:`InPlaceWriter` on the shadows."""

    def __init__(self, writer):
        super().__init__(tfv1.train.SaverDef.V2)
        self._writer = writer

    def save_op(self, filename_tensor, saveables):
        names = [spec.name for s in saveables for spec in s.specs]
        tensors = [spec.tensor for s in saveables for spec in s.specs]
        return tfv1.numpy_function(functools.partial(self._writer.write, names),
                                   [filename_tensor] + tensors, tf.int64, name="write_in_place")


def _in_place_writable(directory, variables):
    """Whether the in-place writer can write ``variables`` into ``directory``: a local directory,
    whole variables (not parts of partitioned ones) of fixed-size types and known shapes."""
    return (directory is not None and not files.is_url(directory) and fast_crc32c()
            and all(v._save_slice_info is None and writable_dtype(v.dtype)
                    and v.shape.is_fully_defined() for v in variables))


class VariableSnapshot:
    """Copy variables into shadow variables (host buffers kept out of every collection) with one
    session call, and write the copy with a ``tf.compat.v1.train.Saver`` of the shadows (same
    tensor names and slices as a Saver of the variables). Build it before the graph is finalized.

    Args:
        variables (list): the variables to snapshot.
        directory (str): where the checkpoints go; a local one gets the in-place writer.
        in_place_writer (InPlaceWriter): the in-place writer of another snapshot that writes into
            the same directory (one set of spare data files per directory); a new one if None.
        saver_kwargs: for the shadows' Saver (``max_to_keep``, ...).

    Example:
        >>> snapshot = VariableSnapshot(tfv1.global_variables(), "train_log", max_to_keep=5)
        >>> snapshot.take(sess)       # between two steps
        >>> snapshot.saver.save(sess, "train_log/model", global_step=step)  # any thread
        >>> snapshot.release()        # after the last save
    """

    def __init__(self, variables, directory=None, in_place_writer=None, **saver_kwargs):
        takes, parts = [], {}
        with tf.name_scope("checkpoint_snapshot"):
            for v in variables:
                with tf.device(_host_device(v)):
                    # A reference variable: assigning a value of its size copies into its buffer.
                    shadow = tfv1.Variable(tf.zeros([0], v.dtype.base_dtype), trainable=False,
                                           collections=[], validate_shape=False,
                                           use_resource=False, name="shadow")
                    takes.append(tfv1.assign(shadow, v.read_value(), validate_shape=False))
                name, spec = _checkpoint_name(v)
                parts.setdefault(name, []).append((shadow.op.outputs[0], spec))
            self._take = tf.group(*takes, name="take")
        self.in_place_writer = None
        builder = None
        if _in_place_writable(directory, variables):
            self.in_place_writer = (in_place_writer
                                    or InPlaceWriter(saver_kwargs.get("max_to_keep", 5)))
            builder = _InPlaceBuilder(self.in_place_writer)
        self.saver = _SnapshotSaver(
            var_list=[_Shadows(name, p) for name, p in parts.items()], builder=builder,
            in_place_writer=self.in_place_writer, **saver_kwargs)

    def take(self, sess):
        """Copy the variables' current values into the shadows."""
        sess.run(self._take)

    def release(self):
        """Give back what is kept for the next write (the in-place writer's spare data files);
        call it once no write is under way."""
        if self.in_place_writer is not None:
            self.in_place_writer.release()
