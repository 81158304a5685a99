"""The devices of data-parallel towers: what ``gpus=`` means, and whether a session has them."""
from tfloop.compat import tf

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
    if isinstance(gpus, bool) or not isinstance(gpus, (int, list, tuple)):
        raise TypeError("gpus must be an int, a list of GPU indices or a list of device strings, "
                        "got {!r}.".format(gpus))
    if isinstance(gpus, int):
        if gpus < 1:
            raise ValueError("gpus must be >= 1, got {}.".format(gpus))
        available = _gpu_count()
        if available == 0:
            return ["/device:CPU:{}".format(i) for i in range(gpus)]
        if gpus > available:
            raise ValueError("gpus={} but this machine has {} GPU(s).".format(gpus, available))
        return ["/device:GPU:{}".format(i) for i in range(gpus)]
    if not gpus:
        raise ValueError("gpus is an empty list: give at least one GPU index or device.")
    devices = []
    for item in gpus:
        if isinstance(item, int) and not isinstance(item, bool):
            available = _gpu_count()
            if not 0 <= item < available:
                raise ValueError("GPU {} does not exist: this machine has {} GPU(s) (to use "
                                 "logical CPU devices, give gpus as an int or as '/cpu:i' "
                                 "strings).".format(item, available))
            devices.append("/device:GPU:{}".format(item))
        elif isinstance(item, str):
            try:
                spec = tf.DeviceSpec.from_string(item)
            except ValueError as e:
                raise ValueError("Bad device string {!r} in gpus: {}".format(item, e)) from None
            if spec.device_type is None:
                raise ValueError("Device {!r} in gpus names no device type: use e.g. '/gpu:0' or "
                                 "'/cpu:1'.".format(item))
            devices.append(spec.to_string())
        else:
            raise TypeError("gpus items must be GPU indices or device strings, got {!r}.".format(
                item))
    duplicates = sorted({d for d in devices if devices.count(d) > 1})
    if duplicates:
        raise ValueError("gpus lists {} more than once: every tower needs its own device."
                         .format(", ".join(duplicates)))
    return devices


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
                        "device_count={{'CPU': {}}}) (the trainer's default session config has "
                        "it), a worker's server create_server(..., num_cpu_devices={})."
                        .format(index + 1, index + 1))
            raise ValueError("{}: tower device {} is not in the session, which has {}.{}".format(
                who, device, ", ".join(have), hint))
