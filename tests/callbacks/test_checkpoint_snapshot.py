"""VariableSnapshot: the copy holds the values of the moment it was taken, for every kind of
variable, and its checkpoint restores like one of TensorFlow's Saver of the variables, written in
place into a local directory or by TensorFlow's writer (a URL, partitioned variables)."""
import threading

import numpy as np
import pytest

import tfloop.callbacks.checkpoint_inplace as inplace
from tfloop.callbacks.checkpoint_snapshot import VariableSnapshot, variables_bytes
from tfloop.compat import tf, tfv1


def _graph(partitioned):
    dense = tfv1.get_variable("dense", [4, 3], initializer=tfv1.ones_initializer())
    parts = tfv1.get_variable("parts", [6, 2], initializer=tfv1.ones_initializer(),
                              partitioner=tfv1.fixed_size_partitioner(2) if partitioned else None)
    parts = list(parts) if partitioned else [parts]
    ref = tfv1.Variable(tf.ones([2]), use_resource=False, name="ref")
    table = tfv1.get_variable("table", [5, 2], initializer=tfv1.ones_initializer())
    step = tfv1.train.get_or_create_global_step()
    # In place: a dense update, a sparse one (the table then copies on read), a reference one.
    change = tf.group(dense.assign_add(tf.ones([4, 3])), tfv1.assign_add(ref, [1.0, 1.0]),
                      tfv1.scatter_add(table, [1], [[5.0, 5.0]]),
                      *[p.assign_add(tf.ones(p.shape)) for p in parts], step.assign_add(1))
    return change, tf.gather(table, [0])


@pytest.mark.parametrize("writer", ["TensorFlow's, partitioned variables", "TensorFlow's, a URL",
                                    "in place"])
def test_the_snapshot_keeps_the_values_of_its_moment(tmp_path, writer):
    graph = tf.Graph()
    directory = {"in place": str(tmp_path), "TensorFlow's, a URL": "ram://snapshot"}.get(writer)
    base = directory if writer.endswith("URL") else str(tmp_path)
    with graph.as_default(), tfv1.Session(graph=graph) as sess:
        change, read_table = _graph(partitioned=writer.endswith("partitioned variables"))
        variables = tfv1.global_variables()
        snapshot = VariableSnapshot(variables, directory=directory, save_relative_paths=True)
        sess.run(tfv1.global_variables_initializer())
        sess.run([change, read_table])
        expected = {v.op.name: sess.run(v) for v in variables}
        snapshot.take(sess)
        sess.run(change)
        prefix = snapshot.saver.save(sess, base + "/model", global_step=1,
                                     write_meta_graph=False)
        assert (tmp_path / ".model-slots").is_dir() == (writer == "in place")
        sess.run(change)
        snapshot.take(sess)         # again, into the buffers of the first one
        later = {v.op.name: sess.run(v) for v in variables}
        second = snapshot.saver.save(sess, base + "/model", global_step=2,
                                     write_meta_graph=False)
        saver = tfv1.train.Saver(variables)
        for path, values in ((prefix, expected), (second, later)):
            saver.restore(sess, path)
            for v in variables:
                np.testing.assert_array_equal(sess.run(v), values[v.op.name], err_msg=v.op.name)
        assert int(expected["global_step"]) == 1 and int(later["global_step"]) == 3
        snapshot.release()
        assert not (tmp_path / ".model-slots").exists()


def test_a_write_under_way_holds_no_thread_the_training_step_needs(tmp_path, monkeypatch):
    """With one inter-op thread, a step runs while a write hangs midway: the write runs in the
    thread that calls ``save``, not in the session's pool."""
    writing, release = threading.Event(), threading.Event()
    write_data = inplace.write_data

    def held(fd, arrays):
        writing.set()
        release.wait(60)
        return write_data(fd, arrays)
    monkeypatch.setattr(inplace, "write_data", held)
    graph = tf.Graph()
    config = tfv1.ConfigProto(inter_op_parallelism_threads=1)
    with graph.as_default(), tfv1.Session(graph=graph, config=config) as sess:
        weights = tfv1.get_variable("w", [3], initializer=tfv1.ones_initializer())
        step = tfv1.assign_add(weights, tf.ones([3]))
        snapshot = VariableSnapshot([weights], directory=str(tmp_path))
        sess.run(tfv1.global_variables_initializer())
        snapshot.take(sess)
        saved = []

        def save():
            with graph.as_default():
                saved.append(snapshot.saver.save(sess, str(tmp_path / "model"),
                                                 write_meta_graph=False))
        writer = threading.Thread(target=save)
        writer.start()
        try:
            assert writing.wait(60)
            stepped = sess.run(step, options=tfv1.RunOptions(timeout_in_ms=20000))
        finally:
            release.set()
            writer.join(60)
        np.testing.assert_array_equal(stepped, [2, 2, 2])
        reader = tf.train.load_checkpoint(saved[0])
        np.testing.assert_array_equal(reader.get_tensor("w"), [1, 1, 1])


def test_variables_bytes_counts_static_shapes():
    graph = tf.Graph()
    with graph.as_default():
        a = tfv1.get_variable("a", [10, 10])
        b = tfv1.get_variable("b", [3], dtype=tf.int64)
        s = tfv1.get_variable("s", [2], dtype=tf.string, initializer=tfv1.constant_initializer(""))
        assert variables_bytes([a, b, s]) == 400 + 24
