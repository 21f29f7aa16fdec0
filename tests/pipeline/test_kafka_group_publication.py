"""`streamops run --kafka-consumer-group` on a real broker: every run that exits 0 leaves the
group at bronze's committed end offsets, which are the topic's end offsets once bronze has read
everything, and bronze holds each record once. On one lake and one group, in turn: an
`--until-idle` run that reads the topic in one batch (the broker's first group, whose
coordinator refuses commits while it loads), one that reads in several
(`--max-offsets-per-trigger`), and a continuous run stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_broker import KafkaBroker
from test_kafka_pipeline import coordinates
from waiting import wait_until

from streamops.core.checkpoint_format.kafka_positions import next_kafka_offsets
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

TOPIC = "events"
GROUP = "bars-bronze"
PARTITIONS = 3
EVENT = b'{"event_type":"tick","event_id":"%d","event_time":"2026-01-01T00:00:00Z","n":%d}'
RUN_TIMEOUT = 600


def produce(broker: KafkaBroker, first: int, count: int) -> None:
    """Events `first`.. `first + count - 1`, keyed by their number: spread over the partitions."""
    numbers = range(first, first + count)
    broker.produce(TOPIC, [EVENT % (i, i) for i in numbers], keys=[b"%d" % i for i in numbers])


def committed(lake: LakeLayout) -> dict[tuple[str, int], int]:
    """Bronze's committed end offsets, as its checkpoint holds them."""
    return next_kafka_offsets(read_checkpoint(lake.checkpoint(BRONZE_STREAM), last_batches=2))


def committed_batches(lake: LakeLayout) -> int:
    return sum(1 for path in (Path(lake.checkpoint(BRONZE_STREAM)) / "commits").iterdir() if path.name.isdigit())


def assert_group_at_the_end(broker: KafkaBroker, lake: LakeLayout, stderr: str) -> None:
    latest = {(TOPIC, partition): end for partition, end in broker.latest_offsets(TOPIC).items()}
    assert len(latest) == PARTITIONS
    assert broker.group_offsets(GROUP) == committed(lake) == latest, stderr[-3000:]
    found = coordinates(lake)
    expected = {(partition, offset) for (_, partition), end in latest.items() for offset in range(end)}
    assert set(found) == expected and max(found.values()) == 1, "bronze holds every record once"
    assert "could not commit" not in stderr, stderr[-3000:]


def test_every_run_that_exits_0_leaves_the_group_at_bronzes_committed_end_offsets(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    with KafkaBroker(tmp_path / "kafka") as broker:
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        run = (
            sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--stages", "bronze",
            "--kafka-bootstrap", broker.bootstrap, "--topics", TOPIC, "--kafka-consumer-group", GROUP,
        )  # fmt: skip

        produce(broker, 0, 2000)
        one = subprocess.run([*run, "--until-idle"], capture_output=True, text=True, timeout=RUN_TIMEOUT)
        assert one.returncode == 0, one.stderr[-3000:]
        assert committed_batches(lake) == 1
        assert_group_at_the_end(broker, lake, one.stderr)

        produce(broker, 2000, 3000)
        several = subprocess.run(
            [*run, "--until-idle", "--max-offsets-per-trigger", "1000"], capture_output=True, text=True,
            timeout=RUN_TIMEOUT,
        )  # fmt: skip
        assert several.returncode == 0, several.stderr[-3000:]
        assert committed_batches(lake) >= 4
        assert_group_at_the_end(broker, lake, several.stderr)

        produce(broker, 5000, 2000)
        latest = {(TOPIC, partition): end for partition, end in broker.latest_offsets(TOPIC).items()}
        err = tmp_path / "continuous.err"
        with open(err, "wb") as out:
            continuous = subprocess.Popen(
                [*run, "--trigger", "0.5", "--duration", "3600"], stdout=subprocess.DEVNULL, stderr=out,
                start_new_session=True,
            )  # fmt: skip
        try:
            wait_until(lambda: committed(lake) == latest, timeout=RUN_TIMEOUT, what="bronze to read every record")
            continuous.send_signal(signal.SIGTERM)
            assert continuous.wait(timeout=120) == 0, err.read_text()[-3000:]
        finally:
            if continuous.poll() is None:
                os.killpg(continuous.pid, signal.SIGKILL)
        stderr = err.read_text()
        assert "stopped by SIGTERM between batches" in stderr
        assert_group_at_the_end(broker, lake, stderr)
