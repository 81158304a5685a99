"""TF2 resource variables fetched by name (issue 23): a variable's name (``"w:0"``, ``"w"``)
gives its value everywhere tfloop takes names, never the opaque resource handle."""
import pdb
import sys

import numpy as np
import pytest
from support import train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils import NameFetchSession, get_tensors_by_names

W = np.array([[1.0], [2.0], [3.0]], np.float32)


@pytest.fixture
def graph_and_session():
    graph = tf.Graph()
    with graph.as_default():
        x = tfv1.placeholder(tf.float32, [None, 3], name="x")
        w = tfv1.get_variable("fc/W", initializer=W)
        tf.matmul(x, w, name="y")
        assert w.dtype == tf.float32 and "Resource" in type(w).__name__
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            yield graph, sess


@pytest.mark.parametrize("name", ["fc/W:0", "fc/W"])
def test_an_online_predictor_outputs_a_variable_by_name(graph_and_session, name):
    graph, sess = graph_and_session
    predictor = tfloop.OnlinePredictor([graph.get_tensor_by_name("x:0")], [name], sess=sess)
    value, = predictor(np.zeros([1, 3], np.float32))
    np.testing.assert_array_equal(value, W)


def test_get_tensors_by_names_gives_values(graph_and_session):
    graph, sess = graph_and_session
    with graph.as_default():
        tensors = get_tensors_by_names(["fc/W", "fc/W:0", "y"])
    np.testing.assert_array_equal(sess.run(tensors[0]), W)
    np.testing.assert_array_equal(sess.run(tensors[1]), W)
    assert tensors[2].name == "y:0"


def test_the_inject_shell_session_fetches_by_name(graph_and_session):
    _, sess = graph_and_session
    fetched = NameFetchSession(sess).run({"w": "fc/W:0", "both": ["fc/W", "y"]},
                                         feed_dict={"x:0": np.ones([1, 3], np.float32)})
    np.testing.assert_array_equal(fetched["w"], W)
    np.testing.assert_array_equal(fetched["both"][0], W)
    np.testing.assert_array_equal(fetched["both"][1], [[6.0]])


class ShellAtStep3(tfloop.InjectShell):
    """InjectShell asked for a shell at global step 3, as if its file had been touched."""

    def _take_request(self):
        return self.global_step == 3


def test_inject_shell_puts_a_name_fetching_session_in_scope(tmp_path, monkeypatch):
    seen = []

    def shell(debugger):
        seen.append(sys._getframe(1).f_locals["sess"].run("w:0"))
    monkeypatch.setattr(pdb.Pdb, "set_trace", shell)
    train_linear([ShellAtStep3(file=str(tmp_path / "INJECT"), shell="pdb")], max_epoch=2)
    assert len(seen) == 1 and seen[0].shape == (3, 1) and seen[0].dtype == np.float32


def test_a_tensor_printer_shows_a_variable_by_name(caplog):
    train_linear([tfloop.TensorPrinter(["w"])], max_epoch=1)
    printed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("w")]
    assert printed and "resource" not in printed[0] and "0." in printed[0]
