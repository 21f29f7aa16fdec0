"""What a Kafka cluster holds, asked of its brokers: earliest and latest offsets, and the
offsets a consumer group committed (and committing them, for groups streamops keeps).

Spark's Kafka source keeps its position in its checkpoint and never in the brokers, so Kafka's
own tools (kafka-consumer-groups, Burrow, kafka_exporter) cannot see a Spark consumer; these
calls let streamops compare a checkpoint with the brokers and publish its position as a group.
Needs `streamops[kafka]` (confluent-kafka); `config` passes client settings through (security
protocol, SASL, ...), as the keys of librdkafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from streamops.core.checkpoint_format.kafka_positions import TopicPartition
from streamops.core.exceptions import StreamopsError
from streamops.core.extras import require

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

TIMEOUT_SECONDS = 30.0
RESULT_SLACK_SECONDS = 5.0
"""How much longer than a request's own timeout its answer is awaited (librdkafka answers a
timed-out request with an error, so the wait itself never ends first)."""


class KafkaUnreachableError(StreamopsError):
    """The brokers could not be asked (not answering, or refusing the request)."""


class KafkaAdmin:
    """One connection's worth of questions to the brokers at `bootstrap`."""

    def __init__(self, bootstrap: str, config: Mapping[str, str] | None = None) -> None:
        require("kafka", __name__)
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.config = {"bootstrap.servers": bootstrap, **(config or {})}
        self._admin = AdminClient(self.config)

    def partitions(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Every partition of `topics` (a topic the brokers do not have is an error)."""
        metadata = self._call("list the topics", lambda: self._admin.list_topics(timeout=TIMEOUT_SECONDS))
        found = []
        for topic in topics:
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                raise KafkaUnreachableError(f"the Kafka brokers at {self.bootstrap} have no topic `{topic}`")
            found.extend((topic, partition) for partition in sorted(described.partitions))
        return found

    def earliest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._offsets(partitions, "earliest")

    def latest(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._offsets(partitions, "latest")

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """What consumer group `group` committed (empty when it committed nothing)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        answer = self._call("read the group's offsets", lambda: futures[group].result(TIMEOUT_SECONDS))
        return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}

    def commit_group(self, group: str, offsets: Mapping[TopicPartition, int], timeout: float = TIMEOUT_SECONDS) -> None:
        """Set `group`'s committed offsets (the next offset it reads, per partition), without
        joining the group: what a consumer that keeps its position elsewhere publishes.

        The brokers answer per partition, and a refused partition is an error here. A group
        coordinator that is loading or moving is asked again until `timeout`: a broker's first
        group creates `__consumer_offsets`, and its coordinator refuses commits until loaded."""
        deadline = time.monotonic() + timeout
        delay = 0.1
        while True:
            refused = self._commit_once(group, offsets, max(deadline - time.monotonic(), 0.1))
            if refused is None:
                return
            if not _transient(refused) or time.monotonic() + delay > deadline:
                raise KafkaUnreachableError(
                    f"could not commit the group's offsets at the Kafka brokers {self.bootstrap}: {refused.str()}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _commit_once(self, group: str, offsets: Mapping[TopicPartition, int], timeout: float) -> KafkaError | None:
        """One commit request: None when every partition was committed, else the first refusal."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        )
        futures = self._admin.alter_consumer_group_offsets([request], request_timeout=timeout)
        try:
            answer = futures[group].result(timeout + RESULT_SLACK_SECONDS)
        except KafkaException as error:
            refused = error.args[0] if error.args else None
            if isinstance(refused, KafkaError):
                return refused
            raise KafkaUnreachableError(
                f"could not commit the group's offsets at the Kafka brokers {self.bootstrap}: {error}"
            ) from error
        return next((tp.error for tp in answer.topic_partitions if tp.error is not None), None)

    def _offsets(self, partitions: Iterable[TopicPartition], which: str) -> dict[TopicPartition, int]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
        request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
        if not request:
            return {}
        futures = self._admin.list_offsets(request, request_timeout=TIMEOUT_SECONDS)
        return {
            (tp.topic, tp.partition): self._call(f"read the {which} offsets", lambda f=future: f.result().offset)
            for tp, future in futures.items()
        }

    def _call(self, what: str, call):
        from confluent_kafka import KafkaException

        try:
            return call()
        except KafkaException as error:
            raise KafkaUnreachableError(
                f"could not {what} at the Kafka brokers {self.bootstrap}: {error.args[0] if error.args else error}"
            ) from error


def _transient(error: KafkaError) -> bool:
    """A refusal the same request can overcome shortly: the group's coordinator is loading its
    partition of `__consumer_offsets`, or is being elected or moved."""
    from confluent_kafka import KafkaError

    transient = (
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
    )
    return error.code() in transient or error.retriable()
