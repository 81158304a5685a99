"""The TCP sockets this process listens on, from ``/proc`` (Linux): which addresses a training
opened to the network."""
import ipaddress
import os

_LISTEN = "0A"


def _inodes_of_this_process():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:            # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _address(hex_address):
    """``/proc/net/tcp*``'s ``ADDR:PORT`` (little-endian 32-bit words) as (ip, port)."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words), int(port, 16)


def listening_addresses():
    """``{(ip, port)}`` of every TCP socket of this process in the listening state."""
    mine = _inodes_of_this_process()
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == _LISTEN and fields[9] in mine:
                    found.add(_address(fields[1]))
    return found


def is_loopback(ip):
    """Whether ``ip`` is a loopback address (also IPv4 loopback mapped into IPv6)."""
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def non_loopback_listeners():
    """``{(ip, port)}`` this process listens on that another machine could reach."""
    return {(ip, port) for ip, port in listening_addresses() if not is_loopback(ip)}
