"""Consumer-group commits through the monitor's own worker thread, without Spark, on a real
broker: the worker stopped right after a single batch's progress leaves the group at that
batch's end offsets, on the broker's first group too, whose coordinator refuses commits while it
loads (asked again until it answers); a stopped worker leaves the group at the newest batch its
checkpoint committed (not a planned one) whatever progress it saw; a refused commit costs a
warning, not the worker."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError
from kafka_broker import KafkaBroker

from streamops.core.kafka_admin import KafkaAdmin
from streamops.monitor.event_queue import EventQueue, RawEvent
from streamops.monitor.fleet import Fleet
from streamops.monitor.kafka_groups import KafkaGroupCommits, KafkaGroupPublisher
from streamops.monitor.progress_worker import ProgressWorker
from streamops.monitor.source_backlog import SourceBacklog

pytestmark = pytest.mark.services

TOPIC = "events"
STREAM = "bronze"
PARTITIONS = 3


def progress(batch_id: int, start: dict[int, int] | None, end: dict[int, int]) -> str:
    """The listener's JSON for one batch of a query reading TOPIC, as Spark writes it."""
    offsets = lambda by_partition: {TOPIC: {str(p): o for p, o in by_partition.items()}}  # noqa: E731
    source = {
        "description": f"KafkaV2[Subscribe[{TOPIC}]]",
        "startOffset": None if start is None else offsets(start),
        "endOffset": offsets(end),
        "latestOffset": offsets(end),
        "numInputRows": sum(end.values()) - sum((start or {}).values()),
    }
    body = {
        "id": "6f1c7a52-3d0e-4b8a-9f4e-1c2d3e4f5a6b",
        "runId": "0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b",
        "name": STREAM,
        "timestamp": "2026-11-20T10:30:00.000Z",
        "batchId": batch_id,
        "batchDuration": 1000,
        "numInputRows": source["numInputRows"],
        "sources": [source],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
    }
    return json.dumps({"progress": body})


def write_checkpoint(root: Path, planned: list[dict[int, int]], committed: int) -> None:
    """A Spark checkpoint (log version 1) of a query reading TOPIC: batch i planned to end at
    `planned[i]`, batches 0..`committed` committed."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"6f1c7a52-3d0e-4b8a-9f4e-1c2d3e4f5a6b"}')
    for batch, end in enumerate(planned):
        metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1795000000000 + batch, "conf": {}}
        offset = {TOPIC: {str(p): o for p, o in end.items()}}
        (root / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offset)}")
        if batch <= committed:
            (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def run_worker(commits: KafkaGroupCommits, events: list[str]) -> KafkaGroupPublisher:
    """Start a worker, queue the progress events, stop it at once (as a run's end does)."""
    publisher = KafkaGroupPublisher(commits)
    queue = EventQueue(100)
    worker = ProgressWorker(queue, Fleet(), SourceBacklog(None), None, flush_interval_s=60, kafka_groups=publisher)
    worker.start()
    for event in events:
        assert queue.offer(RawEvent("progress", event, time.time()))
    worker.stop(60)
    return publisher


def in_topic(offsets: dict[int, int]) -> dict[tuple[str, int], int]:
    return {(TOPIC, partition): offset for partition, offset in offsets.items()}


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> KafkaBroker:
    with KafkaBroker(tmp_path_factory.mktemp("kafka")) as started:
        started.create_topic(TOPIC, partitions=PARTITIONS)
        for partition in range(PARTITIONS):
            started.produce(TOPIC, [b"x"] * 10, partition=partition)
        yield started


def test_a_single_batch_on_a_brokers_first_group_is_published_before_the_worker_ends(broker):
    """The broker's first group commit meets a coordinator that is still loading."""
    end = {0: 10, 1: 10, 2: 10}
    publisher = run_worker(KafkaGroupCommits(broker.bootstrap, {STREAM: "first-group"}), [progress(0, None, end)])
    assert publisher.failures == 0
    assert broker.group_offsets("first-group") == in_topic(end)


class LoadingCoordinator:
    """The brokers' AdminClient, except that its first `refusals` offset commits are answered
    as a broker whose group coordinator is still loading answers them: each partition refused
    with COORDINATOR_LOAD_IN_PROGRESS."""

    def __init__(self, admin: Any, refusals: int) -> None:
        self._admin = admin
        self.refusals = refusals

    def alter_consumer_group_offsets(self, requests: list[Any], **kwargs: Any) -> dict[str, Future]:
        if self.refusals == 0:
            return self._admin.alter_consumer_group_offsets(requests, **kwargs)
        self.refusals -= 1
        (request,) = requests
        loading = KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
        refused = [
            SimpleNamespace(topic=tp.topic, partition=tp.partition, error=loading) for tp in request.topic_partitions
        ]
        answer: Future = Future()
        answer.set_result(SimpleNamespace(group_id=request.group_id, topic_partitions=refused))
        return {request.group_id: answer}


def test_a_commit_refused_while_the_coordinator_loads_is_asked_again(broker):
    end = {0: 4, 1: 5, 2: 6}
    admin = KafkaAdmin(broker.bootstrap)
    admin._admin = loading = LoadingCoordinator(admin._admin, refusals=2)
    admin.commit_group("loading", in_topic(end))
    assert loading.refusals == 0
    assert broker.group_offsets("loading") == in_topic(end)


def test_the_group_ends_at_the_checkpoints_newest_committed_batch_never_a_planned_one(broker, tmp_path):
    """Only batch 0's progress reached the worker; the checkpoint committed batch 1 and planned 2."""
    planned = [{0: 3, 1: 3, 2: 3}, {0: 7, 1: 6, 2: 8}, {0: 10, 1: 10, 2: 10}]
    write_checkpoint(tmp_path / "bronze", planned, committed=1)
    commits = KafkaGroupCommits(broker.bootstrap, {STREAM: "checkpointed"}, checkpoints={STREAM: tmp_path / "bronze"})
    publisher = run_worker(commits, [progress(0, None, planned[0])])
    assert publisher.failures == 0
    assert broker.group_offsets("checkpointed") == in_topic(planned[1])

    publisher = run_worker(commits, [])  # a run that read nothing new publishes the same position
    assert publisher.failures == 0
    assert broker.group_offsets("checkpointed") == in_topic(planned[1])


def test_a_refused_commit_costs_a_warning_and_is_tried_again_when_the_worker_ends(broker, caplog):
    """A topic the broker does not have: each commit is refused, the worker goes on."""
    commits = KafkaGroupCommits(broker.bootstrap, {STREAM: "refused"})
    unknown = progress(0, None, {0: 1}).replace(f'"{TOPIC}"', '"no-such-topic"')
    started = time.monotonic()
    publisher = run_worker(commits, [unknown])
    assert time.monotonic() - started < 30
    assert publisher.failures == 2, "the batch's commit, and the one when the worker ended"
    warnings = [r.getMessage() for r in caplog.records if "could not commit bronze's offsets" in r.getMessage()]
    assert len(warnings) == 2 and all("\n" not in line for line in warnings)
    assert broker.group_offsets("refused") == {}
