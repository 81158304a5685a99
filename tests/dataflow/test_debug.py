"""PrintData's description of datapoints and TestDataSpeed's measurement."""
import numpy as np

from tfloop.dataflow import DataFromList, FakeData, PrintData, TestDataSpeed


def test_print_data_describes_the_first_datapoints_and_passes_all(log_lines):
    dp = [np.arange(6, dtype=np.int32).reshape(2, 3), 1.5, [np.zeros(2), 7, "s", 9]]
    df = PrintData(DataFromList([dp, dp, dp], shuffle=False), num=2, name="train", max_list=2)
    df.reset_state()
    assert len(list(df)) == 3
    assert log_lines[0] == "Contents of DataFlow (train):"
    assert log_lines[1].splitlines() == [
        "datapoint 0/2 with 3 components consists of",
        "  0: ndarray:int32 of shape (2, 3) in range [0, 5]",
        "  1: float with value 1.5",
        "  2: list of len 4",
        "    0: ndarray:float64 of shape (2,) in range [0.0, 0.0]",
        "    1: int with value 7",
        "    ...",
    ]
    assert log_lines[2].startswith("datapoint 1/2") and len(log_lines) == 3


def test_print_data_describes_dicts_and_counts_again_after_reset(log_lines):
    df = PrintData(DataFromList([{"label": np.int64(3)}], shuffle=False))
    df.reset_state()
    list(df)
    df.reset_state()
    list(df)
    assert log_lines[1].splitlines()[1] == "  label: int64 with value 3"
    assert len(log_lines) == 4


def test_test_data_speed_measures_then_produces(log_lines):
    df = TestDataSpeed(FakeData([[4]], size=30), size=20, warmup=2)
    df.reset_state()
    assert len(list(df)) == 30
    assert df.speed > 0
    assert any(line.startswith("TestDataSpeed: 20 datapoints in ") for line in log_lines)
