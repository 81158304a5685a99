"""fetch_structure: the containers of a fetch structure rebuilt exactly as Session.run answers
them, and NameFetchSession, which resolves names inside any of them."""
import collections

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils import NameFetchSession
from tfloop.tfutils.fetch_structure import map_fetches

Pair = collections.namedtuple("Pair", ["first", "second"])


class Names(list):
    """A list subclass: Session.run answers it with a plain list."""


def _shape(value):
    """The containers of ``value`` (exact types, a defaultdict's factory) and its leaves."""
    if isinstance(value, dict):
        return (type(value), getattr(value, "default_factory", None),
                [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return type(value), [_shape(v) for v in value]
    return np.asarray(value).tolist()


def test_map_fetches_builds_the_containers_session_run_answers_with():
    graph = tf.Graph()
    with graph.as_default():
        a, b = tf.constant(1, name="a"), tf.constant(2, name="b")
    structure = [Pair("a:0", ("b:0",)), Names(["a:0"]),
                 collections.OrderedDict(z="b:0", y=["a:0"]),
                 collections.defaultdict(list, {"k": Pair("a:0", "b:0")}), {}, ()]
    resolved = map_fetches(graph.get_tensor_by_name, structure)
    with tfv1.Session(graph=graph) as sess:
        by_session_run = sess.run(resolved)
    assert _shape(map_fetches(lambda name: {"a:0": 1, "b:0": 2}[name], structure)) == \
        _shape(by_session_run)
    assert _shape(by_session_run) == _shape(
        [Pair(1, (2,)), [1], collections.OrderedDict(z=2, y=[1]),
         collections.defaultdict(list, {"k": Pair(1, 2)}), {}, ()])
    assert resolved[0] == Pair(a, (b,))


def test_a_name_fetching_session_keeps_named_tuples_and_ordered_dicts():
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", initializer=np.float32(3.0))
        with tfv1.Session(graph=graph) as sess:
            sess.run(w.initializer)
            fetched = NameFetchSession(sess).run(
                collections.OrderedDict(p=Pair("w", ("w:0",)), q=["w"]))
    assert _shape(fetched) == _shape(collections.OrderedDict(p=Pair(3.0, (3.0,)), q=[3.0]))
    assert fetched["p"].first == 3.0
