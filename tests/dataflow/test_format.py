"""tensorpack's dataflow.format: Caffe LMDB databases of Datum records, SVMlight files, and LMDB
keys given as a format string."""
import numpy as np
import pytest

from tfloop.dataflow import CaffeLMDB, LMDBData, SVMLightData

SVM = """# a comment line
1 1:0.5 3:2.0
-1 qid:3 2:1.5  # trailing comment
2.5 4:-1

0 1:1 2:2 3:3 4:4
"""


def test_svmlight_data_matches_scikit_learn(tmp_path):
    datasets = pytest.importorskip("sklearn.datasets")
    path = tmp_path / "train.svm"
    path.write_text(SVM)
    df = SVMLightData(str(path), shuffle=False)
    df.reset_state()
    points = list(df)
    X, y = datasets.load_svmlight_file(str(path))
    assert len(df) == len(points) == 4
    np.testing.assert_array_equal(np.stack([p[0] for p in points]), X.toarray())
    np.testing.assert_array_equal([p[1] for p in points], y)
    shuffled = SVMLightData(str(path))
    shuffled.reset_state()
    assert sorted(p[1] for p in shuffled) == sorted(y)


def test_svmlight_zero_based_indices_and_bad_lines(tmp_path):
    path = tmp_path / "zero.svm"
    path.write_text("1 0:1.0 2:3.0\n0 1:2.0\n")
    X = SVMLightData(str(path), shuffle=False).X
    np.testing.assert_array_equal(X, [[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]])
    path.write_text("1 1:0.5\nyes 2:1\n")
    with pytest.raises(ValueError, match=r"line 2 is not '<label> <index>:<value> \.\.\.'"):
        SVMLightData(str(path))


def _datum_class():
    """caffe.Datum built with protobuf from its field list (caffe.proto)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    proto = descriptor_pb2.FileDescriptorProto(name="caffe_datum_test.proto", package="caffe")
    message = proto.message_type.add(name="Datum")
    field = descriptor_pb2.FieldDescriptorProto
    for name, number, kind, label in [
            ("channels", 1, field.TYPE_INT32, field.LABEL_OPTIONAL),
            ("height", 2, field.TYPE_INT32, field.LABEL_OPTIONAL),
            ("width", 3, field.TYPE_INT32, field.LABEL_OPTIONAL),
            ("data", 4, field.TYPE_BYTES, field.LABEL_OPTIONAL),
            ("label", 5, field.TYPE_INT32, field.LABEL_OPTIONAL),
            ("float_data", 6, field.TYPE_FLOAT, field.LABEL_REPEATED),
            ("encoded", 7, field.TYPE_BOOL, field.LABEL_OPTIONAL)]:
        message.field.add(name=name, number=number, type=kind, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("caffe.Datum"))


def _write_caffe_lmdb(path, values):
    lmdb = pytest.importorskip("lmdb")
    env = lmdb.open(str(path), map_size=2 ** 24)
    with env.begin(write=True) as txn:
        for k, value in enumerate(values):
            txn.put(f"{k:0>8d}".encode(), value)
    env.close()


def test_caffe_lmdb_reads_datum_records(tmp_path, log_warnings):
    cv2 = pytest.importorskip("cv2")
    Datum = _datum_class()
    chw = np.random.RandomState(0).randint(0, 256, (3, 2, 4)).astype(np.uint8)
    floats = np.arange(6, dtype=np.float32).reshape(1, 2, 3) / 4
    png = cv2.imencode(".png", chw.transpose(1, 2, 0))[1].tobytes()
    values = [
        Datum(channels=3, height=2, width=4, data=chw.tobytes(), label=7).SerializeToString(),
        Datum(channels=1, height=2, width=3, float_data=floats.ravel(), label=-1)
        .SerializeToString(),
        Datum(data=png, encoded=True, label=3).SerializeToString(),
        b"\x0a\xff",  # field 1 as a truncated length-delimited value
    ]
    _write_caffe_lmdb(tmp_path / "caffe", values)
    df = CaffeLMDB(str(tmp_path / "caffe"), shuffle=False)
    df.reset_state()
    points = list(df)
    assert len(points) == 3 and [p[1] for p in points] == [7, -1, 3]
    np.testing.assert_array_equal(points[0][0], chw.transpose(1, 2, 0))
    assert points[1][0].dtype == np.float32
    np.testing.assert_array_equal(points[1][0], floats.transpose(1, 2, 0))
    np.testing.assert_array_equal(points[2][0], chw.transpose(1, 2, 0))
    assert len(log_warnings) == 1 and "b'00000003'" in log_warnings[0]


def test_lmdb_keys_as_a_format_string(tmp_path):
    _write_caffe_lmdb(tmp_path / "db", [b"a", b"b", b"c"])
    df = LMDBData(str(tmp_path / "db"), shuffle=True, keys="{:0>8d}")
    assert df.keys == [b"00000000", b"00000001", b"00000002"]
    df.reset_state()
    assert sorted(list(df)) == [[b"00000000", b"a"], [b"00000001", b"b"], [b"00000002", b"c"]]
