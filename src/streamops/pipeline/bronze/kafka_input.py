"""Bronze's lines as the records of Kafka topics, through Spark's Kafka source: the value is the line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamops.pipeline.bronze.kafka_retention import check_retention, lost_in_batch
from streamops.pipeline.bronze.line_sources import LINE_BYTES, LINE_OFFSET
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.runtime.spark_jars import kafka_package

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.checkpoint_format.kafka_positions import LostRange
    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.core.storage.location import Location
    from streamops.monitor.kafka_groups import KafkaGroupCommits

KAFKA_URI_FORMAT = "kafka://%s/%d/%d"
"""`source_file` of a Kafka record: topic, partition, offset."""


@dataclass(frozen=True)
class KafkaInput:
    """The Kafka topics bronze reads. `starting_offsets` and `max_offsets_per_trigger` are the
    source's own options; `options` pass through as given (`kafka.`-prefixed ones reach the
    consumer: security protocol, SASL, ...). With `allow_data_loss` a batch whose offsets
    retention already deleted reads what is left and records what is gone; without it the
    stream stops, naming what is gone. `consumer_group`: commit bronze's position to this group
    after each batch, so Kafka's tools see it."""

    bootstrap: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    allow_data_loss: bool = False
    consumer_group: str | None = None

    def __post_init__(self) -> None:
        if bool(self.topics) == bool(self.topic_pattern):
            raise PipelineConfigError(
                "name the Kafka topics to read: --topics a,b or --topic-pattern REGEX (one of them)"
            )

    @property
    def client_config(self) -> dict[str, str]:
        """The consumer settings among `options`, for streamops' own calls to the brokers."""
        return {key.removeprefix("kafka."): value for key, value in self.options.items() if key.startswith("kafka.")}

    @property
    def locations(self) -> tuple[Location, ...]:
        return ()

    def spark_packages(self) -> list[str]:
        return [kafka_package()]

    def describe(self) -> str:
        topics = ",".join(self.topics) or f"/{self.topic_pattern}/"
        return f"topic `{topics}` at {self.bootstrap}"

    def prepare(self, checkpoint: Location, stream: str) -> None:
        """Spark's own check (`failOnDataLoss`) meets a gap only in a running batch: a restart
        is stopped before it skips what retention deleted, naming it (bronze/kafka_retention.py)."""
        if not self.allow_data_loss:
            check_retention(checkpoint, self.bootstrap, self.client_config, stream)

    def lines(self, spark: SparkSession, max_line_bytes: int) -> DataFrame:
        """The records as lines. The consumer holds a record whole (the brokers' `message.max.bytes`
        bounds it); what goes on keeps its first `max_line_bytes + 1` bytes."""
        from pyspark.sql import functions as F

        reader = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("startingOffsets", self.starting_offsets)
            .option("failOnDataLoss", "false" if self.allow_data_loss else "true")
        )
        if self.topics:
            reader = reader.option("subscribe", ",".join(self.topics))
        else:
            reader = reader.option("subscribePattern", str(self.topic_pattern))
        if self.max_offsets_per_trigger is not None:
            reader = reader.option("maxOffsetsPerTrigger", str(self.max_offsets_per_trigger))
        for key, value in self.options.items():
            reader = reader.option(key, value)
        return reader.load().select(
            F.when(F.length("value") > max_line_bytes, F.substring("value", 1, max_line_bytes + 1))
            .otherwise(F.col("value"))
            .alias("value"),
            F.format_string(KAFKA_URI_FORMAT, "topic", "partition", "offset").alias("source_file"),
            F.col("timestamp").alias("source_mtime"),
            F.col("key").alias("kafka_key"),
            F.col("topic").alias("kafka_topic"),
            F.col("partition").alias("kafka_partition"),
            F.col("offset").alias("kafka_offset"),
            F.lit(None).cast("bigint").alias(LINE_OFFSET),
            F.length("value").cast("bigint").alias(LINE_BYTES),
        )

    def lost_in_batch(self, df: DataFrame, commit: BatchCommitInfo) -> list[LostRange]:
        """With `allow_data_loss`, the offsets retention deleted before the batch read them."""
        return lost_in_batch(df, commit) if self.allow_data_loss else []

    def group_commits(self, stream: str) -> KafkaGroupCommits | None:
        from streamops.monitor.kafka_groups import KafkaGroupCommits

        if self.consumer_group is None:
            return None
        return KafkaGroupCommits(self.bootstrap, {stream: self.consumer_group}, self.client_config)
