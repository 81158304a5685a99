"""Session initializers: what to load into the variables after the session is created."""

__all__ = ["SessionInit", "JustCurrentSession"]


class SessionInit:
    """Base class: ``setup_graph`` adds the ops it needs (before the graph is finalized), then
    ``init(sess)`` runs once on the new session, after variables were initialized.

    Example:
        >>> class SetToZero(SessionInit):
        ...     def _setup_graph(self):
        ...         self.op = tf.compat.v1.assign(my_var, 0.0)
        ...     def _run_init(self, sess):
        ...         sess.run(self.op)
    """

    def setup_graph(self):
        self._setup_graph()

    def init(self, sess):
        self._run_init(sess)

    def _setup_graph(self):
        """Create ops (e.g. a Saver) in the default graph."""

    def _run_init(self, sess):
        """Load values into the session."""


class JustCurrentSession(SessionInit):
    """Keep the freshly initialized variables as they are (the default)."""
