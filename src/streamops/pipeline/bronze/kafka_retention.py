"""Kafka offsets that retention deleted before bronze read them: named, never hidden.

By default bronze stops: before it starts (and before every restart) it asks the brokers for
each partition's earliest offset and compares it with what its checkpoint reads next; any gap
is one line naming the topic, the partition and the lost offsets. Spark's own check
(`failOnDataLoss`) stops a batch that meets a gap while running, and the restart then says which.

With `--allow-data-loss` the stream reads what is left, and each batch records what it could
not read: for every partition, the offsets from where the batch was planned to start up to the
first one it read (or its planned end, when it read nothing there). Each range is a row of
`_system/kafka_data_loss`, written exactly once with the batch's txn, and a metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pyarrow as pa

from streamops.core.checkpoint_format.kafka_positions import LostRange, kafka_positions, lost_ranges, next_kafka_offsets
from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.exceptions import StreamopsError
from streamops.core.kafka_admin import KafkaAdmin
from streamops.core.storage.location import Location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")
LOSS_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("batch_id", pa.int64()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("first_offset", pa.int64()),
        ("end_offset", pa.int64()),
        ("lost_offsets", pa.int64()),
        ("detected_at", UTC_TIMESTAMP),
    ]
)
"""`_system/kafka_data_loss`: offsets [first_offset, end_offset) of a partition a batch never read."""


class KafkaDataLossError(StreamopsError):
    """Retention deleted Kafka offsets the stream had not read, and data loss is not allowed."""


def check_retention(checkpoint: Location, bootstrap: str, client_config: Mapping[str, str], stream: str) -> None:
    """Stop before a start that would skip offsets retention deleted (one line naming them)."""
    if not (checkpoint / "offsets").is_dir():
        return
    needed = next_kafka_offsets(read_checkpoint(checkpoint, last_batches=2))
    if not needed:
        return
    earliest = KafkaAdmin(bootstrap, client_config).earliest(needed)
    lost = lost_ranges(needed, earliest)
    if lost:
        raise KafkaDataLossError(
            f"{stream} cannot go on without losing data: Kafka retention deleted "
            f"{'; '.join(r.describe() for r in lost)} before they were read; run with --allow-data-loss to skip "
            "them (each range is recorded in _system/kafka_data_loss)"
        )


def lost_in_batch(df: DataFrame, commit: BatchCommitInfo) -> list[LostRange]:
    """The offsets the batch was planned to read and did not (see the module docstring)."""
    from pyspark.sql import functions as F

    starts = kafka_positions(classify_offset(commit.source_start)) if commit.source_start else {}
    ends = kafka_positions(classify_offset(commit.source_end)) if commit.source_end else {}
    planned = {tp: (starts[tp], end) for tp, end in ends.items() if tp in starts and end > starts[tp]}
    if not planned:
        return []
    first_read = {
        (row[0], row[1]): row[2]
        for row in df.groupBy("kafka_topic", "kafka_partition").agg(F.min("kafka_offset")).collect()
    }
    lost = []
    for (topic, partition), (start, end) in sorted(planned.items()):
        first = first_read.get((topic, partition), end)
        if first > start:
            lost.append(LostRange(topic, partition, start, first))
    return lost


def loss_rows(lost: list[LostRange], commit: BatchCommitInfo) -> pa.Table:
    now = datetime.now(timezone.utc)
    return pa.Table.from_pylist(
        [
            {
                "stream": commit.stream,
                "batch_id": commit.batch_id,
                "topic": r.topic,
                "partition": r.partition,
                "first_offset": r.first,
                "end_offset": r.end,
                "lost_offsets": r.count,
                "detected_at": now,
            }
            for r in lost
        ],
        schema=LOSS_SCHEMA,
    )
