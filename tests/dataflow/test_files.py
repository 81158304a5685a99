"""ImageFromFile and LMDBDataDecoder (tensorpack's names) on real files."""
import numpy as np
import pytest

from tfloop.dataflow import DataFromList, ImageFromFile, LMDBData, LMDBDataDecoder, LMDBSerializer

cv2 = pytest.importorskip("cv2")


def test_image_from_file_reads_color_and_gray_with_resize(tmp_path):
    paths = []
    for i in range(3):
        image = np.full([4, 6, 3], 40 * i, np.uint8)
        paths.append(str(tmp_path / f"{i}.png"))
        cv2.imwrite(paths[-1], image)
    color = ImageFromFile(paths)
    color.reset_state()
    assert len(color) == 3
    assert [int(dp[0][0, 0, 0]) for dp in color] == [0, 40, 80]
    assert next(iter(color))[0].shape == (4, 6, 3)
    gray = ImageFromFile(paths, channel=1, resize=(2, 3), shuffle=True)
    gray.reset_state()
    shapes = {dp[0].shape for dp in gray}
    assert shapes == {(2, 3, 1)}


def test_image_from_file_errors():
    with pytest.raises(ValueError, match="channel must be 1 or 3"):
        ImageFromFile(["a.png"], channel=2)
    df = ImageFromFile(["/nonexistent.png"])
    df.reset_state()
    with pytest.raises(OSError, match="cannot read an image"):
        list(df)


def test_lmdb_data_decoder_decodes_and_skips(tmp_path):
    path = str(tmp_path / "data.lmdb")
    LMDBSerializer.save(DataFromList([[i] for i in range(4)], shuffle=False), path)
    raw = LMDBData(path, shuffle=False)
    decoded = LMDBDataDecoder(raw, lambda key, value: None if key.endswith(b"1") else [key])
    decoded.reset_state()
    keys = [dp[0] for dp in decoded]
    assert len(keys) == 3 and not any(k.endswith(b"1") for k in keys)
    with pytest.raises(TypeError, match="decodes an LMDBData"):
        LMDBDataDecoder(DataFromList([[1]]), lambda k, v: [v])
