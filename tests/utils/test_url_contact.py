"""The first contact with a URL's storage has a deadline: an unreachable bucket is an error
naming the URL within TFLOOP_URL_TIMEOUT seconds, not minutes of TensorFlow's silent retries
(issue 44)."""
import time
import urllib.error
import urllib.request

import pytest
from silent_storage_support import silent_gcs
from support import LinearModel, batches, make_regression_data, scaled_timeout

import tfloop
from tfloop.utils import logger
from tfloop.utils.url_contact import DEFAULT_URL_TIMEOUT, check_reachable, url_timeout


def _refusal(url, seconds):
    return (f"{url}: its storage did not answer within {seconds:g} s (TensorFlow's GCS client "
            f"retries for minutes without a word): check the network, the proxy, the URL and "
            f"the credentials, or wait longer with TFLOOP_URL_TIMEOUT=<seconds>.")


@pytest.mark.slow
def test_set_logger_dir_on_a_silent_bucket_fails_within_the_deadline():
    with silent_gcs(1.5) as url:
        start = time.monotonic()
        with pytest.raises(TimeoutError) as raised:
            logger.set_logger_dir(url, action="keep")
        waited = time.monotonic() - start
    assert str(raised.value) == _refusal(url, 1.5)
    assert 1.5 <= waited < 1.5 + scaled_timeout(5)
    assert logger.get_logger_dir() is None


@pytest.mark.slow
def test_a_trainer_with_a_silent_bucket_as_logdir_fails_before_its_first_step():
    x, y = make_regression_data(8)
    with silent_gcs(1) as url:
        trainer = tfloop.SimpleTrainer()
        config = tfloop.TrainConfig(model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)),
                                    max_epoch=1, logdir=url)
        with pytest.raises(TimeoutError, match="its storage did not answer within 1 s"):
            tfloop.launch_train_with_config(config, trainer)
    assert trainer.global_step == 0


def test_a_storage_that_answers_is_asked_once_per_bucket(monkeypatch):
    asked = []

    def answer(opener, request, timeout):
        asked.append((request.full_url, request.get_method(), timeout))
        raise urllib.error.HTTPError(request.full_url, 401, "Unauthorized", {}, None)
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", answer)
    monkeypatch.setenv("TFLOOP_URL_TIMEOUT", "7")
    check_reachable("gs://tfloop-test-answers/run1")
    check_reachable("gs://tfloop-test-answers/run2")
    check_reachable("ram://tfloop-test-contact/run1")
    check_reachable("/a/local/path")
    assert asked == [("https://www.googleapis.com/storage/v1/b/tfloop-test-answers", "HEAD", 7.0)]


def test_an_unknown_host_is_an_answer_left_to_tensorflow(monkeypatch):
    def unknown_host(opener, request, timeout):
        raise urllib.error.URLError(OSError("Name or service not known"))
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", unknown_host)
    check_reachable("gs://tfloop-test-no-dns/run")


@pytest.mark.parametrize("text, seconds", [(None, DEFAULT_URL_TIMEOUT), ("", DEFAULT_URL_TIMEOUT),
                                           ("300", 300.0), ("0.5", 0.5)])
def test_the_deadline_comes_from_the_environment(monkeypatch, text, seconds):
    if text is None:
        monkeypatch.delenv("TFLOOP_URL_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("TFLOOP_URL_TIMEOUT", text)
    assert url_timeout() == seconds


@pytest.mark.parametrize("text", ["soon", "0", "-3", "inf", "nan"])
def test_a_deadline_that_is_no_number_of_seconds_is_refused(monkeypatch, text):
    monkeypatch.setenv("TFLOOP_URL_TIMEOUT", text)
    with pytest.raises(ValueError, match=f"TFLOOP_URL_TIMEOUT must be a number of seconds > 0, "
                                         f"got '{text}'; unset it for the default 60."):
        url_timeout()
