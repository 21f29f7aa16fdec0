"""Spark's Kafka consumers made visible to Kafka's own tools, for the streams asked for.

Spark's Kafka source keeps its position in its checkpoint and never commits it to the brokers
(SPARK-27549 was not accepted), so `kafka-consumer-groups --describe`, Burrow and kafka_exporter,
which watch consumer groups, cannot see it. For each stream named here, after each batch the
monitor commits the batch's end offsets (what the next batch reads first) to a consumer group:
the progress event comes after Spark wrote the batch to its commit log, so the group is never
ahead of what Spark committed, and Spark never reads it back (the checkpoint stays the truth).
A broker that does not answer costs a warning, never a batch. Needs `streamops[kafka]`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamops.core.checkpoint_format.kafka_positions import kafka_positions
from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.core.exceptions import StreamopsError
from streamops.monitor.progress_event import QueryProgress

log = logging.getLogger("streamops.monitor")


@dataclass(frozen=True)
class KafkaGroupCommits:
    """Which streams publish their position, as which consumer group, on which brokers
    (`config`: client settings such as security.protocol, as librdkafka names them)."""

    bootstrap: str
    groups: Mapping[str, str]
    config: Mapping[str, str] = field(default_factory=dict)


class KafkaGroupPublisher:
    """Commits each named stream's Kafka end offsets after its batches (on the monitor's worker)."""

    def __init__(self, commits: KafkaGroupCommits) -> None:
        from streamops.core.kafka_admin import KafkaAdmin

        self.commits = commits
        self._admin = KafkaAdmin(commits.bootstrap, commits.config)
        self.failures = 0

    def publish(self, stream: str, progress: QueryProgress) -> None:
        group = self.commits.groups.get(stream)
        if group is None:
            return
        offsets = {}
        for source in progress.sources:
            if source.end_offset is not None:
                offsets.update(kafka_positions(classify_offset(source.end_offset)))
        if not offsets:
            return
        try:
            self._admin.commit_group(group, offsets)
        except StreamopsError as error:
            self.failures += 1
            log.warning(
                "streamops monitor could not commit %s's offsets to consumer group %s: %s", stream, group, error
            )
