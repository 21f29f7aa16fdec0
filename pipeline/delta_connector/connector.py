"""The seam between pipeline logic and the Delta implementation it runs on.

`embedded` (the default) reads with the delta-rs streaming source and writes with the
idempotent delta-rs writer; `native` uses delta-spark's `format("delta")` where a cluster has
its JARs. The pipeline calls only these methods, so there is one implementation of bronze,
silver and management whichever connector runs underneath.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping, Protocol

import pyarrow as pa

from pipeline.delta_connector.batch_writer import WriteOutcome, committed_batch, write_batch
from pipeline.delta_connector.delta_source import FORMAT_NAME
from pipeline.exceptions import PipelineConfigError
from pipeline.lake_tables import table_access
from streamops.commit_metadata import BatchCommitInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ConnectorName = Literal["embedded", "native"]
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
NATIVE_SPARK_CONF = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
"""Session settings the native connector needs; the JARs come from the cluster (or spark.jars)."""


class DeltaConnector(Protocol):
    name: ConnectorName

    def read_stream(
        self, spark: "SparkSession", table: Path, options: Mapping[str, str] | None = None
    ) -> "DataFrame": ...

    def write_batch(self, table: Path, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome: ...


@dataclass(frozen=True)
class EmbeddedDelta:
    """Delta through delta-rs inside Spark: no JARs needed."""

    name: ConnectorName = "embedded"

    def read_stream(
        self, spark: "SparkSession", table: Path, options: Mapping[str, str] | None = None
    ) -> "DataFrame":
        reader = spark.readStream.format(FORMAT_NAME).option("path", str(table))
        for key, value in (options or {}).items():
            reader = reader.option(key, value)
        return reader.load()

    def write_batch(self, table: Path, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
        with table_access(table, f"write batch {commit.batch_id} of `{commit.stream}` to"):
            return write_batch(table, data, commit)


@dataclass(frozen=True)
class NativeDelta:
    """delta-spark's own source and sink, for clusters that have the Delta JARs."""

    spark: "SparkSession"
    name: ConnectorName = "native"

    def read_stream(
        self, spark: "SparkSession", table: Path, options: Mapping[str, str] | None = None
    ) -> "DataFrame":
        reader = spark.readStream.format("delta")
        for key, value in (options or {}).items():
            reader = reader.option(key, value)
        return reader.load(str(table))

    def write_batch(self, table: Path, data: pa.Table, commit: BatchCommitInfo) -> WriteOutcome:
        if data.num_rows == 0:
            return WriteOutcome("empty")
        done = committed_batch(table, commit.stream)
        if done is not None and done >= commit.batch_id:
            return WriteOutcome("skipped", rows=data.num_rows)
        (
            self.spark.createDataFrame(data)
            .write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .option("txnAppId", commit.stream)
            .option("txnVersion", commit.batch_id)
            .option("userMetadata", json.dumps(commit.to_custom_metadata(), sort_keys=True))
            .save(str(table))
        )
        return WriteOutcome("written", rows=data.num_rows)


def connector_for(name: str, spark: "SparkSession") -> DeltaConnector:
    if name == "embedded":
        return EmbeddedDelta()
    if name == "native":
        if not _jvm_has_class(spark, DELTA_EXTENSION):
            raise PipelineConfigError(
                "the native connector needs delta-spark's JARs on the Spark classpath and none were "
                "found: run on a cluster that has them (or set spark.jars), or use --delta embedded"
            )
        return NativeDelta(spark)
    raise PipelineConfigError(f"unknown Delta connector `{name}`: use `embedded` or `native`")


def _jvm_has_class(spark: "SparkSession", name: str) -> bool:
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(name)  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - Py4J wraps ClassNotFoundException
        return False
    return True
