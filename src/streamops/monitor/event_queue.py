"""The bounded hand-off between Spark's listener bus and the monitor's worker thread.

Spark drops listener events when a listener is slow, so callbacks only `offer` here and never
wait: when the queue is full the event is counted as dropped (and exported) instead of blocking
the bus. Control requests (flush) wait for room, since they come from the user's thread.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Union

from streamops.monitor.progress_event import EventKind


@dataclass(frozen=True)
class RawEvent:
    """A listener event as the JVM gave it: parsed later, on the worker thread."""

    kind: EventKind
    json: str
    received_at: float


@dataclass(frozen=True)
class FlushRequest:
    """Asks the worker to write everything queued before it; `done` is set when written."""

    done: threading.Event = field(default_factory=threading.Event)


QueueItem = Union[RawEvent, FlushRequest]


class EventQueue:
    def __init__(self, maxsize: int) -> None:
        if maxsize <= 0:
            raise ValueError(f"queue_size must be positive, got {maxsize}")
        self._queue: queue.Queue[QueueItem] = queue.Queue(maxsize)
        self._dropped = 0
        self._lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return self._dropped

    def qsize(self) -> int:
        return self._queue.qsize()

    def offer(self, item: RawEvent) -> bool:
        """Enqueue without waiting; False (and one more dropped event) when full."""
        try:
            self._queue.put_nowait(item)
            return True
        except queue.Full:
            with self._lock:
                self._dropped += 1
            return False

    def put_control(self, item: FlushRequest, timeout: float) -> None:
        self._queue.put(item, timeout=timeout)

    def take(self, timeout: float, max_items: int = 10_000) -> list[QueueItem]:
        """Wait up to `timeout` for one item, then take whatever else is already there."""
        try:
            items = [self._queue.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(items) < max_items:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return items
