"""The names MLflow accepts for metrics and params, and legal forms of the names it refuses."""
import posixpath
import re

__all__ = ["legal_key", "key_problem", "check_params"]

MAX_KEY_LENGTH = 250  # MLflow's longest metric or param name
_ILLEGAL = re.compile(r"[^/\w.\- :]")  # MLflow allows word characters, / . - space and :


def _not_a_unique_path(key):
    """Whether MLflow refuses ``key`` as a path that resolves to another name (``a//b``, ``/a``)."""
    norm = posixpath.normpath(key)
    return norm != key or norm == "." or norm.startswith(("..", "/"))


def key_problem(key):
    """Why MLflow refuses ``key`` as a metric or param name, or None when it accepts it."""
    if not key:
        return "it is empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"it is longer than {MAX_KEY_LENGTH} characters"
    bad = sorted(set(_ILLEGAL.findall(key)))
    if bad:
        return f"it contains {' '.join(bad)} (MLflow allows letters, digits, _ - . / : and spaces)"
    if _not_a_unique_path(key):
        return "it resolves to another path (MLflow treats names as paths)"
    return None


def legal_key(key):
    """``key`` as MLflow accepts it: each refused character made ``_``, slashes that make it a
    path of another name made ``_`` too; None when no such form exists (too long, or only dots).

    Example:
        >>> legal_key("PeakMemory(MB)/gpu:0")
        'PeakMemory_MB_/gpu:0'
    """
    legal = _ILLEGAL.sub("_", key)
    if legal and _not_a_unique_path(legal):
        legal = legal.replace("/", "_")
    return legal if key_problem(legal) is None else None


def check_params(params):
    """``params`` as MLflow logs them (a dict of names to str values); a name MLflow would refuse
    is a ``ValueError`` naming it and a legal form."""
    if params is None:
        return {}
    if not isinstance(params, dict) or not all(isinstance(k, str) and k for k in params):
        raise TypeError("MLflowMonitor: params must be a dict of str names to values, e.g. "
                        f"{{'lr': 0.01}}, got {params!r}.")
    for name in params:
        problem = key_problem(name)
        if problem is not None:
            legal = legal_key(name)
            fix = f"rename it, e.g. {legal!r}" if legal else "give it a shorter name"
            raise ValueError(f"MLflowMonitor: MLflow refuses the param name {name!r}: {problem}; "
                             f"{fix}.")
    return {k: str(v) for k, v in params.items()}
