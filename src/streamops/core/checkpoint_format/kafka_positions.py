"""Where a Kafka source's checkpoint says it reads next, and what a broker has deleted of it.

Spark's Kafka source offset is `{"topic": {"partition": offset}}`: the next offset to read per
partition, after the batch. A restart replays the newest planned batch that was not committed
from where the batch before it ended, so the offsets a restart needs first are the end offsets
of the newest committed batch. A partition the checkpoint does not name yet is read from the
broker's earliest offset, so nothing of it can be missing. Pure functions: the broker's earliest
offsets come from the caller (`streamops.core.kafka_admin`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streamops.core.checkpoint_format.offset_log import SourceOffset
from streamops.core.checkpoint_format.reader import Checkpoint

TopicPartition = tuple[str, int]


@dataclass(frozen=True, order=True)
class LostRange:
    """Offsets `[first, end)` of `topic`/`partition` deleted before a stream read them."""

    topic: str
    partition: int
    first: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.first

    def describe(self) -> str:
        return f"topic `{self.topic}` partition {self.partition} offsets {self.first}..{self.end - 1}"


def kafka_positions(offset: SourceOffset) -> dict[TopicPartition, int]:
    """The per-partition offsets of one Kafka source offset (empty for any other source)."""
    if offset.kind != "kafka":
        return {}
    return {
        (topic, int(partition)): int(value)
        for topic, parts in offset.value.items()
        for partition, value in parts.items()
    }


def offset_ranges(start: SourceOffset | None, end: SourceOffset) -> list[dict[str, int | str | None]]:
    """What a batch read from a Kafka source, per partition: offsets [from, to) and how many
    (`from` None for a partition the batch started reading where the source starts: batch 0's
    starting offsets, or a partition new since the batch before)."""
    before = kafka_positions(start) if start is not None else {}
    return [
        {
            "topic": topic,
            "partition": partition,
            "from_offset": before.get((topic, partition)),
            "to_offset": to,
            "records": None if (topic, partition) not in before else to - before[(topic, partition)],
        }
        for (topic, partition), to in sorted(kafka_positions(end).items())
    ]


def next_kafka_offsets(checkpoint: Checkpoint, source: int = 0) -> dict[TopicPartition, int]:
    """The offsets a restart of `checkpoint` reads first from its Kafka source `source`: where
    the newest committed batch ended (empty before any batch was committed)."""
    committed = checkpoint.latest_committed
    if committed is None:
        return {}
    batch = checkpoint.offsets.get(committed)
    if batch is None or source >= len(batch.sources):
        return {}
    return kafka_positions(batch.sources[source])


def lost_ranges(needed: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int]) -> list[LostRange]:
    """The offsets a reader needs that the broker no longer holds: for each partition whose
    earliest offset moved past the one needed next, `[needed, earliest)`."""
    return sorted(
        LostRange(topic, partition, first, earliest[(topic, partition)])
        for (topic, partition), first in needed.items()
        if (topic, partition) in earliest and earliest[(topic, partition)] > first
    )
