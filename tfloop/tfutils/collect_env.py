"""tensorpack's environment report, at its path: :func:`collect_env_info` and the build
information of TensorFlow."""
from tfloop.compat import tf
from tfloop.utils.env_info import collect_env_info

__all__ = ["collect_env_info", "parse_TF_build_info"]


def parse_TF_build_info():  # noqa: N802  (tensorpack's name)
    """``{"TF built with CUDA": ..., "TF built with CUDNN": ..., "TF compute capabilities":
    ...}``: what this TensorFlow build says about CUDA (nothing for a CPU build).

    Example:
        >>> parse_TF_build_info().get("TF built with CUDA")
    """
    info = tf.sysconfig.get_build_info()
    found = {}
    if "cuda_version" in info:
        found["TF built with CUDA"] = info["cuda_version"]
    if "cudnn_version" in info:
        found["TF built with CUDNN"] = info["cudnn_version"]
    if "cuda_compute_capabilities" in info:
        found["TF compute capabilities"] = ",".join(
            c.replace("compute_", "") for c in info["cuda_compute_capabilities"])
    return found
