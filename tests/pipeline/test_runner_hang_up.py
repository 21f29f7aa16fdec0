"""The embedded Delta source's planning process ends quietly when Spark hangs up on it.

Each case runs in a new interpreter, as PySpark's `python_streaming_source_runner` does, and
fails the way that process fails when a stopping query closes the JVM's end of its socket: the
next `read_int` meets the end of the stream, and reporting that on the closed socket breaks.
"""

from __future__ import annotations

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
