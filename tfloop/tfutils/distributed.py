"""tensorpack's session creator for between-graph distributed training: the chief initializes
the variables, the other workers wait until it has."""
from tfloop.compat import tfv1

__all__ = ["get_distributed_session_creator"]


class _DistributedSessionCreator:
    def __init__(self, server):
        server_def = server.server_def
        self.server = server
        self.is_chief = server_def.job_name == "worker" and server_def.task_index == 0

    def create_session(self, graph=None):
        graph = graph if graph is not None else tfv1.get_default_graph()
        with graph.as_default():
            init_op = tfv1.global_variables_initializer()
            manager = tfv1.train.SessionManager(
                local_init_op=tfv1.local_variables_initializer(),
                ready_op=tfv1.report_uninitialized_variables(),
                ready_for_local_init_op=tfv1.report_uninitialized_variables(
                    tfv1.global_variables()),
                graph=graph)
        if self.is_chief:
            return manager.prepare_session(master=self.server.target, init_op=init_op)
        return manager.wait_for_session(master=self.server.target)


def get_distributed_session_creator(server):
    """A session creator on ``server`` (a ``tf.distribute.Server``): worker 0 (the chief)
    initializes the variables; every other task waits for them to be initialized.

    Example:
        >>> creator = get_distributed_session_creator(server)
        >>> sess = creator.create_session(graph)
    """
    return _DistributedSessionCreator(server)
