"""Loopback ports for the servers tests start (Kafka, PostgreSQL, Prometheus, the console, ...).

A port the kernel hands out for `bind(("127.0.0.1", 0))` comes from the ephemeral range, the
range every outgoing connection's source port is drawn from too. Between the probe and the
server's own bind, a client in another test process (CI runs two pytest processes side by side,
each starting brokers, databases and Spark) can take it, and the server exits on start. These
ports come from below the ephemeral range instead, where only servers bind, and each is claimed
by a lock held for the life of the process that took it, so no two test processes hand out the
same port.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

HOST = "127.0.0.1"
LOWEST = 20000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
CLAIMS = Path(tempfile.gettempdir()) / "streamops-test-ports"
ATTEMPTS = 1000

_held: list[int] = []
"""Descriptors of the claimed ports' lock files, open until the process exits (which frees the locks)."""
_pick = random.SystemRandom()


def _first_ephemeral() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port no server listens on, outside the ephemeral range, that no other test process holds."""
    CLAIMS.mkdir(exist_ok=True)
    highest = max(LOWEST + 1000, _first_ephemeral())
    for _ in range(ATTEMPTS):
        port = _pick.randrange(LOWEST, highest)
        claim = os.open(CLAIMS / str(port), os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(claim)
            continue
        if _bindable(port):
            _held.append(claim)
            return port
        os.close(claim)
    raise RuntimeError(f"no free loopback port between {LOWEST} and {highest} after {ATTEMPTS} tries")
