"""PySpark's Python processes end quietly when Spark hangs up on them (`runtime/hang_ups.py`).

Each case runs in a new interpreter, as PySpark's processes do, and fails the way they fail when
a stopping query or a failed stage closes the JVM's end of their socket: the next `read_int`
meets the end of the stream, and reporting that on the closed socket breaks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
from deltalake import write_deltalake

HANG_UP = """
    import socket
    from pyspark.serializers import read_int, write_int

    ours, spark = socket.socketpair()
    spark.close()
    stream = ours.makefile("rwb")
    try:
        read_int(stream)
    except BaseException:
        write_int(-2, stream)
        stream.flush()
"""


def run_as_runner(table: str, *, open_reader: bool, fails_with: str = HANG_UP) -> subprocess.CompletedProcess:
    opening = f"""
        from streamops.pipeline.delta_connector.delta_source import DeltaSource
        source = DeltaSource({{"path": {table!r}}})
        source.streamReader(source.schema())
    """
    script = textwrap.dedent(opening if open_reader else "") + textwrap.dedent(fails_with)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def a_table(tmp_path) -> str:
    path = str(tmp_path / "source")
    write_deltalake(path, pa.table({"v": [1, 2]}))
    return path


def test_a_source_process_the_jvm_hangs_up_on_ends_without_a_traceback(tmp_path):
    table = a_table(tmp_path)

    unopened = run_as_runner(table, open_reader=False)
    opened = run_as_runner(table, open_reader=True)

    assert unopened.returncode != 0 and "BrokenPipeError" in unopened.stderr, unopened.stderr
    assert opened.returncode != 0
    assert opened.stderr == ""


def test_any_other_failure_of_the_source_process_still_prints_its_traceback(tmp_path):
    table = a_table(tmp_path)
    failing_while_reading = """
        import socket
        from pyspark.serializers import read_int

        ours, spark = socket.socketpair()
        spark.close()
        try:
            read_int(ours.makefile("rb"))
        except EOFError:
            raise ValueError("planning failed")
    """

    failed = run_as_runner(table, open_reader=True, fails_with="raise ValueError('planning failed')")
    chained = run_as_runner(table, open_reader=True, fails_with=failing_while_reading)

    assert "Traceback" in failed.stderr and "ValueError: planning failed" in failed.stderr
    assert "EOFError" in chained.stderr and "ValueError: planning failed" in chained.stderr


def run_daemon_worker(script: str, **env: str) -> subprocess.CompletedProcess:
    """`script` in a new interpreter after streamops' daemon module is imported, as Spark's
    daemon process imports it (`spark.python.daemon.module`)."""
    opening = "from streamops.pipeline.runtime import python_daemon\n"
    return subprocess.run(
        [sys.executable, "-c", opening + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_daemon_worker_the_jvm_hung_up_on_ends_without_a_traceback():
    """A worker whose task socket Spark closed: its flush breaks, which Spark makes raise
    (`spark.python.daemon.killWorkerOnFlushFailure`, on by default), as PySpark's own worker
    then prints; streamops' worker ends with the code PySpark gives a failed flush."""
    closed_socket = """
        import socket
        ours, jvm = socket.socketpair()
        jvm.close()
        print(python_daemon.{worker}(ours, True))
    """

    pyspark_own = run_daemon_worker(
        closed_socket.format(worker="_serve"), PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE="1"
    )
    streamops = run_daemon_worker(closed_socket.format(worker="worker"), PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE="1")

    assert "BrokenPipeError" in pyspark_own.stderr, pyspark_own.stderr
    assert (streamops.stdout, streamops.stderr) == ("1\n", "")


def test_a_daemon_worker_ends_quietly_on_every_hang_up_and_passes_any_other_error_on():
    """End of file is how a reused worker waiting for its next task meets the hang-up
    (`worker.main`'s last `read_int`, outside its own error handling)."""
    raising = """
        def serve(sock, authenticated):
            raise {error}

        python_daemon._serve = serve
        print(python_daemon.worker(None, True))
    """

    hang_ups = [
        run_daemon_worker(raising.format(error=e)) for e in ("EOFError", "BrokenPipeError", "ConnectionResetError")
    ]
    other = run_daemon_worker(raising.format(error="ValueError('a real failure')"))

    assert [(r.stdout, r.stderr) for r in hang_ups] == [("1\n", "")] * 3
    assert "ValueError: a real failure" in other.stderr and other.returncode != 0
