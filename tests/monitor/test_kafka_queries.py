"""A user's own Kafka query (not the pipeline) watched by StreamMonitor on a real broker: the lag
it exports per partition is the broker's latest offset minus the query's end offset, and with
consumer groups asked for, Kafka's own tool lists the query's group with the same lag."""

from __future__ import annotations

import json

import pytest
from kafka_broker import KafkaBroker
from waiting import wait_until

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.kafka_groups import KafkaGroupCommits
from streamops.monitor.stream_monitor import StreamMonitor

pytestmark = [pytest.mark.services, pytest.mark.spark]

STREAM = "clicks_counter"
GROUP = "spark-clicks-counter"


def test_a_kafka_querys_lag_matches_the_broker_and_kafkas_tools_see_its_group(spark, lake, tmp_path):
    with KafkaBroker(tmp_path / "kafka") as broker:
        broker.create_topic("clicks", partitions=2)
        for partition in (0, 1):
            broker.produce("clicks", [b"click"] * 60, partition=partition)
        groups = KafkaGroupCommits(broker.bootstrap, {STREAM: GROUP})
        monitor = StreamMonitor(spark, lake, flush_interval_s=0.2, kafka_groups=groups).start()
        query = None
        try:
            query = (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", "clicks")
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", 20)
                .load()
                .writeStream.format("memory")
                .queryName(STREAM)
                .trigger(processingTime="0.5 seconds")
                .start()
            )
            wait_until(lambda: (query.lastProgress or {}).get("batchId", -1) >= 2, timeout=120, what="three batches")
        finally:
            if query is not None:
                query.stop()
        last = query.lastProgress
        value = monitor.registry.get_sample_value
        wait_until(
            lambda: value(catalog.BATCH_ID.name, {"stream": STREAM}) == last["batchId"],
            timeout=30,
            what="the monitor to apply the last batch",
        )
        assert monitor.flush()

        end_offset = last["sources"][0]["endOffset"]
        end_offset = json.loads(end_offset) if isinstance(end_offset, str) else end_offset
        end = {int(p): offset for p, offset in end_offset["clicks"].items()}
        latest = broker.latest_offsets("clicks")
        assert latest == {0: 60, 1: 60} and sum(end.values()) < 120, "the query is behind"
        for partition in (0, 1):
            labels = {"stream": STREAM, "source": "0", "kind": "kafka", "topic": "clicks", "partition": str(partition)}
            assert value(catalog.PARTITION_BACKLOG_OFFSETS.name, labels) == latest[partition] - end[partition]
        assert value(catalog.BACKLOG_OFFSETS.name, {"stream": STREAM, "source": "0", "kind": "kafka"}) == sum(
            latest[p] - end[p] for p in (0, 1)
        )
        monitor.stop()

        assert broker.group_offsets(GROUP) == {("clicks", p): end[p] for p in (0, 1)}
        listing = broker.describe_group_cli(GROUP)
        for partition in (0, 1):
            row = next(
                line.split() for line in listing.splitlines() if line.split()[:3] == [GROUP, "clicks", str(partition)]
            )
            assert row[3:6] == [str(end[partition]), str(latest[partition]), str(latest[partition] - end[partition])]
