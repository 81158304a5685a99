"""A cloud storage that never answers, without network: a listener on 127.0.0.1 that accepts
connections and stays silent, made the HTTPS proxy of TensorFlow's GCS client (libcurl reads
``https_proxy``), so that a ``gs://`` call waits as it does when a bucket's host drops packets."""
import contextlib
import os
import socket
import threading
import uuid

_PROXY_VARIABLES = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy",
                    "NO_PROXY")


@contextlib.contextmanager
def silent_gcs(timeout_seconds, bucket=None):
    """Within the block, ``gs://`` calls hang and tfloop's first-contact deadline is
    ``timeout_seconds``; yields the URL ``gs://<bucket>/run`` (by default a bucket never
    contacted before). The listener and the environment are restored on exit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    saved = {name: os.environ.get(name) for name in _PROXY_VARIABLES + ("TFLOOP_URL_TIMEOUT",)}
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in _PROXY_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(https_proxy=proxy, HTTPS_PROXY=proxy,
                      TFLOOP_URL_TIMEOUT=str(timeout_seconds))
    try:
        yield f"gs://{bucket or 'tfloop-test-silent-' + uuid.uuid4().hex[:12]}/run"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        stop.set()
        listener.close()
        for connection in accepted:
            connection.close()
