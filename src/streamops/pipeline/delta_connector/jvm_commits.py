"""delta-spark's commit calls made inside the driver's JVM (jvm/DeltaCommits.java), for
native_commit.py.

Through py4j a native commit made about 76 round trips (each class looked up, each method, each
Scala conversion): 17.5 ms a table on one thread, of which delta-spark's commit is about 6.5
(BENCHMARKS.md, "Native commits"). The Java helper makes the same calls in three, and starts a
transaction without listing the table's log when this process made its last commit (relisting
every CHECKPOINT_EVERY versions, which picks up the checkpoints written outside Spark). It is compiled
at run time against the session's own delta-spark jars, found where the driver loaded them, and
loaded beside them (a class loader whose parent is delta-spark's), so it calls the Delta and
Scala versions the session runs. Without a JDK compiler, with delta-spark in a jar that is not a
local file, or with a delta-spark whose API it does not compile against, the commits stay on
py4j (`None`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from streamops.pipeline.delta_connector.native_checkpoints import CHECKPOINT_EVERY
from streamops.pipeline.runtime.java_build import build_jar, pyspark_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("jvm") / "DeltaCommits.java"
CLASS_NAME = "streamops.jvm.DeltaCommits"
DELTA_CLASSES = ("org.apache.spark.sql.delta.DeltaLog", "io.delta.storage.LogStore")
"""A class of delta-spark's jar and one of delta-storage's: the helper compiles against both."""


def _local_jar(java_class: Any) -> str | None:
    source = java_class.getProtectionDomain().getCodeSource()
    location = urlparse(source.getLocation().toString()) if source is not None else None
    if location is None or location.scheme != "file":
        return None
    return unquote(location.path)


_loaded: dict[str, JvmCommits | None] = {}
_loading = threading.Lock()


def delta_commits(spark: SparkSession) -> JvmCommits | None:
    """The application's `DeltaCommits`, loaded once per Spark application; None when the
    commits stay on py4j."""
    application = spark.sparkContext.applicationId
    with _loading:
        if application not in _loaded:
            _loaded[application] = _load(spark)
        return _loaded[application]


def _load(spark: SparkSession) -> JvmCommits | None:
    jvm = spark.sparkContext._jvm
    gateway = spark.sparkContext._gateway
    assert jvm is not None and gateway is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        classes = [loader.loadClass(name) for name in DELTA_CLASSES]
    except Exception:  # noqa: BLE001 - Py4J wraps ClassNotFoundException: no delta-spark here
        return None
    jars = [_local_jar(java_class) for java_class in classes]
    if None in jars:
        return None
    jar = build_jar("streamops-delta-commits", [SOURCE], [*(j for j in jars if j), f"{pyspark_jars()}/*"])
    if jar is None:
        log.info("native commits go through py4j: the helper did not compile against %s", ", ".join(map(str, jars)))
        return None
    urls = gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
    helper = jvm.java.net.URLClassLoader(urls, classes[0].getClassLoader()).loadClass(CLASS_NAME)
    parameters = gateway.new_array(jvm.java.lang.Class, 1)
    parameters[0] = jvm.java.lang.Integer.TYPE
    arguments = gateway.new_array(jvm.java.lang.Object, 1)
    arguments[0] = CHECKPOINT_EVERY
    return JvmCommits(helper.getDeclaredConstructor(parameters).newInstance(arguments))


@dataclass(frozen=True)
class JvmCommits:
    """The helper as native_commit.py calls it: a transaction per table, given the Python session
    whose settings its steps run with."""

    helper: Any

    def start(self, session: SparkSession, table: str) -> Any:
        return self.helper.start(session._jsparkSession, table)
