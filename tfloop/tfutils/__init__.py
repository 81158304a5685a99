"""Graph-side helpers: towers, name lookup, sessions, session initializers, summaries."""
from tfloop.tfutils import (
    gradproc,
    optimizer,
    scope_utils,
    sesscreate,
    sessinit,
    summary,
    tower,
    varreplace,
)
from tfloop.tfutils.argscope import (
    argscope,
    enable_argscope_for_function,
    enable_argscope_for_module,
    get_arg_scope,
)
from tfloop.tfutils.common import (
    NameFetchSession,
    UnknownNameError,
    get_global_step_value,
    get_global_step_var,
    get_op_or_tensor_by_name,
    get_op_tensor_name,
    get_tensors_by_names,
    get_tf_version_tuple,
)
from tfloop.tfutils.hooked_session import HookedSession
from tfloop.tfutils.loss_scale import LossScaleOptimizer
from tfloop.tfutils.model_utils import describe_trainable_vars
from tfloop.tfutils.sesscreate import (
    NewSessionCreator,
    default_session_config,
    get_default_sess_config,
)
from tfloop.tfutils.sessinit import (
    ChainInit,
    DictRestore,
    JustCurrentSession,
    SaverRestore,
    SaverRestoreRelaxed,
    SessionInit,
    SmartInit,
    get_model_loader,
)
from tfloop.tfutils.skip_gate import SkipUpdateGate
from tfloop.tfutils.summary import (
    MOVING_SUMMARY_OPS_KEY,
    add_activation_summary,
    add_cost_summary,
    add_moving_summary,
    add_param_summary,
    add_tensor_summary,
    average_finite_values_only,
)
from tfloop.tfutils.tower import (
    TowerContext,
    TowerFunc,
    TowerTensorHandle,
    TowerTensorHandles,
    get_current_tower_context,
)
from tfloop.tfutils.varmanip import get_checkpoint_path, load_chkpt_vars
from tfloop.utils.env_info import collect_env_info

__all__ = [
    "LossScaleOptimizer",
    "UnknownNameError", "get_global_step_value", "get_global_step_var", "get_op_or_tensor_by_name",
    "get_op_tensor_name", "get_tensors_by_names", "NameFetchSession", "HookedSession",
    "describe_trainable_vars", "NewSessionCreator",
    "default_session_config", "JustCurrentSession", "SessionInit", "TowerContext", "TowerFunc",
    "TowerTensorHandle", "TowerTensorHandles", "get_current_tower_context",
    "MOVING_SUMMARY_OPS_KEY", "add_cost_summary", "add_moving_summary", "add_param_summary",
    "add_tensor_summary", "average_finite_values_only",
    "ChainInit", "DictRestore", "SaverRestore", "SaverRestoreRelaxed", "SmartInit",
    "get_model_loader", "get_checkpoint_path", "load_chkpt_vars", "SkipUpdateGate",
    "add_activation_summary",
    "argscope", "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module",
    "gradproc", "optimizer", "scope_utils", "sesscreate", "sessinit", "summary", "tower",
    "varreplace", "get_default_sess_config", "get_tf_version_tuple", "collect_env_info",
]
