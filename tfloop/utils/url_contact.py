"""The first contact with a cloud storage, within a deadline.

TensorFlow's GCS client retries a storage that does not answer for minutes without a word (about
6 minutes for one call), so a run pointed at an unreachable ``gs://`` bucket would seem to hang
before its first step. The first time a process uses a bucket, tfloop sends one request to the
endpoint TensorFlow's client uses (``https://www.googleapis.com/storage/v1/``, through the same
proxy settings, ``https_proxy``) and waits at most :func:`url_timeout` seconds
(``$TFLOOP_URL_TIMEOUT``, default 60) for any answer; without one, the run stops with an error
naming the URL. Any answer will do (an HTTP error, a refused connection, an unknown host): what
TensorFlow then makes of the bucket, it reports itself. The request is Python's own, with a
socket timeout, not a call into TensorFlow, which could not be abandoned cleanly: a thread left
inside TensorFlow's retries aborts the interpreter when it exits.

Other schemes are left to their own clients: ``ram://`` is in memory, and the plugins of
``s3://``/``hdfs://`` have timeouts of their own.

Example:
    >>> check_reachable("gs://bucket/run")    # at once when it answers; TimeoutError otherwise
"""
import os
import threading
import urllib.error
import urllib.parse
import urllib.request

from tfloop.utils import files

__all__ = ["check_reachable", "url_timeout", "URL_TIMEOUT_ENV", "DEFAULT_URL_TIMEOUT",
           "GCS_ENDPOINT"]

URL_TIMEOUT_ENV = "TFLOOP_URL_TIMEOUT"
DEFAULT_URL_TIMEOUT = 60.0
# Where TensorFlow's GCS client sends its requests (compiled into TensorFlow).
GCS_ENDPOINT = "https://www.googleapis.com/storage/v1/"

_reached = set()
_reached_lock = threading.Lock()


def url_timeout():
    """The deadline of :func:`check_reachable` in seconds: ``$TFLOOP_URL_TIMEOUT`` if set, else
    :data:`DEFAULT_URL_TIMEOUT`.

    Raises:
        ValueError: the variable is not a number of seconds > 0.

    Example:
        >>> os.environ["TFLOOP_URL_TIMEOUT"] = "300"; url_timeout()
        300.0
    """
    text = os.environ.get(URL_TIMEOUT_ENV, "")
    if not text.strip():
        return DEFAULT_URL_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{URL_TIMEOUT_ENV} must be a number of seconds > 0, got {text!r}; "
                         f"unset it for the default {DEFAULT_URL_TIMEOUT:g}.")
    return seconds


def _ask(url, timeout, answered):
    """One HEAD request to ``url``; sets ``answered`` on any answer (an error is one too)."""
    try:
        # A new opener reads the proxy settings of now (urlopen's keeps those of its first use).
        with urllib.request.build_opener().open(urllib.request.Request(url, method="HEAD"),
                                                timeout=timeout):
            pass
    except urllib.error.HTTPError:
        pass
    except (urllib.error.URLError, OSError, ValueError) as e:
        if isinstance(getattr(e, "reason", e), TimeoutError):
            return
    answered.set()


def check_reachable(path):
    """Make sure the storage of ``path`` answers, if it is a ``gs://`` URL whose bucket was not
    reached before in this process (nothing for any other path).

    Raises:
        TimeoutError: no answer within :func:`url_timeout` seconds; the message names the URL,
            the deadline and how to wait longer.
    """
    path = os.fspath(path)
    if files.scheme_of(path) != "gs":
        return
    bucket = path[len("gs://"):].split("/", 1)[0]
    with _reached_lock:
        if bucket in _reached:
            return
    timeout = url_timeout()
    answered = threading.Event()
    url = GCS_ENDPOINT + "b/" + urllib.parse.quote(bucket, safe="")
    threading.Thread(target=_ask, args=(url, timeout, answered), daemon=True,
                     name=f"tfloop first contact with gs://{bucket}").start()
    if not answered.wait(timeout):
        raise TimeoutError(
            f"{path}: its storage did not answer within {timeout:g} s (TensorFlow's GCS client "
            f"retries for minutes without a word): check the network, the proxy, the URL and "
            f"the credentials, or wait longer with {URL_TIMEOUT_ENV}=<seconds>.")
    with _reached_lock:
        _reached.add(bucket)
