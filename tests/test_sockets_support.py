"""sockets_support sees what this process listens on, loopback or not, IPv4 and IPv6."""
import ipaddress
import socket

import pytest
from sockets_support import is_loopback, listening_addresses, non_loopback_listeners


@pytest.mark.parametrize("family, host, reachable", [
    (socket.AF_INET, "127.0.0.1", False), (socket.AF_INET, "0.0.0.0", True),
    (socket.AF_INET6, "::1", False), (socket.AF_INET6, "::", True),
])
def test_a_listening_socket_is_seen_with_its_address(family, host, reachable):
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert (ipaddress.ip_address(host), port) in listening_addresses()
        assert ((ipaddress.ip_address(host), port) in non_loopback_listeners()) == reachable
    assert (ipaddress.ip_address(host), port) not in listening_addresses()


def test_a_socket_that_does_not_listen_is_not_seen():
    with socket.socket() as bound:
        bound.bind(("0.0.0.0", 0))
        assert (ipaddress.ip_address("0.0.0.0"), bound.getsockname()[1]) not in \
            listening_addresses()


@pytest.mark.parametrize("address, loopback", [
    ("127.0.0.1", True), ("127.3.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("::ffff:10.0.0.5", False),
])
def test_loopback_addresses(address, loopback):
    assert is_loopback(ipaddress.ip_address(address)) == loopback
