"""Saving and restoring the position of a tf.data iterator in the training graph."""
import collections
import re

import numpy as np

from tfloop.compat import tf, tfv1

__all__ = ["IteratorState"]

_STATEFUL = re.compile(r"Failed to serialize the input pipeline graph: ([^\n]*)")
_Reason = collections.namedtuple("_Reason", ["text", "stateful"])


def _without_rows(feed_dict):
    """The feeds, with stand-ins without rows for the arrays that allow them: whether a pipeline
    can be saved does not depend on its data, and serializing the data would copy all of it."""
    return {placeholder: np.zeros((0,) + array.shape[1:], array.dtype)
            if placeholder.shape.rank and placeholder.shape[0] is None else array
            for placeholder, array in feed_dict.items()}


class IteratorState:
    """Save and restore the position of a ``tf.compat.v1`` dataset iterator.

    Graph ops are built by :meth:`build_save` / :meth:`build_restore` (before the graph is
    finalized); the position travels as bytes. A pipeline with a stateful op (``py_function``,
    a random op without a seed, a generator) cannot be saved: :attr:`reason` then says why.

    Args:
        iterator: a ``tf.compat.v1.data.Iterator`` made by ``make_initializable_iterator``.
        feeds (ArrayFeeds): what the pipeline's initialization is fed, if anything (see
            :class:`~tfloop.input.fed_arrays.ArrayFeeds`).

    Example:
        >>> state = IteratorState(source.iterator)
        >>> state.build_save()
        >>> blob = state.save(sess)
    """

    def __init__(self, iterator, feeds=None):
        self.iterator = iterator
        self._feeds = feeds
        self.reason = self._check()
        self._save_op = self._restore_op = self._placeholder = None

    def _check(self):
        dataset = self.iterator.initializer.inputs[0]
        graph = dataset.graph
        with graph.as_default(), tf.name_scope("IteratorState"):
            probe = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset, external_state_policy=2)
        with tfv1.Session(graph=graph) as sess:
            reason = self._probe(sess, probe, _without_rows(self._stand_ins()))
            if reason is not None and not reason.stateful and self._feeds:
                reason = self._probe(sess, probe, self._feed_dict())
        return None if reason is None else reason.text

    @staticmethod
    def _probe(sess, probe, feeds):
        """Why serializing the pipeline fed ``feeds`` fails (None: it does not)."""
        try:
            sess.run(probe.op, feed_dict=feeds)   # the serialized definition is not fetched
        except tf.errors.OpError as e:
            match = _STATEFUL.search(e.message or "")
            if match:
                return _Reason(match.group(1).rstrip("."), True)
            return _Reason((e.message or type(e).__name__).splitlines()[0], False)
        return None

    def _stand_ins(self):
        return {} if self._feeds is None else self._feeds.stand_ins()

    def _feed_dict(self):
        return {} if self._feeds is None else self._feeds.feed_dict

    @property
    def savable(self):
        return self.reason is None

    def _resource(self):
        return self.iterator._iterator_resource

    def build_save(self):
        with tf.name_scope("IteratorState"):
            self._save_op = tf.io.serialize_tensor(tf.raw_ops.SerializeIterator(
                resource_handle=self._resource(), external_state_policy=2))

    def build_restore(self):
        with tf.name_scope("IteratorState"):
            self._placeholder = tfv1.placeholder(tf.string, [], name="serialized")
            self._restore_op = tf.raw_ops.DeserializeIterator(
                resource_handle=self._resource(),
                serialized=tf.io.parse_tensor(self._placeholder, tf.variant))

    def save(self, sess):
        """The iterator's position, as bytes."""
        return sess.run(self._save_op)

    def restore(self, sess, blob):
        """Initialize the iterator and move it to the saved position."""
        sess.run(self.iterator.initializer, feed_dict=self._feed_dict())
        sess.run(self._restore_op, feed_dict={self._placeholder: blob})
