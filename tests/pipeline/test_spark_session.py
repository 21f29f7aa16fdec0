import subprocess
import sys

import pytest

from streamops.pipeline.exceptions import JavaNotFoundError
from streamops.pipeline.run.spark_session import ensure_java


def test_missing_java_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError, match="Spark needs Java 17") as raised:
        ensure_java()
    assert "\n" not in str(raised.value)


def test_cli_reports_missing_java_in_one_line_without_a_traceback(tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamops",
            "run",
            "--lake",
            str(tmp_path / "lake"),
            "--landing",
            str(landing),
            "--until-idle",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "streamops: error: Spark needs Java 17 and `java` was not found: install it "
        "(e.g. `apt-get install -y openjdk-17-jre-headless`) or set JAVA_HOME"
    ]


def test_streamops_java_options_come_after_arrows_and_an_explicit_value_wins(monkeypatch):
    from streamops.pipeline.run.spark_session import ARROW_JAVA_OPTIONS, JAVA_OPTIONS_ENV, jvm_options

    monkeypatch.setenv(JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=1 -Xss4m")
    assert jvm_options() == f"{ARROW_JAVA_OPTIONS} -XX:TieredStopAtLevel=1 -Xss4m"
    assert jvm_options("") == ARROW_JAVA_OPTIONS
    monkeypatch.delenv(JAVA_OPTIONS_ENV)
    assert jvm_options() == ARROW_JAVA_OPTIONS


def test_the_drivers_jvm_runs_with_the_options_it_was_given(spark):
    from streamops.pipeline.run.spark_session import ARROW_JAVA_OPTIONS

    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert ARROW_JAVA_OPTIONS in arguments
    assert "-XX:TieredStopAtLevel=1" not in arguments  # the test session's JVM keeps the full JIT


def test_python_workers_give_freed_memory_back_to_the_system(spark):
    from streamops.pipeline.runtime.process_memory import MEMORY_ENVIRONMENT

    def report(batches):
        import os

        import pyarrow as worker_pa

        for _ in batches:
            names = sorted(MEMORY_ENVIRONMENT)
            yield worker_pa.RecordBatch.from_pydict(
                {
                    "name": [*names, "arrow pool"],
                    "value": [*(os.environ.get(n) for n in names), worker_pa.default_memory_pool().backend_name],
                }
            )

    rows = spark.range(1, numPartitions=1).mapInArrow(report, "name string, value string").collect()
    assert {row.name: row.value for row in rows} == {**MEMORY_ENVIRONMENT, "arrow pool": "system"}


def test_a_users_environment_or_spark_setting_wins_over_the_memory_defaults(monkeypatch):
    from streamops.pipeline.runtime.process_memory import give_back_freed_memory

    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    settings = {"spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    give_back_freed_memory(settings)
    assert settings["spark.executorEnv.MALLOC_ARENA_MAX"] == "8"
    assert settings["spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"
    assert settings["spark.executorEnv.MALLOC_MMAP_THRESHOLD_"] == "131072"


def test_each_connector_sizes_the_drivers_heap_unless_the_environment_does(monkeypatch):
    from streamops.pipeline.delta_connector.connector import session_needs
    from streamops.pipeline.runtime.jvm import DRIVER_MEMORY_ENV

    monkeypatch.delenv(DRIVER_MEMORY_ENV, raising=False)
    assert session_needs("embedded")[0]["spark.driver.memory"] == "1g"
    assert session_needs("native")[0]["spark.driver.memory"] == "4g"
    monkeypatch.setenv(DRIVER_MEMORY_ENV, "2g")
    assert {session_needs(name)[0]["spark.driver.memory"] for name in ("embedded", "native")} == {"2g"}


CANCELLED_MID_WRITE = """
import pyarrow as pa
from streamops.pipeline.run.spark_session import build_spark, stop_spark

def rows(batches):
    import time
    from pyspark import TaskContext
    for _ in batches:
        pass
    if TaskContext.get().partitionId() == 0:
        time.sleep(1)
        raise ValueError("the task that fails")
    batch = pa.RecordBatch.from_pydict({"id": list(range(100_000))})
    while True:
        yield batch

spark = build_spark(master="local[2]")
for _ in range(2):
    try:
        spark.range(2, numPartitions=2).mapInArrow(rows, "id long").write.format("noop").mode("overwrite").save()
    except Exception as error:
        print(type(error).__name__)
stop_spark(spark)
"""


@pytest.mark.spark
def test_a_task_cancelled_while_its_python_worker_writes_prints_no_traceback(tmp_path):
    """One task fails while the other streams rows: Spark cancels the second, its worker's next
    flush meets a closed socket, and PySpark's own daemon printed that traceback to the
    terminal under the command's one-line error (it did on every run before)."""
    script = tmp_path / "cancelled_mid_write.py"
    script.write_text(CANCELLED_MID_WRITE)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["PythonException", "PythonException"]
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr[-3000:]


JVM_KILLED = """
import os
import signal

from streamops.pipeline.exceptions import SparkEndedError
from streamops.pipeline.run.spark_session import build_spark, stop_spark

spark = build_spark(master="local[1]")
jvm = spark.sparkContext._gateway.proc
os.kill(jvm.pid, signal.SIGKILL)
jvm.wait(timeout=60)
try:
    stop_spark(spark)
except SparkEndedError as error:
    print(error)
"""


@pytest.mark.spark
def test_a_jvm_that_died_under_the_run_is_one_line_with_its_exit_code(tmp_path):
    """Stopping Spark after its JVM is gone said nothing of why: PySpark's `stop` failed with
    a Py4J connection traceback. The line names the exit code and what it means."""
    script = tmp_path / "jvm_killed.py"
    script.write_text(JVM_KILLED)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "Spark's JVM exited with code -9 during the run (killed with SIGKILL, by the kernel's OOM killer if "
        "nobody else); start the run again: every stream resumes from its checkpoint, nothing is lost"
    ]
