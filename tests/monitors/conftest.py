import logging

import pytest


class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append((record.levelname, record.getMessage()))


@pytest.fixture
def log_messages():
    """Every (levelname, message) the tfloop logger emits during the test."""
    handler = _ListHandler()
    tfloop_logger = logging.getLogger("tfloop")
    tfloop_logger.addHandler(handler)
    yield handler.messages
    tfloop_logger.removeHandler(handler)
