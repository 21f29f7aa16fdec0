"""Stopping a query while its foreachBatch is inside a JVM call stops it cleanly.

`stop()` interrupts the query's thread and cancels its jobs, so the JVM call running at that
moment fails and the foreachBatch raises Py4JJavaError. Spark then matches the Py4J message (the
Python traceback, Java stack trace included) against StreamExecution.PROXY_ERROR, whose
`(.|\\r\\n|\\r|\\n)*` recurses once per character: on the full text the stream thread died with a
StackOverflowError of java.util.regex frames instead of stopping (status message not "Stopped").
"""

from __future__ import annotations

import re
import threading
import time
import traceback
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException

from streamops.core.storage.location import Location
from streamops.pipeline.exceptions import LakeTableError
from streamops.pipeline.lake_tables import require_writable_lake
from streamops.pipeline.runtime.batch_function import (
    MAX_MESSAGE_CHARS,
    PROXY_ERROR_PREFIX,
    JavaCallFailed,
    NativeCodePanicked,
    batch_function,
    java_call_summary,
)

PIPELINE = Path(__file__).resolve().parents[2] / "src" / "streamops" / "pipeline"
SLOW_JOB = "java_method('java.lang.Thread', 'sleep', 30000L)"
LONG_QUERY_NAME = "stopped_inside_a_job_" + "x" * 100
"""Spark takes a cancelled job for its own stop only if the message holds the run id, which comes
after the query's name: a long name is what pushed it out of a too-short message."""


def test_a_query_stopped_inside_a_jvm_call_stops_cleanly(spark, tmp_path):
    inside = threading.Event()

    def slow(df, batch_id):
        inside.set()
        spark.range(0, 2, numPartitions=2).selectExpr(SLOW_JOB).collect()

    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .writeStream.queryName(LONG_QUERY_NAME)
        .foreachBatch(batch_function(slow))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        assert inside.wait(60), "the first batch never started"
        time.sleep(1)  # the job is running: stop() cancels it and interrupts the query's thread
    finally:
        query.stop()
    # Spark's stop path ran to its end: without the short message the thread died in the regex
    # (StackOverflowError on stderr) and the status kept "Processing new data".
    assert query.status["message"] == "Stopped", query.status
    assert query.exception() is None


def _jvm_interrupted_error(spark) -> Py4JJavaError:
    """A real Py4JJavaError for java.lang.InterruptedException, as a stopped query's call gets."""
    jvm = spark.sparkContext._jvm
    jvm.java.lang.Thread.currentThread().interrupt()
    try:
        jvm.java.lang.Thread.sleep(10)
    except Py4JJavaError as error:
        return error
    raise AssertionError("Thread.sleep was not interrupted")


def _spark_sees_an_interruption(spark, message: str) -> bool:
    """Spark's own check, on the Py4J message a foreachBatch failure with `message` makes."""
    jvm = spark.sparkContext._jvm
    execution = jvm.org.apache.spark.sql.execution.streaming.runtime.StreamExecution
    py4j_message = f"An exception was raised by the Python Proxy. Return Message: {message}"
    proxy_error = jvm.py4j.Py4JException(py4j_message)
    return execution.isInterruptionException(proxy_error, spark.sparkContext._jsc.sc())


def test_the_short_message_is_still_an_interruption_to_spark_and_the_long_one_overflows(spark):
    error = _jvm_interrupted_error(spark)
    summary = java_call_summary(error)
    assert "\n" not in summary and len(summary) <= MAX_MESSAGE_CHARS
    assert summary.startswith(PROXY_ERROR_PREFIX) and "java.lang.InterruptedException" in summary
    assert re.search(r"test_batch_function\.py:\d+ _jvm_interrupted_error\)$", summary)
    assert _spark_sees_an_interruption(spark, f"Traceback ...\nJavaCallFailed: {summary}\n")

    # What Spark got before: a traceback whose Java stack is as long as a stopped batch's.
    raw = "".join(traceback.format_exception(error)) + "\tat org.apache.spark.Run.run(Run.scala:1)\n" * 300
    with pytest.raises(Py4JJavaError, match="StackOverflowError"):
        _spark_sees_an_interruption(spark, raw)


def _cancelled_job_error(spark, group: str, reason: str) -> Py4JJavaError:
    """A real Py4JJavaError of a job cancelled by its job group, as stop() cancels a query's jobs."""
    sc = spark.sparkContext
    errors: list[Py4JJavaError] = []

    def run() -> None:
        sc.setJobGroup(group, "a job stop() cancels", interruptOnCancel=False)
        try:
            spark.range(0, 2, numPartitions=2).selectExpr(SLOW_JOB).collect()
        except Py4JJavaError as error:
            errors.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    while not sc.statusTracker().getJobIdsForGroup(group):
        time.sleep(0.05)
    sc._jsc.sc().cancelJobGroup(group, reason)
    worker.join(60)
    assert errors, "the job was not cancelled"
    return errors[0]


def test_a_cancelled_jobs_message_keeps_the_run_id_spark_looks_for(spark):
    # stop() cancels the query's job group (its run id) with this reason; when the cancellation
    # reaches the batch before the thread's interrupt, the run id in the message is all Spark has.
    run_id = str(uuid.uuid4())
    reason = f"Query {LONG_QUERY_NAME} [id = {uuid.uuid4()}, runId = {run_id}] was stopped"
    summary = java_call_summary(_cancelled_job_error(spark, run_id, reason))
    assert "\n" not in summary and len(summary) <= MAX_MESSAGE_CHARS
    assert run_id in summary and "cancelled" in summary
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", run_id)  # as on the query's own thread
    try:
        assert _spark_sees_an_interruption(spark, f"Traceback ...\nJavaCallFailed: {summary}\n")
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def test_failures_without_java_pass_unchanged_and_java_ones_become_one_line(spark):
    def python_only(df, batch_id):
        raise ValueError("not Java")

    with pytest.raises(ValueError, match="not Java"):
        batch_function(python_only)(None, 0)

    def wraps_a_java_error(df, batch_id):
        try:
            spark.sparkContext._jvm.java.lang.Class.forName("no.such.Clazz")
        except Py4JJavaError as error:
            raise RuntimeError("registry read failed") from error

    with pytest.raises(JavaCallFailed) as failed:
        batch_function(wraps_a_java_error)(None, 0)
    message = str(failed.value)
    assert message.startswith("RuntimeError: registry read failed; from " + PROXY_ERROR_PREFIX)
    assert "java.lang.ClassNotFoundException: no.such.Clazz" in message and "\tat " not in message
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    assert len("".join(traceback.format_exception(failed.value))) < 2 * MAX_MESSAGE_CHARS


def delta_rs_panics(df, batch_id, tmp_path: Path) -> None:
    """delta-rs 1.6 panics (pyo3 PanicException, a BaseException) writing under a `[...]` path."""
    write_deltalake(str(tmp_path / "lake[2]" / "t"), pa.table({"x": [batch_id]}))


def test_a_native_panic_in_a_batch_fails_the_query_instead_of_hanging_it(spark, tmp_path):
    """Py4J answers the JVM only for an Exception: a panic killed the callback thread and the
    query waited for the batch forever (seen: `streamops run` under a `local[2]` directory)."""
    query = (
        spark.readStream.format("rate")
        .load()
        .writeStream.foreachBatch(batch_function(lambda df, b: delta_rs_panics(df, b, tmp_path)))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        with pytest.raises(StreamingQueryException, match="NativeCodePanicked: PanicException: "):
            query.awaitTermination(60)
    finally:
        query.stop()
    with pytest.raises(NativeCodePanicked):
        batch_function(lambda df, b: delta_rs_panics(df, b, tmp_path))(None, 0)

    def interrupted(df, batch_id):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        batch_function(interrupted)(None, 0)


def test_a_lake_path_delta_rs_cannot_write_is_refused_before_any_stream_starts(tmp_path):
    with pytest.raises(LakeTableError, match="choose another --lake") as refused:
        require_writable_lake(Location.of(tmp_path / "lake_local[2]"))
    assert "\n" not in str(refused.value)
    require_writable_lake(Location.of(tmp_path / "lake with spaces#and%signs"))
    assert not list((tmp_path / "lake with spaces#and%signs").iterdir()), "the check leaves nothing behind"


def test_every_pipeline_stream_hands_spark_a_batch_function():
    calls = {
        path.name: re.findall(r"\.foreachBatch\(([^()]*(?:\([^()]*\))?)\)", path.read_text())
        for path in PIPELINE.rglob("*.py")
    }
    found = {name: args for name, args in calls.items() if args}
    assert set(found) >= {"bronze_stream.py", "management_stream.py", "silver_stream.py"}, found
    assert all(arg.startswith("batch_function(") for args in found.values() for arg in args), found
