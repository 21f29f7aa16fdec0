"""Bronze's lines as the lines of the NDJSON files producers drop into a landing directory.

A line is read through streamops' own file format (bronze/jvm/LandingLines.java, in the JVM
classifier's jar) where the jar is built: it keeps at most the limit's bytes plus one of any
line and reads past the rest, so a line of any length reaches quarantine as `too_large` with
its file and byte offset, and no task ever holds it whole. Spark's `text` source would hold the
line (or, capped by Hadoop's `line.maxlength`, skip it without a trace). Without a JDK compiler
there is no jar and the `text` source reads the lines whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamops.core.storage.location import Location, LocationLike
from streamops.pipeline.bronze import jvm_classifier
from streamops.pipeline.bronze.line_sources import LINE_BYTES, LINE_OFFSET

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.checkpoint_format.kafka_positions import LostRange
    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.monitor.kafka_groups import KafkaGroupCommits


@dataclass(frozen=True)
class LandingInput:
    """The landing directory (a path or a URI) and how many of its new files a batch reads at most."""

    location: LocationLike
    max_files_per_trigger: int = 100

    @property
    def locations(self) -> tuple[Location, ...]:
        return (Location.of(self.location),)

    def spark_packages(self) -> list[str]:
        return []

    def describe(self) -> str:
        return str(Location.of(self.location))

    def prepare(self, checkpoint: Location, stream: str) -> None:
        """A local landing directory is created, so a run can start before the first file
        lands (an object store has no directories to create)."""
        landing = Location.of(self.location)
        if landing.is_local:
            landing.local_path.mkdir(parents=True, exist_ok=True)

    def lines(self, spark: SparkSession, max_line_bytes: int) -> DataFrame:
        from pyspark.sql import functions as F

        capped = jvm_classifier.has_landing_lines(spark)
        reader = spark.readStream.format(jvm_classifier.LANDING_LINES) if capped else spark.readStream.format("text")
        if capped:
            reader = reader.schema(jvm_classifier.LANDING_LINES_SCHEMA)
        read = (
            reader.option("maxFilesPerTrigger", str(self.max_files_per_trigger))
            .option("maxLineBytes", str(max_line_bytes))
            .load(str(Location.of(self.location)))
        )
        return read.select(
            F.col("value").cast("binary").alias("value"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_modification_time").alias("source_mtime"),
            F.lit(None).cast("binary").alias("kafka_key"),
            F.lit(None).cast("string").alias("kafka_topic"),
            F.lit(None).cast("int").alias("kafka_partition"),
            F.lit(None).cast("bigint").alias("kafka_offset"),
            (F.col("line_offset") if capped else F.lit(None).cast("bigint")).alias(LINE_OFFSET),
            (F.col("line_bytes") if capped else F.length("value").cast("bigint")).alias(LINE_BYTES),
        )

    def lost_in_batch(self, df: DataFrame, commit: BatchCommitInfo) -> list[LostRange]:
        """A landing file stays until bronze has read it: nothing is lost."""
        return []

    def group_commits(self, stream: str) -> KafkaGroupCommits | None:
        return None
