"""Creating the training session."""
from tfloop.compat import tfv1

__all__ = ["NewSessionCreator", "default_session_config", "get_default_sess_config"]


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
