"""Tests wait for a condition, never for a fixed time: a fixed sleep is too short on a loaded
2-core CI machine and wasted time everywhere else. The deadline only bounds a failure."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float = 40.0, what: str = "condition", poll: float = 0.1) -> T:
    """The first truthy value `condition()` returns; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(poll)
