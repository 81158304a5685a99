"""The devices of data-parallel towers: what ``gpus=`` and ``mode=`` mean, and whether a session
has the devices."""
from tfloop.compat import tf
from tfloop.tfutils.allreduce import ALLREDUCE_MODES
from tfloop.utils import logger
from tfloop.utils.checks import is_int, repeated

__all__ = ["resolve_devices", "check_session_devices", "device_key", "allreduce_mode_for"]

# tensorpack's SyncMultiGPUTrainerReplicated modes TensorFlow 2 has no op for: what each did.
_TENSORPACK_MODES = {
    "gpu": "sums on the towers' devices",
    "cpu": "sums on the CPU (tensorpack itself used 'gpu' on TensorFlow 2)",
    "hierarchical": "a hierarchical all-reduce for 8 GPUs",
}


def _gpu_count():
    return len(tf.config.list_physical_devices("GPU"))


def resolve_devices(gpus):
    """Turn the ``gpus`` argument of a data-parallel trainer into a list of device strings.

    Args:
        gpus: an int N (the first N GPUs; N logical CPU devices on a machine without GPUs), a list
            of GPU indices (on a machine without GPUs, GPU i is logical CPU device i, as
            tensorpack's soft placement put such towers on the CPU; said in the log), or a list of
            device strings (``"/gpu:0"``, ``"/cpu:1"``).

    Returns:
        list[str]: distinct device strings such as ``"/device:GPU:0"``.

    Example:
        >>> resolve_devices(2)            # ["/device:GPU:0", "/device:GPU:1"], or CPU:0, CPU:1
    """
    if not (is_int(gpus) or isinstance(gpus, (list, tuple))):
        raise TypeError("gpus must be an int, a list of GPU indices or a list of device strings, "
                        f"got {gpus!r}.")
    if is_int(gpus):
        return _first_devices(int(gpus))
    if not gpus:
        raise ValueError("gpus is an empty list: give at least one GPU index or device.")
    if _gpu_count() == 0 and any(is_int(item) for item in gpus):
        cpus = [f"/cpu:{item}" if is_int(item) and item >= 0 else item for item in gpus]
        logger.info(f"gpus={list(gpus)!r}: this machine has no GPU, so the towers run on logical "
                    f"CPU devices ({', '.join(map(str, cpus))}), as tensorpack's soft placement "
                    "ran them on the CPU.")
        gpus = cpus
    devices = [_device_of(item) for item in gpus]
    duplicates = repeated(devices)
    if duplicates:
        raise ValueError(f"gpus lists {', '.join(duplicates)} more than once: every tower needs "
                         "its own device.")
    return devices


def _first_devices(count):
    """The first ``count`` GPUs, or ``count`` logical CPU devices on a machine without GPUs."""
    if count < 1:
        raise ValueError(f"gpus must be >= 1, got {count}.")
    available = _gpu_count()
    if available == 0:
        return [f"/device:CPU:{i}" for i in range(count)]
    if count > available:
        raise ValueError(f"gpus={count} but this machine has {available} GPU(s).")
    return [f"/device:GPU:{i}" for i in range(count)]


def _device_of(item):
    """The device string of one item of a ``gpus`` list: a GPU index or a device string."""
    if is_int(item):
        available = _gpu_count()
        if not 0 <= item < available:
            raise ValueError(f"GPU {item} does not exist: this machine has {available} GPU(s) (to "
                             "use logical CPU devices, give gpus as an int or as '/cpu:i' "
                             "strings).")
        return f"/device:GPU:{item}"
    if not isinstance(item, str):
        raise TypeError(f"gpus items must be GPU indices or device strings, got {item!r}.")
    try:
        spec = tf.DeviceSpec.from_string(item)
    except ValueError as e:
        raise ValueError(f"Bad device string {item!r} in gpus: {e}") from None
    if spec.device_type is None:
        raise ValueError(f"Device {item!r} in gpus names no device type: use e.g. '/gpu:0' or "
                         "'/cpu:1'.")
    return spec.to_string()


def allreduce_mode_for(mode, devices, who):
    """The all-reduce of :data:`ALLREDUCE_MODES` that ``mode`` means on ``devices``.

    None is ``"nccl"`` on two or more GPUs and ``"add_n"`` otherwise. tensorpack's names are
    taken in any case: ``"gpu"`` and ``"cpu"`` (sums, as in-graph ``add_n``) are ``"add_n"``,
    ``"hierarchical"`` is the default, and ``"nccl"`` on towers that are not all GPUs (where NCCL
    does not run) is ``"add_n"``; a mapped mode is logged once, here.

    Raises:
        ValueError: ``mode`` is none of those.

    Example:
        >>> allreduce_mode_for("nccl", ["/device:CPU:0", "/device:CPU:1"], "Trainer")
        'add_n'
    """
    all_gpus = all(device_key(d)[2] == "GPU" for d in devices)
    default = "nccl" if all_gpus and len(devices) > 1 else "add_n"
    if mode is None:
        return default
    asked = mode.lower() if isinstance(mode, str) else mode
    if asked in ALLREDUCE_MODES and (asked != "nccl" or all_gpus):
        return asked
    if asked == "nccl":
        meant = "NCCL, which runs on GPUs only"
    elif asked in _TENSORPACK_MODES:
        meant = f"tensorpack's {_TENSORPACK_MODES[asked]}"
    else:
        raise ValueError(f"{who}: unknown mode {mode!r}: use one of "
                         f"{', '.join(ALLREDUCE_MODES)}, tensorpack's "
                         f"{', '.join(_TENSORPACK_MODES)}, or None.")
    chosen = default if asked == "hierarchical" else "add_n"
    logger.info(f"{who}: mode={mode!r} ({meant}) all-reduces with {chosen!r} on "
                f"{', '.join(devices)}: the all-reduce TensorFlow 2 offers there.")
    return chosen


def device_key(name):
    """``(job, task, device type in capitals, device index)`` of a device string."""
    spec = tf.DeviceSpec.from_string(name)
    return (spec.job, spec.task, (spec.device_type or "").upper(), spec.device_index or 0)


def check_session_devices(sess, devices, who):
    """Raise a clear error when the session lacks one of the towers' devices."""
    have = [d.name for d in sess.list_devices()]
    have_keys = [device_key(d) for d in have]
    for device in devices:
        job, task, dtype, index = device_key(device)
        if not any(k[2] == dtype and k[3] == index and (job is None or k[0] == job) and
                   (task is None or k[1] == task) for k in have_keys):
            hint = ""
            if dtype == "CPU":
                hint = (" For logical CPU devices, the session needs tf.compat.v1.ConfigProto("
                        f"device_count={{'CPU': {index + 1}}}) (the trainer's default session "
                        "config has it), a worker's server create_server(..., "
                        f"num_cpu_devices={index + 1}).")
            raise ValueError(f"{who}: tower device {device} is not in the session, which has "
                             f"{', '.join(have)}.{hint}")
