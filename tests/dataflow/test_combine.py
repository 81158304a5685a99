"""Combining DataFlows: concatenating, joining, mixing, choosing."""
import pytest

from tfloop.dataflow import ConcatData, DataFromList, JoinData, RandomChooseData, RandomMixData


def constant(value, n):
    return DataFromList([[value]] * n, shuffle=False)


def test_concat_data_in_order_with_summed_length():
    df = ConcatData([constant(0, 2), constant(1, 3)])
    df.reset_state()
    assert [dp[0] for dp in df] == [0, 0, 1, 1, 1] and len(df) == 5
    with pytest.raises(ValueError, match="non-empty list of DataFlows"):
        ConcatData([])


def test_join_data_joins_lists_and_dicts_and_stops_at_the_shortest(log_warnings):
    df = JoinData([DataFromList([[1, 2], [3, 4]], shuffle=False), constant("x", 3)])
    df.reset_state()
    assert list(df) == [[1, 2, "x"], [3, 4, "x"]] and len(df) == 2
    assert log_warnings == ["JoinData: the DataFlows have different lengths [2, 3]; the joined "
                            "DataFlow stops at the shortest."]
    dicts = JoinData([DataFromList([{"a": 1}], shuffle=False), DataFromList([{"b": 2}],
                                                                            shuffle=False)])
    assert list(dicts) == [{"a": 1, "b": 2}]


def test_join_data_resets_a_repeated_dataflow_once():
    class Counting(DataFromList):
        resets = 0

        def reset_state(self):
            Counting.resets += 1
            super().reset_state()
    same = Counting([[1]], shuffle=False)
    JoinData([same, same]).reset_state()
    assert Counting.resets == 1


def test_random_mix_data_uses_every_datapoint_once_in_random_order():
    df = RandomMixData([constant(0, 10), constant(1, 10)])
    df.reset_state()
    out = [dp[0] for dp in df]
    assert sorted(out) == [0] * 10 + [1] * 10 and out != sorted(out) and len(df) == 20


def test_random_mix_data_needs_lengths():
    from tfloop.dataflow import DataFromGenerator
    with pytest.raises(ValueError, match="needs DataFlows with a length"):
        RandomMixData([DataFromGenerator(lambda: iter([]))])


def test_random_choose_data_follows_probabilities_and_stops_when_one_ends():
    df = RandomChooseData([(constant(0, 1000), 0.9), (constant(1, 1000), 0.1)])
    df.reset_state()
    out = [dp[0] for dp in df]
    assert out.count(0) == 1000  # the likely one ran out first
    assert 40 < out.count(1) < 200
    uniform = RandomChooseData([constant(0, 50), constant(1, 50)])
    uniform.reset_state()
    assert set(dp[0] for dp in uniform) == {0, 1}
    with pytest.raises(ValueError, match="must sum to 1, they sum to 0.5"):
        RandomChooseData([(constant(0, 1), 0.25), (constant(1, 1), 0.25)])
