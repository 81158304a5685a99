"""What an exception that ends a training says about how it ended, from the exit status it gives
the process: ``sys.exit()`` and ``sys.exit(0)`` end a program cleanly."""

__all__ = ["is_clean_exit"]


def is_clean_exit(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``SystemExit`` that ends the process with exit status 0: its code is
    None, 0 or False (``sys.exit()``, ``sys.exit(0)``, and how Ray Tune ends a trial from inside
    ``tune.report``). A training it ends stopped cleanly; a nonzero code is a failure.

    Example:
        >>> is_clean_exit(SystemExit(0)), is_clean_exit(SystemExit(2))
        (True, False)
    """
    if not isinstance(exc, SystemExit):
        return False
    code = exc.code
    return code is None or (isinstance(code, int) and code == 0)
