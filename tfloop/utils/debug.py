"""tensorpack's debugging helper: print every Python function call."""
import sys

__all__ = ["enable_call_trace"]


def enable_call_trace():
    """From now on, print every Python function call of this thread with where it was made:
    ``Call to `f` on line <file>:<line> from <file>:<line>``. ``sys.settrace(None)`` stops it.

    Example:
        >>> enable_call_trace(); train(); sys.settrace(None)
    """
    def trace(frame, event, arg):
        if event != "call" or frame.f_code.co_name in ("write", "print"):
            return None
        caller = frame.f_back
        if caller is not None:
            print(f"Call to `{frame.f_code.co_name}` on line {frame.f_code.co_filename}:"
                  f"{frame.f_lineno} from {caller.f_code.co_filename}:{caller.f_lineno}")
        return None

    sys.settrace(trace)
