"""The hand-off from Spark's listener bus never blocks: a full queue drops and counts."""

from __future__ import annotations

import threading

import pytest

from streamops.monitor.event_queue import EventQueue, FlushRequest, RawEvent


def test_a_full_queue_drops_and_counts_instead_of_blocking():
    queue = EventQueue(2)
    offered = [queue.offer(RawEvent("progress", "{}", float(i))) for i in range(5)]
    assert offered == [True, True, False, False, False]
    assert queue.dropped == 3
    taken = queue.take(timeout=0.1)
    assert [item.received_at for item in taken] == [0.0, 1.0]
    assert queue.take(timeout=0.01) == []


def test_control_requests_wait_for_room_and_keep_their_order():
    queue = EventQueue(1)
    queue.offer(RawEvent("idle", "{}", 1.0))
    request = FlushRequest()
    putter = threading.Thread(target=queue.put_control, args=(request, 5.0))
    putter.start()
    first = queue.take(timeout=1.0)
    putter.join(5.0)
    assert [type(i).__name__ for i in first + queue.take(timeout=1.0)] == ["RawEvent", "FlushRequest"]
    assert queue.dropped == 0


def test_queue_size_must_be_positive():
    with pytest.raises(ValueError, match="queue_size"):
        EventQueue(0)
