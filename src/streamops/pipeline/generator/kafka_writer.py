"""The generator's lines as records of a Kafka topic, instead of landing files.

Each "file" of a run (a second of events under `--rate`) is produced as one burst of records, in
order, one record per line, on the partition librdkafka picks (none is keyed): the same lines,
drift and bad records, and the same manifest (its `files` are the bursts, named as the files
would be). A line over Kafka's default record limit (the `too_large` bad records) needs a topic
that takes it: a topic the generator creates gets `max.message.bytes` large enough.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from streamops.core.extras import require
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.records.record_rules import MAX_RECORD_BYTES

MAX_MESSAGE_BYTES = 4 * MAX_RECORD_BYTES
"""What the producer and a topic the generator creates accept: every bad record fits."""
TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class KafkaTarget:
    bootstrap: str
    topic: str
    partitions: int = 1
    config: Mapping[str, str] = field(default_factory=dict)

    def open(self, out: Path) -> KafkaWriter:
        return KafkaWriter(self)

    def describe(self, out: Path) -> str:
        return f"topic `{self.topic}` at {self.bootstrap}"


class KafkaWriter:
    """Produces lines to `target.topic`, creating the topic first when the brokers lack it."""

    def __init__(self, target: KafkaTarget) -> None:
        require("kafka", __name__)
        from confluent_kafka import Producer

        self.target = target
        self._create_topic()
        self._producer = Producer(
            {
                "bootstrap.servers": target.bootstrap,
                "message.max.bytes": MAX_MESSAGE_BYTES,
                "linger.ms": 20,
                **target.config,
            }
        )
        self._errors: list[str] = []

    def write(self, name: str, lines: list[bytes]) -> int:
        """Produce `lines` in order and wait for every one to be acknowledged; their bytes (`name`
        is the burst's name in the manifest only)."""
        for line in lines:
            self._produce(line)
        self._producer.flush(TIMEOUT_SECONDS)
        if self._errors:
            raise PipelineConfigError(
                f"Kafka refused a record of topic `{self.target.topic}`: {self._errors[0]} (a topic made elsewhere "
                f"may take smaller records: raise its max.message.bytes to {MAX_MESSAGE_BYTES}, or use --bad 0)"
            )
        return sum(len(line) for line in lines)

    def _produce(self, line: bytes) -> None:
        while True:
            try:
                self._producer.produce(self.target.topic, value=line, on_delivery=self._delivered)
                return
            except BufferError:  # the local queue is full: let it drain
                self._producer.poll(0.1)

    def _delivered(self, error, _message) -> None:
        if error is not None:
            self._errors.append(str(error))

    def _create_topic(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.target.bootstrap, **self.target.config})
        try:
            topics = admin.list_topics(timeout=TIMEOUT_SECONDS).topics
            if self.target.topic in topics:
                return
            config = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
            new = NewTopic(self.target.topic, num_partitions=self.target.partitions, config=config)
            admin.create_topics([new])[self.target.topic].result(TIMEOUT_SECONDS)
        except KafkaException as error:
            raise PipelineConfigError(
                f"could not reach or create topic `{self.target.topic}` at {self.target.bootstrap}: {error.args[0]}"
            ) from error
