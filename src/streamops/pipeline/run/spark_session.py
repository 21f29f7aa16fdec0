"""The one SparkSession builder: every command, test and benchmark gets Spark from here."""

from __future__ import annotations

from streamops.core.extras import require

require("pipeline", __name__)

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from streamops.pipeline.bronze.jvm_classifier import (
    CHECKPOINT_MANAGER_SETTING,
    LOCAL_FILE_CHECKPOINT_MANAGER,
    LOCAL_FILE_LOG_STORE,
    LOG_STORE_SETTING,
    classifier_jar,
    jar_has_class,
)
from streamops.pipeline.exceptions import JavaNotFoundError, SparkEndedError
from streamops.pipeline.runtime.jvm import driver_memory
from streamops.pipeline.runtime.process_memory import give_back_freed_memory
from streamops.pipeline.runtime.spark_jars import (
    JARS_DIR_ENV,
    RESOLVER_ENV,
    JarsUnresolvedError,
    ivy_has,
    jar_settings,
    remember_ivy_resolution,
)
from streamops.pipeline.runtime.spark_scratch import LOCAL_DIR_SETTING, process_scratch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOG4J_CONFIG = Path(__file__).parent.parent / "runtime" / "log4j2.properties"
ARROW_JAVA_OPTIONS = "-Darrow.enable_unsafe_memory_access=true"
"""Every row between Spark and Python (the Delta source's batches, the sink's input) is read
and written through Arrow Java buffers, which check bounds and reference counts on every
access by default, a measurable share of the JVM's CPU under sustained load. The buffers are
Spark's and pyarrow's own (BENCHMARKS.md, "Sustained load, 8,000 events/s × 300 types")."""
JAVA_OPTIONS_ENV = "STREAMOPS_JAVA_OPTIONS"
"""Extra options for the driver's and the executors' JVMs. A short run (a test, a one-off
backfill) can set `-XX:TieredStopAtLevel=1`: the JIT's optimising tier then never compiles,
which costs a short run more CPU than it saves (BENCHMARKS.md, "CI's CPU")."""


def ensure_java() -> None:
    """Fail with one line, not a Py4J stack trace, when no JVM is available."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java"):
        return
    raise JavaNotFoundError(
        "Spark needs Java 17 and `java` was not found: install it "
        "(e.g. `apt-get install -y openjdk-17-jre-headless`) or set JAVA_HOME"
    )


def jvm_options(extra: str | None = None) -> str:
    """The options every Spark JVM of a run gets: Arrow's, then `extra` (`$STREAMOPS_JAVA_OPTIONS`
    when None)."""
    return " ".join(
        filter(None, [ARROW_JAVA_OPTIONS, os.environ.get(JAVA_OPTIONS_ENV, "") if extra is None else extra])
    )


DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"
"""Off: with it on (PySpark 4's default), every Column function call also records its Python
call site in the JVM for error messages. The pipeline builds its projections from hundreds of
such calls each time a group's schemas change: silver's routes for 150 tables with 10 rules
took 6,300 round trips to the JVM and 0.29 s with it, 1,900 and 0.13 s without. The call sites
would name streamops' own lines, not the user's."""
PYTHON_DAEMON = "streamops.pipeline.runtime.python_daemon"
"""PySpark's daemon without the broken-pipe traceback of a cancelled task (see the module)."""


def build_spark(
    master: str | None = None,
    app_name: str = "streamops",
    conf: Mapping[str, str] | None = None,
    packages: Sequence[str] = (),
    java_options: str | None = None,
):
    """Return the active SparkSession, creating it with streamops defaults if needed.

    Workers must run the driver's interpreter (PySpark otherwise picks whatever `python3` is on
    PATH, which may lack pyarrow), logs are kept to errors, and time is UTC so Delta timestamps
    mean the same thing on every machine. Spark's scratch goes to a directory of the process's
    own, which the next start removes if the process was killed (runtime/spark_scratch.py).
    `packages` are Maven coordinates of JARs the run needs (delta-spark, connectors), resolved
    as `streamops.pipeline.runtime.spark_jars` says; `java_options` extra options for the
    driver's and executors' JVMs (`jvm_options`).
    """
    ensure_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from streamops.pipeline.delta_connector.delta_source import DeltaSource
    from streamops.pipeline.delta_connector.lake_sink import LakeSink

    cores = os.cpu_count() or 2
    options = jvm_options(java_options)
    scratch = process_scratch(conf or {})
    driver_options = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG} {options}"
    if scratch is not None:
        driver_options += f' "-Djava.io.tmpdir={scratch}"'
    settings: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": driver_memory("4g"),
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(max(2, cores)),
        "spark.default.parallelism": str(max(2, cores)),
        "spark.driver.extraJavaOptions": driver_options,
        "spark.executor.extraJavaOptions": options,
        "spark.sql.streaming.metricsEnabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.sql.json.enablePartialResults": "true",
        DATAFRAME_DEBUGGING: "false",
        "spark.python.daemon.module": PYTHON_DAEMON,
        **({LOCAL_DIR_SETTING: str(scratch)} if scratch is not None else {}),
    }
    settings.update(conf or {})
    give_back_freed_memory(settings)
    for key, value in jar_settings(packages, settings).items():
        settings[key] = ",".join(filter(None, [settings.get(key), value]))
    jar = classifier_jar()
    if jar is not None:
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars"), str(jar)]))
        settings.setdefault(LOG_STORE_SETTING, LOCAL_FILE_LOG_STORE)
        if jar_has_class(jar, LOCAL_FILE_CHECKPOINT_MANAGER):
            settings.setdefault(CHECKPOINT_MANAGER_SETTING, LOCAL_FILE_CHECKPOINT_MANAGER)
    builder = SparkSession.builder.master(master or os.environ.get("STREAMOPS_SPARK_MASTER", DEFAULT_MASTER)).appName(
        app_name
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as error:  # noqa: BLE001 - the JVM did not start: say why in one line if we can
        if "spark.jars.packages" in settings and not ivy_has(packages):
            raise JarsUnresolvedError(
                f"Spark could not resolve {', '.join(packages)} from Maven Central through Ivy: check the "
                f"network or proxy, or set {RESOLVER_ENV}=maven (uses Maven's settings.xml) or {JARS_DIR_ENV}=DIR "
                "(docs: Running on a cluster)"
            ) from error
        raise
    if "spark.jars.packages" in settings:
        remember_ivy_resolution(packages, spark.sparkContext.getConf().get("spark.repl.local.jars", ""))
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(DeltaSource)
    spark.dataSource.register(LakeSink)
    return spark


JVM_EXITS = {
    0: "its Python driver's pipe closed",
    50: "an uncaught fatal error in a task or thread",
    52: "out of memory: raise STREAMOPS_DRIVER_MEMORY",
    -6: "it crashed: look for an hs_err_pid file in the working directory",
    -9: "killed with SIGKILL, by the kernel's OOM killer if nobody else",
    -15: "stopped with SIGTERM",
}
"""What a Spark JVM's exit code says: Spark's own codes (`SparkExitCode`), or the signal that
ended it, negative (`spark-submit` execs the JVM, so PySpark's `Popen` is the JVM)."""


def stop_spark(spark: SparkSession) -> None:
    """Stop Spark without the traceback PySpark can print on the way out.

    PySpark stops the JVM's context before its own accumulator server: when the JVM drops the
    server's connection first, the server's handler thread reads end-of-file and `socketserver`
    prints an `EOFError` traceback to stderr, on a clean stop. Shutting the server down first
    (PySpark's own `shutdown`, which the later stop repeats harmlessly) closes that window.
    A JVM that already exited is one line with its exit code (SparkEndedError), not the Py4J
    traceback `stop` would fail with."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.shutdown()
    code = jvm_exit_code(spark)
    if code is not None:
        raise SparkEndedError(
            f"Spark's JVM exited with code {code} during the run ({JVM_EXITS.get(code, 'see its messages above')}); "
            "start the run again: every stream resumes from its checkpoint, nothing is lost"
        )
    spark.stop()


def jvm_exit_code(spark: SparkSession) -> int | None:
    """The exit code of the JVM PySpark launched for `spark`, or None while it runs (or when
    PySpark did not launch it: a gateway given through PYSPARK_GATEWAY_PORT)."""
    gateway = spark.sparkContext._gateway
    process = getattr(gateway, "proc", None)
    return None if process is None else process.poll()
