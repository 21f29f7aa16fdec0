"""Spark's own access to a lake or landing on S3: the S3A connector and its settings, taken
from the same environment every other streamops reader uses.

Spark reads the landing files and keeps its checkpoints through Hadoop's filesystems; for
`s3://` and `s3a://` that is S3A (`org.apache.hadoop:hadoop-aws`, at the version of the Hadoop
PySpark bundles, which brings the AWS SDK v2 bundle and `analyticsaccelerator-s3`). The
endpoint, region, path-style access and plain http come from `AWS_ENDPOINT_URL`, `AWS_REGION`
and `AWS_ALLOW_HTTP`, as delta-rs and the tools read them (streamops.core.storage.store_options);
credentials come from S3A's default chain (the `AWS_*` variables, profiles, instance roles).
Retries are bounded so a store that stops answering fails a batch in seconds, not hours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from streamops.core.storage.location import Location
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.runtime.jvm import jvm_has_class

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
HADOOP_JAR = re.compile(r"hadoop-client-api-(\d[\w.\-]*)\.jar$")
RETRY_SETTINGS = {
    "spark.hadoop.fs.s3a.attempts.maximum": "3",
    "spark.hadoop.fs.s3a.retry.limit": "3",
    "spark.hadoop.fs.s3a.retry.interval": "500ms",
    "spark.hadoop.fs.s3a.retry.throttle.limit": "3",
    "spark.hadoop.fs.s3a.connection.establish.timeout": "5s",
    "spark.hadoop.fs.s3a.connection.timeout": "60s",
}
"""At most a few seconds of retries per request (S3A's defaults retry for minutes)."""


def hadoop_version() -> str:
    """The Hadoop version PySpark bundles (its hadoop-client-api JAR)."""
    import pyspark

    for jar in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"):
        match = HADOOP_JAR.search(jar.name)
        if match:
            return match.group(1)
    raise RuntimeError("PySpark ships no hadoop-client-api JAR: cannot pick hadoop-aws's version")


def object_store_needs(locations: Iterable[Location]) -> tuple[dict[str, str], list[str]]:
    """Spark settings and JARs (Maven coordinates) for the object stores among `locations`."""
    s3 = [location for location in locations if location.root.kind == "s3"]
    if not s3:
        return {}, []
    options = s3[0].store_options_for_clients()
    conf = {
        "spark.hadoop.fs.s3.impl": S3A,
        "spark.hadoop.fs.s3a.impl": S3A,
        **RETRY_SETTINGS,
    }
    region = options.config.get("aws_region")
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    if options.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = options.endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(not options.allow_http).lower()
    return conf, [f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"]


HADOOP_FILESYSTEMS = {
    "azure": ("org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem", "org.apache.hadoop:hadoop-azure"),
    "gcs": ("com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem", "com.google.cloud.bigdataoss:gcs-connector"),
}
"""Stores whose Hadoop connector streamops does not bring: the cluster (or spark-defaults.conf)
must, as Databricks, HDInsight and Dataproc do."""


def require_store_connectors(spark: SparkSession, locations: Iterable[Location]) -> None:
    """A lake or landing on Azure or GCS needs that store's Hadoop connector in the JVM: without it
    Spark would fail its first batch with "No FileSystem for scheme"; this says so before."""
    for location in locations:
        needed = HADOOP_FILESYSTEMS.get(location.root.kind)
        if needed is not None and not jvm_has_class(spark, needed[0]):
            raise PipelineConfigError(
                f"Spark has no Hadoop connector for `{location}`: add {needed[1]} (at your cluster's Hadoop "
                "version, with its credentials settings) to spark.jars.packages in spark-defaults.conf, or run "
                "on a cluster that has it (docs/object-storage.md)"
            )
