"""SimpleTrainer's graph: as optimizable as the raw graph of the same model, gradients colocated
only where the model placed ops, and a default cost record that adds no work to the step."""
import collections

import numpy as np
import pytest
from resume_support import read_stats
from support import LinearModel, train_linear

import tfloop
from tfloop.compat import tf, tfv1

CHUNKS, CHUNK = 4, 8
LR = 0.1
S_VALUES = np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.5], np.float32)


def linear_cost(s):
    """A cost that is its variables: ``sum_k sum(v_k * s)``; every gradient is ``s`` everywhere,
    and the update does not need the cost."""
    parts = [tf.reduce_sum(tfv1.get_variable(f"v{k}", [CHUNK],
                                             initializer=tfv1.zeros_initializer()) * s)
             for k in range(CHUNKS)]
    return tf.add_n(parts, name="cost")


class LinearInVariables(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([], tf.float32, "s")]

    def build_graph(self, s):
        return linear_cost(s)

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(LR)


def s_dataset():
    return tf.data.Dataset.from_tensor_slices(S_VALUES)


def train_linear_in_variables(callbacks=(), **kwargs):
    config = tfloop.TrainConfig(model=LinearInVariables(), data=tfloop.DatasetInput(s_dataset),
                                callbacks=list(callbacks), steps_per_epoch=3, max_epoch=2,
                                **kwargs)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


def executed(run_metadata):
    return {ns.node_name for dev in run_metadata.step_stats.dev_stats for ns in dev.node_stats}


def partition_op_types(run_metadata):
    return collections.Counter(node.op for graph in run_metadata.partition_graphs
                               for node in graph.node if "Iterator" not in node.op)


PARTITIONS = tfv1.RunOptions(output_partition_graphs=True)
FULL_TRACE = tfv1.RunOptions(trace_level=tfv1.RunOptions.FULL_TRACE)


def raw_partition_op_types():
    """The op types of a raw ``sess.run(train_op)`` of the same model, after grappler."""
    graph = tf.Graph()
    with graph.as_default():
        s = tfv1.data.make_one_shot_iterator(s_dataset().repeat()).get_next()
        train_op = tfv1.train.GradientDescentOptimizer(LR).minimize(
            linear_cost(s), global_step=tfv1.train.get_or_create_global_step())
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            metadata = tfv1.RunMetadata()
            sess.run(train_op, options=PARTITIONS, run_metadata=metadata)
    return partition_op_types(metadata)


def test_the_step_graph_is_optimized_like_the_raw_graph_of_the_model(logdir):
    seen = {}

    class Partitions(tfloop.Callback):
        def _before_train(self):
            metadata = tfv1.RunMetadata()
            self.trainer.sess.run(self.trainer.train_op, options=PARTITIONS,
                                  run_metadata=metadata)
            seen["tfloop"] = partition_op_types(metadata)

    train_linear_in_variables([Partitions()])
    raw = raw_partition_op_types()
    # Grappler merges the equal gradients of the four variables in both graphs: one Tile.
    assert raw["Tile"] + raw["BroadcastTo"] == 1
    assert seen["tfloop"] == raw


def test_the_hooked_step_runs_what_the_training_op_runs(logdir):
    seen = {}

    class Trace(tfloop.Callback):
        def _before_run(self, ctx):
            if self.epoch_num == 2 and self.local_step == 1:
                return tfv1.train.SessionRunArgs(fetches=None, options=FULL_TRACE)
            return None

        def _after_run(self, ctx, values):
            if values.run_metadata is not None and values.run_metadata.step_stats.dev_stats:
                seen["hooked"] = executed(values.run_metadata)
                metadata = tfv1.RunMetadata()
                self.trainer.sess.run(self.trainer.train_op, options=FULL_TRACE,
                                      run_metadata=metadata)
                seen["train_op"] = executed(metadata)

    train_linear_in_variables([Trace()])
    assert "cost" not in seen["train_op"]
    assert seen["hooked"] == seen["train_op"]


def test_a_cost_the_update_does_not_need_is_recorded_from_each_epochs_last_step(logdir,
                                                                                 log_lines):
    trainer = train_linear_in_variables()
    value, costs = 0.0, []          # every element of every variable is one value
    for s in S_VALUES:
        costs.append(float(s) * CHUNKS * CHUNK * value)
        value -= LR * float(s)
    np.testing.assert_allclose([r["cost"] for r in read_stats(logdir)], [costs[2], costs[5]],
                               rtol=1e-6)
    assert not [v for v in trainer.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
                if v.op.name.startswith("EMA/")]
    [message] = [line for line in log_lines if "is recorded at the last step of each epoch" in line]
    assert "reads variables that the update does not need (mul, mul_1, mul_2, ...)" in message


def test_a_cost_the_update_computes_anyway_is_averaged_over_every_step(logdir, log_lines):
    trainer = train_linear(max_epoch=2)
    averages = trainer.graph.get_collection(tfloop.MOVING_SUMMARY_OPS_KEY)
    assert [t.op.name for t in averages] == ["EMA/cost"]
    assert not [line for line in log_lines if "recorded at the last step" in line]


def colocated_with_forward_ops(graph):
    """For each gradient op: whether it is colocated with an op of the model. (The ops grouping an
    op's gradients are left out: no-ops, and identities colocated with those gradients.)"""
    ops = [op for op in graph.get_operations()
           if op.name.startswith("optimizer/gradients/") and op.type != "NoOp"]
    return ["_class" in op.node_def.attr for op in ops
            if not ("_class" in op.node_def.attr and all(
                group.startswith(b"loc:@optimizer/") for group in op.colocation_groups()))]


@pytest.mark.parametrize("placed", [False, True])
def test_gradients_are_colocated_with_their_ops_where_the_model_placed_them(placed):
    class Model(LinearModel):
        def build_graph(self, x, y):
            if not placed:
                return super().build_graph(x, y)
            with tf.device("/cpu:0"):
                return super().build_graph(x, y)

    trainer = train_linear(model=Model(), max_epoch=1)
    colocated = colocated_with_forward_ops(trainer.graph)
    assert colocated and all(c == placed for c in colocated)
