"""Spark's Kafka consumers made visible to Kafka's own tools, for the streams asked for.

Spark's Kafka source keeps its position in its checkpoint and never commits it to the brokers
(SPARK-27549 was not accepted), so `kafka-consumer-groups --describe`, Burrow and kafka_exporter,
which watch consumer groups, cannot see it. For each stream named here, after each batch the
monitor commits the batch's end offsets (what the next batch reads first) to a consumer group:
the progress event comes after Spark wrote the batch to its commit log, so the group is never
ahead of what Spark committed, and Spark never reads it back (the checkpoint stays the truth).

When the monitor stops, after every queued event, each stream whose checkpoint is named
publishes the end offsets of its newest committed batch read from that checkpoint: a commit
the broker refused during the run (a broker's first group is refused while its coordinator
loads), or a run that committed nothing new, still ends with the group at the checkpoint's
position. A stream without a checkpoint here ends with its last refused offsets tried again.
A broker that does not answer costs a warning, never a batch. Needs `streamops[kafka]`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamops.core.checkpoint_format.kafka_positions import TopicPartition, kafka_positions
from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.exceptions import CheckpointNotFoundError, StreamopsError
from streamops.core.storage.location import LocationLike
from streamops.monitor.progress_event import QueryProgress

log = logging.getLogger("streamops.monitor")

PUBLISH_TIMEOUT_S = 10.0
"""How long one commit may wait for the brokers (a coordinator still loading included)."""


@dataclass(frozen=True)
class KafkaGroupCommits:
    """Which streams publish their position, as which consumer group, on which brokers
    (`config`: client settings such as security.protocol, as librdkafka names them).
    `checkpoints`: where streams of this application checkpoint, so that the monitor's stop
    publishes their committed position; name only streams no other application runs, since
    the checkpoint's position replaces whatever the group holds."""

    bootstrap: str
    groups: Mapping[str, str]
    config: Mapping[str, str] = field(default_factory=dict)
    checkpoints: Mapping[str, LocationLike] = field(default_factory=dict)


class KafkaGroupPublisher:
    """Commits each named stream's Kafka end offsets after its batches, and its committed
    position when the monitor stops (both on the monitor's worker, one at a time)."""

    def __init__(self, commits: KafkaGroupCommits, timeout: float = PUBLISH_TIMEOUT_S) -> None:
        from streamops.core.kafka_admin import KafkaAdmin

        self.commits = commits
        self.timeout = timeout
        self._admin = KafkaAdmin(commits.bootstrap, commits.config)
        self._published: dict[str, dict[TopicPartition, int]] = {}
        self._refused: dict[str, dict[TopicPartition, int]] = {}
        self.failures = 0

    def publish(self, stream: str, progress: QueryProgress) -> None:
        if stream not in self.commits.groups:
            return
        offsets: dict[TopicPartition, int] = {}
        for source in progress.sources:
            if source.end_offset is not None:
                offsets.update(kafka_positions(classify_offset(source.end_offset)))
        if offsets:
            self._commit(stream, offsets)

    def finish(self) -> None:
        """Leave each group at its stream's committed position: the checkpoint's when the
        stream has one named and readable, else the offsets of a commit the brokers refused last."""
        for stream in self.commits.groups:
            offsets = self._checkpointed(stream) or self._refused.get(stream)
            if offsets and offsets != self._published.get(stream):
                self._commit(stream, offsets)

    def _commit(self, stream: str, offsets: dict[TopicPartition, int]) -> None:
        group = self.commits.groups[stream]
        try:
            self._admin.commit_group(group, offsets, self.timeout)
        except StreamopsError as error:
            self.failures += 1
            self._refused[stream] = offsets
            log.warning(
                "streamops monitor could not commit %s's offsets to consumer group %s: %s", stream, group, error
            )
            return
        self._published[stream] = offsets
        self._refused.pop(stream, None)

    def _checkpointed(self, stream: str) -> dict[TopicPartition, int]:
        """The Kafka end offsets of the stream's newest committed batch (empty before one, or
        without a checkpoint named)."""
        location = self.commits.checkpoints.get(stream)
        if location is None:
            return {}
        try:
            checkpoint = read_checkpoint(location, last_batches=2, verify_crc=False)
        except CheckpointNotFoundError:  # the stream never started: it has no position
            return {}
        except StreamopsError as error:  # its store is away, a log file damaged
            log.warning("streamops monitor could not read %s's checkpoint to publish its position: %s", stream, error)
            return {}
        batch = None if checkpoint.latest_committed is None else checkpoint.offsets.get(checkpoint.latest_committed)
        offsets: dict[TopicPartition, int] = {}
        for source in batch.sources if batch is not None else ():
            offsets.update(kafka_positions(source))
        return offsets
