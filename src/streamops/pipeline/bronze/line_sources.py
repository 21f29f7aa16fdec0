"""Where bronze's lines come from: landing files, or the records of Kafka topics.

Either way a line is one row of `value` (its bytes), `source_file` and `source_mtime` (what
orders a batch's lines: the landing file and its modification time, or `kafka://topic/partition/offset`
and the record's timestamp), and the record's Kafka coordinates and key (null for a file's
line). The classifiers carry the coordinates through unchanged, so every bronze and quarantine
row names the record it came from, and a silver row traces back to it through bronze.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamops.core.storage.location import Location, LocationLike
from streamops.pipeline.exceptions import PipelineConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

KAFKA_URI_FORMAT = "kafka://%s/%d/%d"
"""`source_file` of a Kafka record: topic, partition, offset."""


@dataclass(frozen=True)
class KafkaInput:
    """The Kafka topics bronze reads. `starting_offsets` and `max_offsets_per_trigger` are the
    source's own options; `options` pass through as given (`kafka.`-prefixed ones reach the
    consumer: security protocol, SASL, ...). With `allow_data_loss` a batch whose offsets
    retention already deleted reads what is left and records what is gone; without it the
    stream stops, naming what is gone."""

    bootstrap: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    allow_data_loss: bool = False

    def __post_init__(self) -> None:
        if bool(self.topics) == bool(self.topic_pattern):
            raise PipelineConfigError(
                "name the Kafka topics to read: --topics a,b or --topic-pattern REGEX (one of them)"
            )

    @property
    def client_config(self) -> dict[str, str]:
        """The consumer settings among `options`, for streamops' own calls to the brokers."""
        return {key.removeprefix("kafka."): value for key, value in self.options.items() if key.startswith("kafka.")}


def landing_lines(spark: SparkSession, landing: LocationLike, max_files_per_trigger: int) -> DataFrame:
    """The lines of the NDJSON files dropped into `landing`."""
    from pyspark.sql import functions as F

    return (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", str(max_files_per_trigger))
        .load(str(Location.of(landing)))
        .select(
            F.col("value").cast("binary").alias("value"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("source_mtime"),
            F.lit(None).cast("binary").alias("kafka_key"),
            F.lit(None).cast("string").alias("kafka_topic"),
            F.lit(None).cast("int").alias("kafka_partition"),
            F.lit(None).cast("bigint").alias("kafka_offset"),
        )
    )


def kafka_lines(spark: SparkSession, kafka: KafkaInput) -> DataFrame:
    """The records of `kafka`'s topics, through Spark's Kafka source: the value is the line."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("startingOffsets", kafka.starting_offsets)
        .option("failOnDataLoss", "false" if kafka.allow_data_loss else "true")
    )
    if kafka.topics:
        reader = reader.option("subscribe", ",".join(kafka.topics))
    else:
        reader = reader.option("subscribePattern", str(kafka.topic_pattern))
    if kafka.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(kafka.max_offsets_per_trigger))
    for key, value in kafka.options.items():
        reader = reader.option(key, value)
    return reader.load().select(
        F.col("value"),
        F.format_string(KAFKA_URI_FORMAT, "topic", "partition", "offset").alias("source_file"),
        F.col("timestamp").alias("source_mtime"),
        F.col("key").alias("kafka_key"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
    )
