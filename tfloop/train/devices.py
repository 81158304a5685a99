"""The devices of data-parallel towers: what ``gpus=`` means, and whether a session has them."""
from tfloop.compat import tf
from tfloop.utils.checks import is_int, repeated

__all__ = ["resolve_devices", "check_session_devices", "device_key"]


def _gpu_count():
    return len(tf.config.list_physical_devices("GPU"))


def resolve_devices(gpus):
    """Turn the ``gpus`` argument of a data-parallel trainer into a list of device strings.

    Args:
        gpus: an int N (the first N GPUs; N logical CPU devices on a machine without GPUs), a list
            of GPU indices, or a list of device strings (``"/gpu:0"``, ``"/cpu:1"``).

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
