"""What kind of source a progress event's source is: the one place that knows how each is
recognised.

Spark names a source only by its `description` (the source's `toString`) and its offsets, so a
kind is recognised from the description's prefix first, then from the shape of its offsets (a
Delta offset names its `reservoirId` whether the streamops Delta source or native Delta wrote
it; a Kafka offset is `{"topic": {"partition": offset}}`). Anything else is `unknown`: recorded
and exported as such, with whatever its progress holds, never dropped.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.monitor.progress_event import SourceProgress

SourceKind = Literal[
    "kafka",
    "delta",
    "file",
    "cloud_files",
    "kinesis",
    "rate",
    "rate_micro_batch",
    "socket",
    "memory",
    "python",
    "unknown",
]
SOURCE_KINDS: tuple[str, ...] = get_args(SourceKind)

DESCRIPTION_PREFIXES: tuple[tuple[str, SourceKind], ...] = (
    ("KafkaV2[", "kafka"),  # DSv2 micro-batch: KafkaV2[Subscribe[topic]], KafkaV2[Assign[...]]
    ("KafkaSource[", "kafka"),  # DSv1
    ("DeltaSource[", "delta"),  # native Delta (delta-spark, Databricks)
    ("FileStreamSource[", "file"),  # Spark's file source (json, csv, parquet, text, ...)
    ("CloudFilesSource[", "cloud_files"),  # Databricks Auto Loader
    ("KinesisV2[", "kinesis"),
    ("KinesisSource[", "kinesis"),
    ("RateStreamV2[", "rate"),
    ("RateSource[", "rate"),
    ("RatePerMicroBatchStream[", "rate_micro_batch"),
    ("TextSocketV2[", "socket"),
    ("TextSocketSource[", "socket"),
    ("MemoryStream[", "memory"),
)
"""Description prefixes, as Spark 3.x/4.x and the Databricks runtime write them."""

PYTHON_SOURCE_MARKER = ".python.PythonMicroBatchStream"
"""A PySpark Python data source (`DataSourceStreamReader`); the streamops Delta source is one,
recognised as `delta` by its offsets before this applies."""

OFFSET_KINDS: dict[str, SourceKind] = {"delta": "delta", "kafka": "kafka", "file": "file"}
"""Offset shapes (`streamops.core.checkpoint_format.offset_log.classify_offset`) that identify a kind on their own."""

_OBJECT_HASH = re.compile(r"@[0-9a-f]{4,}\b")


def kind_of(source: SourceProgress) -> SourceKind:
    """The kind of one source of a progress event; `unknown` when nothing identifies it."""
    for prefix, kind in DESCRIPTION_PREFIXES:
        if source.description.startswith(prefix):
            return kind
    for offset in (source.end_offset, source.start_offset, source.latest_offset):
        if offset is not None:
            shape = classify_offset(offset).kind
            if shape in OFFSET_KINDS:
                return OFFSET_KINDS[shape]
    if PYTHON_SOURCE_MARKER in source.description:
        return "python"
    return "unknown"


def description_label(description: str) -> str:
    """A description fit for a label: without the JVM object hash some sources append
    (`...PythonMicroBatchStream@31f9eb13`), which changes on every restart."""
    return _OBJECT_HASH.sub("", description)
