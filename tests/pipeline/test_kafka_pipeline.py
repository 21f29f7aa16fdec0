"""The pipeline reading Kafka on a real broker: every record once in bronze or quarantine (by its
topic, partition and offset) and every event once in silver, across SIGKILLs of the pipeline and
a restart of the broker; offsets retention deleted are named, or recorded with --allow-data-loss;
the doctor says so before a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka_broker import KafkaBroker
from waiting import wait_until

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

TOPIC = "events"


def streamops(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "streamops", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, **popen,
    )  # fmt: skip


def finished(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamops", *args], capture_output=True, text=True, timeout=timeout)


def committed_batches(lake: LakeLayout) -> int:
    commits = Path(lake.checkpoint(BRONZE_STREAM)) / "commits"
    return sum(1 for path in commits.iterdir() if path.name.isdigit()) if commits.is_dir() else 0


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def coordinates(lake: LakeLayout) -> Counter:
    """(partition, offset) of every bronze row and every record bronze quarantined."""
    found: Counter = Counter()
    bronze = read_delta(str(lake.bronze_events), columns=["kafka_partition", "kafka_offset"]).to_pylist()
    quarantine = read_delta(
        str(lake.bronze_quarantine), columns=["stream", "kafka_partition", "kafka_offset"]
    ).to_pylist()
    for row in bronze + [q for q in quarantine if q["stream"] == BRONZE_STREAM]:
        found[(row["kafka_partition"], row["kafka_offset"])] += 1
    return found


def test_kafka_to_the_lake_is_exactly_once_across_kills_and_a_broker_restart(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    with KafkaBroker(tmp_path / "kafka") as broker:
        produce = ("--kafka-bootstrap", broker.bootstrap, "--topic", TOPIC, "--partitions", "3", "--event-types", "6")
        first = finished("generate", "--out", str(tmp_path / "run1"), "--events", "3000", "--bad", "0.01", *produce)
        assert first.returncode == 0, first.stderr
        run = (
            "run", "--lake", str(lake.root), "--kafka-bootstrap", broker.bootstrap, "--topics", TOPIC,
            "--trigger", "0.5", "--max-offsets-per-trigger", "300", "--types-per-group", "3",
        )  # fmt: skip

        pipeline = streamops(*run, "--duration", "3600")
        wait_until(lambda: committed_batches(lake) >= 2, timeout=240, what="two bronze batches")
        kill(pipeline)

        pipeline = streamops(*run, "--duration", "3600")
        second = finished(
            "generate", "--out", str(tmp_path / "run2"), "--events", "3000", "--seed", "2", "--bad", "0.01", *produce
        )
        assert second.returncode == 0, second.stderr
        before = committed_batches(lake)
        wait_until(lambda: committed_batches(lake) > before, timeout=240, what="a batch after the restart")
        broker.restart()  # the running pipeline's consumers lose the broker, then find it again
        before = committed_batches(lake)
        wait_until(lambda: committed_batches(lake) > before + 1, timeout=240, what="batches after the broker restart")
        kill(pipeline)

        drained = finished(*run, "--until-idle", "--json")
        assert drained.returncode == 0, drained.stderr[-3000:]
        latest = broker.latest_offsets(TOPIC)

    expected = {(partition, offset) for partition, end in latest.items() for offset in range(end)}
    found = coordinates(lake)
    assert set(found) == expected and max(found.values()) == 1, "every record once, by its coordinates"

    bronze_ids = Counter(read_delta(str(lake.bronze_events), columns=["event_id"]).column(0).to_pylist())
    silver_ids: Counter = Counter()
    for table in lake.silver_root.iterdir():
        silver_ids.update(read_delta(str(table), columns=["event_id"]).column(0).to_pylist())
    silver_quarantined = sum(
        1 for stream in read_delta(str(lake.bronze_quarantine), columns=["stream"]).column(0).to_pylist()
        if stream.startswith("silver_")
    )  # fmt: skip
    assert max(silver_ids.values()) == 1 and sum(silver_ids.values()) + silver_quarantined == sum(bronze_ids.values())
    sources = read_delta(str(lake.bronze_events), columns=["source_file", "kafka_topic"]).to_pylist()
    assert all(row["source_file"].startswith(f"kafka://{TOPIC}/") and row["kafka_topic"] == TOPIC for row in sources)


def set_retention(broker: KafkaBroker, topic: str, milliseconds: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("topic", topic, set_config={"retention.ms": str(milliseconds)})
    for future in admin.alter_configs([resource]).values():
        future.result(30)


def test_offsets_retention_deleted_are_named_by_default_and_recorded_when_allowed(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    with KafkaBroker(tmp_path / "kafka", log_retention_check_ms=500) as broker:
        broker.create_topic("short")
        event = b'{"event_type":"tick","event_id":"%d","event_time":"2026-01-01T00:00:00Z","n":%d}'
        broker.produce("short", [event % (i, i) for i in range(10)])
        run = ("run", "--lake", str(lake.root), "--kafka-bootstrap", broker.bootstrap, "--topics", "short")
        assert finished(*run, "--until-idle").returncode == 0

        broker.produce("short", [event % (i, i) for i in range(10, 20)])  # never read: retention takes them
        set_retention(broker, "short", 1000)
        wait_until(lambda: broker.earliest_offsets("short") == {0: 20}, timeout=60, what="retention to delete")
        set_retention(broker, "short", -1)
        broker.produce("short", [event % (i, i) for i in range(20, 30)])

        doctor = finished(
            "checkpoint", "doctor", str(lake.checkpoint(BRONZE_STREAM)), "--kafka-bootstrap", broker.bootstrap,
            "--json",
        )  # fmt: skip
        assert doctor.returncode == 2, doctor.stderr
        findings = {f["code"]: f for d in json.loads(doctor.stdout)["checkpoints"] for f in d["findings"]}
        lost = findings["kafka_data_loss"]
        assert lost["evidence"]["lost"] == [{"topic": "short", "partition": 0, "first": 10, "end": 20}]

        stopped = finished(*run, "--until-idle")
        assert stopped.returncode == 1
        named = [line for line in stopped.stdout.splitlines() if "without losing data" in line]
        assert named and "topic `short` partition 0 offsets 10..19" in named[0], stopped.stdout

        allowed = finished(*run, "--until-idle", "--allow-data-loss", "--json")
        assert allowed.returncode == 0, allowed.stderr[-3000:]

    events = sorted(int(i) for i in read_delta(str(lake.bronze_events), columns=["event_id"]).column(0).to_pylist())
    assert events == [*range(10), *range(20, 30)]
    (recorded,) = read_delta(str(lake.kafka_data_loss)).to_pylist()
    assert (recorded["stream"], recorded["topic"], recorded["partition"]) == (BRONZE_STREAM, "short", 0)
    assert (recorded["first_offset"], recorded["end_offset"], recorded["lost_offsets"]) == (10, 20, 10)
    assert time.time() - recorded["detected_at"].timestamp() < 600
