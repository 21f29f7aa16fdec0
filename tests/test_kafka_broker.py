"""The tests' Kafka broker (tests/kafka_broker.py) does what the Kafka tests rely on: topics,
keyed records per partition, a consumer group's committed offsets that Kafka's own CLI reports,
data and offsets that survive a broker restart, and a topic Spark's Kafka source reads."""

from __future__ import annotations

from collections.abc import Iterator

import kafka_broker
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from kafka_broker import KafkaBroker, KafkaBrokerError
from waiting import wait_until

pytestmark = pytest.mark.services

TOPIC = "events"
GROUP = "streamops-test-group"
COMMITTED = {(TOPIC, 0): 3, (TOPIC, 1): 5}
RETENTION_CHECK_MS = 500


def _fill(broker: KafkaBroker, topic: str) -> None:
    """Two partitions, five keyed records in each."""
    broker.create_topic(topic, partitions=2)
    for partition in (0, 1):
        values = [f"p{partition}-v{n}".encode() for n in range(5)]
        keys = [f"p{partition}-k{n}".encode() for n in range(5)]
        broker.produce(topic, values, keys, partition=partition)


def _read_all(broker: KafkaBroker, topic: str) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """Every record of the topic, by partition: (key, value), in offset order (no group)."""
    ends = broker.latest_offsets(topic)
    records: dict[int, list[tuple[bytes | None, bytes | None]]] = {partition: [] for partition in ends}
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in ends])
        while sum(map(len, records.values())) < sum(ends.values()):
            message = consumer.poll(30)
            assert message is not None, f"no record within 30 s; have {records}"
            assert message.error() is None, message.error()
            records[message.partition()].append((message.key(), message.value()))
    finally:
        consumer.close()
    return records


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Iterator[KafkaBroker]:
    with KafkaBroker(tmp_path_factory.mktemp("kafka"), log_retention_check_ms=RETENTION_CHECK_MS) as started:
        yield started


@pytest.fixture(scope="module")
def topic(broker: KafkaBroker) -> str:
    _fill(broker, TOPIC)
    return TOPIC


@pytest.fixture(scope="module")
def group(broker: KafkaBroker, topic: str) -> str:
    """A consumer group that read every record and committed, by hand, offset 3 on partition 0
    (two records still to process) and 5 on partition 1 (none)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        seen = 0
        while seen < 10:
            message = consumer.poll(30)
            assert message is not None, f"the group got {seen} of 10 records within 30 s"
            assert message.error() is None, message.error()
            seen += 1
        offsets = [TopicPartition(t, partition, offset) for (t, partition), offset in COMMITTED.items()]
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
    return GROUP


def test_keyed_records_land_in_the_partitions_they_were_sent_to(broker: KafkaBroker, topic: str) -> None:
    assert broker.latest_offsets(topic) == {0: 5, 1: 5}
    assert broker.earliest_offsets(topic) == {0: 0, 1: 0}
    records = _read_all(broker, topic)
    assert records[1][4] == (b"p1-k4", b"p1-v4")
    assert [key for key, _ in records[0]] == [f"p0-k{n}".encode() for n in range(5)]


def test_committed_group_offsets_show_in_the_admin_api_and_in_kafkas_cli(broker: KafkaBroker, group: str) -> None:
    assert broker.group_offsets(group) == COMMITTED
    rows = {}
    for line in broker.describe_group_cli(group).splitlines():
        fields = line.split()
        if fields[:2] == [group, TOPIC]:
            rows[int(fields[2])] = fields[3:6]  # CURRENT-OFFSET LOG-END-OFFSET LAG
    assert rows == {0: ["3", "5", "2"], 1: ["5", "5", "0"]}
    with pytest.raises(KafkaBrokerError, match="GroupIdNotFoundException"):  # Kafka's tool itself exits 0
        broker.describe_group_cli("no-such-group")


def test_spark_reads_the_topic(spark, broker: KafkaBroker) -> None:
    """Spark's own Kafka source (the test session has its connector) reads what was produced."""
    _fill(broker, "spark-read")
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "spark-read")
        .option("startingOffsets", "earliest")
        .load()
    )
    assert frame.count() == 10


def test_records_and_group_offsets_survive_a_restart(broker: KafkaBroker, topic: str, group: str) -> None:
    before = _read_all(broker, topic)
    broker.restart()  # on the same ports
    assert broker.latest_offsets(topic) == {0: 5, 1: 5}
    assert _read_all(broker, topic) == before
    assert broker.group_offsets(group) == COMMITTED
    broker.produce(topic, [b"after-restart", None], [b"k-new", b"p0-k0"], partition=0)  # None: a tombstone
    assert broker.latest_offsets(topic) == {0: 7, 1: 5}
    assert _read_all(broker, topic)[0][-2:] == [(b"k-new", b"after-restart"), (b"p0-k0", None)]


def test_retention_deletes_expired_records_within_seconds(broker: KafkaBroker) -> None:
    """With the check every 500 ms, a topic with a 1 s retention loses its records soon after
    (Kafka rolls the active segment to delete it), and its offsets go on from there."""
    broker.create_topic("short-lived", config={"retention.ms": "1000"})
    broker.produce("short-lived", [b"old"] * 3)
    wait_until(lambda: broker.earliest_offsets("short-lived") == {0: 3}, timeout=30, what="retention to delete")
    broker.produce("short-lived", [b"new"])
    assert broker.latest_offsets("short-lived") == {0: 4}


def test_a_missing_install_fails_in_one_line_naming_the_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(kafka_broker, "KAFKA_LIB", tmp_path / "no-jars")
    with pytest.raises(KafkaBrokerError, match="no Kafka jars in .*copy-dependencies") as raised:
        KafkaBroker(tmp_path / "kafka").start()
    assert "\n" not in str(raised.value)
