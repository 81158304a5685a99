"""HyperParam, GraphVarParam, ObjAttrParam and the HyperParamSetter base: finding, setting and
reading parameters, and what a setter does around a real training run."""
import pytest
from support import LRModel, LRRecorder, train_linear

import tfloop
from tfloop.compat import tf, tfv1


class ScalarLog(tfloop.MonitorBase):
    def __init__(self):
        self.seen = []

    def process_scalar(self, name, value):
        self.seen.append((self.epoch_num, self.global_step, name, value))


class Halve(tfloop.HyperParamSetter):
    """0.2 halved after every epoch, but never below 0.05."""

    def _get_value_to_set(self):
        return max(0.2 * 0.5 ** self.epoch_num, 0.05)


@pytest.fixture
def graph_with_lr():
    graph = tf.Graph()
    with graph.as_default():
        with tfv1.variable_scope("optimizer"):
            tfv1.get_variable("learning_rate", initializer=0.1, trainable=False)
        tfv1.get_variable("momentum", initializer=0.9, trainable=False)
        tfv1.get_variable("steps", initializer=3, trainable=False)
        tf.constant(1.0, name="not_a_var")
    return graph


@pytest.mark.parametrize("name", ["learning_rate", "learning_rate:0", "optimizer/learning_rate"])
def test_graph_var_param_finds_the_variable_also_in_a_scope(graph_with_lr, name):
    param = tfloop.GraphVarParam(name)
    with graph_with_lr.as_default():
        param.setup_graph()
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            assert param.get_value() == pytest.approx(0.1)
            param.set_value(0.25)
            assert param.get_value() == pytest.approx(0.25)
            assert sess.run(param.var) == pytest.approx(0.25)
    assert param.var.name == "optimizer/learning_rate:0"
    assert param.readable_name == name.split(":")[0]


def test_graph_var_param_sets_integer_variables(graph_with_lr):
    param = tfloop.GraphVarParam("steps")
    with graph_with_lr.as_default():
        param.setup_graph()
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            param.set_value(7)
            assert param.get_value() == 7


@pytest.mark.parametrize("name,error,fragment", [
    ("learning_rat", KeyError, "No variable named 'learning_rat:0' in the graph. Close matches: "
                               "optimizer/learning_rate:0"),
    ("not_a_var", KeyError, "A hyper-parameter must be a variable"),
])
def test_unknown_variable_is_an_error_with_close_matches(graph_with_lr, name, error, fragment):
    with graph_with_lr.as_default(), pytest.raises(error) as info:
        tfloop.GraphVarParam(name).setup_graph()
    assert fragment in str(info.value)


def test_ambiguous_and_mismatched_variables_are_refused(graph_with_lr):
    with graph_with_lr.as_default():
        with tfv1.variable_scope("tower1"):
            tfv1.get_variable("learning_rate", initializer=0.1, trainable=False)
        with pytest.raises(ValueError, match="Several variables end with 'learning_rate:0': "
                                             "optimizer/learning_rate:0, tower1/learning_rate:0"):
            tfloop.GraphVarParam("learning_rate").setup_graph()
        with pytest.raises(ValueError, match=r"has shape \(\), not the shape \(2,\) given"):
            tfloop.GraphVarParam("momentum", shape=(2,)).setup_graph()


def test_bad_values_and_missing_session_are_clear_errors(graph_with_lr):
    param = tfloop.GraphVarParam("momentum")
    with graph_with_lr.as_default():
        param.setup_graph()
        with pytest.raises(RuntimeError, match="needs a default session"):
            param.set_value(0.5)
        with tfv1.Session():
            with pytest.raises(ValueError, match=r"cannot take the value 'fast': it needs a "
                                                 r"float32 of shape \(\)"):
                param.set_value("fast")
            with pytest.raises(ValueError, match=r"cannot take the value \[1.0, 2.0\]"):
                param.set_value([1.0, 2.0])
    with pytest.raises(ValueError, match="needs a variable name"):
        tfloop.GraphVarParam("")


def test_setter_sets_at_start_and_on_change_and_puts_to_monitors():
    setter, recorder, log = Halve("learning_rate"), LRRecorder(), ScalarLog()
    trainer = train_linear([setter, recorder], model=LRModel(), max_epoch=4, monitors=[log])
    assert isinstance(setter.param, tfloop.GraphVarParam)
    assert recorder.per_epoch() == pytest.approx([0.2, 0.1, 0.05, 0.05])
    # each epoch's start puts the value that epoch trains with, changed or not
    assert log.seen == [(1, 0, "learning_rate", pytest.approx(0.2)),
                        (2, 3, "learning_rate", pytest.approx(0.1)),
                        (3, 6, "learning_rate", pytest.approx(0.05)),
                        (4, 9, "learning_rate", pytest.approx(0.05))]
    assert setter.last_value == pytest.approx(0.05)
    assert setter not in trainer.run_callbacks


def test_scoped_variable_is_found_by_its_short_name():
    setter, recorder = Halve("learning_rate"), LRRecorder("opt/learning_rate:0")
    train_linear([setter, recorder], model=LRModel(scope="opt"), max_epoch=2)
    assert setter.param.var.name == "opt/learning_rate:0"
    assert recorder.per_epoch() == pytest.approx([0.2, 0.1])


def test_unknown_name_fails_at_setup_before_any_step():
    recorder = LRRecorder()
    with pytest.raises(KeyError, match="No variable named 'learnin_rate:0'.*learning_rate:0"):
        train_linear([Halve("learnin_rate"), recorder], model=LRModel(), max_epoch=1)
    assert recorder.lrs == []


def test_setter_state_round_trips():
    setter = Halve("learning_rate")
    train_linear([setter], model=LRModel(), max_epoch=1)
    state = setter.state_dict()
    assert state == {"last_value": pytest.approx(0.1)}
    resumed = Halve("learning_rate")
    resumed.load_state_dict(state)
    assert resumed.last_value == pytest.approx(0.1)


class Augmentor:
    rotation = 10.0


def test_obj_attr_param_sets_a_python_attribute_in_training():
    aug = Augmentor()
    log = ScalarLog()
    setter = tfloop.HyperParamSetterWithFunc(
        tfloop.ObjAttrParam(aug, "rotation", readable_name="rot"), lambda epoch, v: v + 1.0)
    train_linear([setter], max_epoch=2, monitors=[log])
    assert aug.rotation == 13.0
    # 13.0, set after the last epoch, trains no epoch and is not put
    assert log.seen == [(1, 0, "rot", 11.0), (2, 3, "rot", 12.0)]
    assert str(setter) == "HyperParamSetterWithFunc('rot')"


def test_obj_attr_param_missing_attribute_fails_at_setup():
    setter = tfloop.HyperParamSetterWithFunc(tfloop.ObjAttrParam(Augmentor(), "scale"),
                                             lambda epoch, v: v)
    with pytest.raises(AttributeError, match="has no attribute 'scale' to set"):
        train_linear([setter], max_epoch=1)


def test_param_must_be_a_name_or_a_hyper_param():
    with pytest.raises(TypeError, match="param must be a variable name .* got 0.1"):
        Halve(0.1)


class Rotation(tfloop.HyperParam):
    """Augmentor.rotation, which takes angles from 0 to 90 only."""

    readable_name = "rotation"

    def __init__(self, augmentor):
        self.augmentor = augmentor

    def check_value(self, value):
        if not 0 <= value <= 90:
            raise ValueError(f"rotation must be within [0, 90], got {value!r}.")
        return value

    def set_value(self, value):
        self.augmentor.rotation = value

    def get_value(self):
        return self.augmentor.rotation


def test_the_base_param_takes_any_value_and_every_setter_asks_a_params_own_check(
        logdir, log_warnings):
    assert tfloop.ObjAttrParam(Augmentor(), "rotation").check_value("any") == "any"
    with pytest.raises(ValueError, match=r"schedule entry 1 \(2, 120.0\): rotation must be within"):
        train_linear([tfloop.ScheduledHyperParamSetter(Rotation(Augmentor()),
                                                       [(0, 10), (2, 120)])], max_epoch=1)
    augmentor = Augmentor()
    with pytest.raises(ValueError, match=r"func\(2, 90.0\) returned 270.0, which is refused: "
                                         "rotation must be within"):
        train_linear([tfloop.HyperParamSetterWithFunc(Rotation(augmentor),
                                                      lambda epoch, v: v * 3)], max_epoch=3)
    assert augmentor.rotation == 90.0             # 10 -> 30 (start) -> 90 (after epoch 1)
    augmentor = Augmentor()
    with open(f"{logdir}/hyper.txt", "w") as f:
        f.write("rotation:100\n")
    train_linear([tfloop.HumanHyperParamSetter(Rotation(augmentor))], max_epoch=1)
    assert augmentor.rotation == 10.0
    assert [w for w in log_warnings if "line 'rotation:100' ignored: rotation must be within"]
