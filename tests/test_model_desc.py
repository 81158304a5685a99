"""ModelDesc.training: what build_graph sees in training and inference towers."""
import pytest
from support import LinearModel

from tfloop import TowerContext
from tfloop.compat import tf


def test_training_follows_the_tower_context():
    model = LinearModel()
    with tf.Graph().as_default():
        with TowerContext("", is_training=True):
            assert model.training is True
        with TowerContext("pred", is_training=False):
            assert model.training is False
        with pytest.raises(RuntimeError, match="only known inside build_graph"):
            model.training  # noqa: B018
