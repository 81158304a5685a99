"""Creating the training session."""
from tfloop.compat import tfv1

__all__ = ["NewSessionCreator", "default_session_config", "get_default_sess_config",
           "ReuseSessionCreator", "SessionCreatorAdapter"]


def default_session_config():
    """The session config tfloop uses unless told otherwise: soft placement, GPU memory grown on
    demand (so several processes can share a GPU)."""
    config = tfv1.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    return config


def get_default_sess_config(mem_fraction=0.99):
    """tensorpack's default session config: :func:`default_session_config` with at most
    ``mem_fraction`` of each GPU's memory for this process.

    Example:
        >>> TrainConfig(..., session_config=get_default_sess_config(0.5))
    """
    config = default_session_config()
    config.gpu_options.per_process_gpu_memory_fraction = mem_fraction
    return config


class NewSessionCreator:
    """Create a new ``tf.compat.v1.Session`` on a graph and initialize its variables.

    Args:
        target (str): the TensorFlow server target ("" for in-process).
        config (tf.compat.v1.ConfigProto): session config; :func:`default_session_config` if None.

    Example:
        >>> sess = NewSessionCreator(config=my_config).create_session(graph)
    """

    def __init__(self, target="", config=None):
        self.target = target
        self.config = config if config is not None else default_session_config()

    def create_session(self, graph):
        sess = tfv1.Session(target=self.target, graph=graph, config=self.config)
        with graph.as_default():
            init_ops = [tfv1.global_variables_initializer(), tfv1.local_variables_initializer(),
                        tfv1.tables_initializer()]
        sess.run(init_ops)
        return sess


class ReuseSessionCreator:
    """A session creator that returns the session it was given (its variables as they are).

    Args:
        sess (tf.compat.v1.Session): the session, built on the graph it will be asked for.

    Example:
        >>> PredictConfig(..., session_creator=ReuseSessionCreator(sess))
    """

    def __init__(self, sess):
        self.sess = sess

    def create_session(self, graph=None):
        if graph is not None and self.sess.graph is not graph:
            raise ValueError("ReuseSessionCreator: the session was built on another graph than "
                             "the one it is asked for; build it on the trainer's or predictor's "
                             "graph.")
        return self.sess


class SessionCreatorAdapter:
    """A session creator that applies ``func`` to the session of another creator (e.g. to wrap
    it in a debugging session).

    Args:
        session_creator: a creator (``create_session(graph)``, as tfloop's, or
            ``create_session()``, as ``tf.compat.v1.train`` ones).
        func: takes the created session and returns the session to use.

    Example:
        >>> SessionCreatorAdapter(NewSessionCreator(), tf_debug.LocalCLIDebugWrapperSession)
    """

    def __init__(self, session_creator, func):
        self._creator = session_creator
        self._func = func

    def create_session(self, graph=None):
        sess = self._creator.create_session() if graph is None else \
            self._creator.create_session(graph)
        return self._func(sess)
