"""`streamops demo --kafka-bootstrap` on a real broker, as a user runs it: the load goes to the
topic, bronze reads it, bronze's position is published as a consumer group, and once bronze has
drained the topic every record the demo produced is in bronze or quarantine exactly once."""

from __future__ import annotations

import os
import re
import signal

import pytest
from kafka_broker import KafkaBroker
from test_demo import Demo, assert_lake_has_data
from test_kafka_pipeline import coordinates, finished

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.demo import DEMO_CONSUMER_GROUP, DEMO_PARTITIONS

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

TOPIC = "demo-events"


def test_demo_through_kafka_lands_every_produced_record_once(tmp_path):
    lake = LakeLayout.at(tmp_path / "demo" / "lake")
    with KafkaBroker(tmp_path / "kafka") as broker:
        demo = Demo(tmp_path / "demo", "--kafka-bootstrap", broker.bootstrap, "--topic", TOPIC)
        try:
            demo.wait_for_line(rf"^\s+kafka\s+topic `{TOPIC}` at {broker.bootstrap}$", 120)
            demo.wait_for_line(r"^first silver commit \(.*\) \d+s after start$", 180)
            os.killpg(demo.process.pid, signal.SIGINT)
        finally:
            code = demo.finish(timeout=120)
        assert code == 0, demo.lines
        stopped = demo.wait_for_line(r"^streamops demo stopped after", 1)
        produced = re.search(rf": ([1-9]\d*) lines produced to topic `{TOPIC}`,", stopped)
        assert produced, stopped
        latest = broker.latest_offsets(TOPIC)
        assert len(latest) == DEMO_PARTITIONS and sum(latest.values()) == int(produced.group(1))
        published = broker.group_offsets(DEMO_CONSUMER_GROUP)
        assert published and all(offset <= latest[partition] for (_, partition), offset in published.items())

        run = ("run", "--lake", str(lake.root), "--kafka-bootstrap", broker.bootstrap, "--topics", TOPIC)
        drained = finished(*run, "--stages", "bronze", "--until-idle")
        assert drained.returncode == 0, drained.stderr[-3000:]

    expected = {(partition, offset) for partition, end in latest.items() for offset in range(end)}
    found = coordinates(lake)
    assert set(found) == expected and max(found.values()) == 1, "every produced record once, by its coordinates"
    assert_lake_has_data(lake)
