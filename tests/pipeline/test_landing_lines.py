"""Landing lines through streamops' own reader: the lines Spark's text source reads, and a line of
any length quarantined as `too_large` with its file and offset, without ever being held whole."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from deltalake import DeltaTable

from streamops.pipeline.bronze.jvm_classifier import LANDING_LINES, LANDING_LINES_SCHEMA, has_landing_lines


def event(i: int) -> bytes:
    return json.dumps({"event_type": "a", "event_id": f"a-{i}", "event_time": "2026-11-22T10:00:00Z", "n": i}).encode()


def test_the_reader_reads_the_lines_the_text_source_reads_and_caps_the_bytes_kept(spark, tmp_path):
    """Any bytes, LF, CR and CRLF, a byte order mark, no final newline, files cut into splits."""
    assert has_landing_lines(spark)
    rng = random.Random(7)
    pieces = [b"\n", b"\r", b"\r\n", b"x", b"\xef\xbb\xbf", b"{}", bytes([rng.randrange(256)])]
    for n in range(6):
        content = b"".join(rng.choice(pieces) * rng.randrange(1, 40) for _ in range(400))
        (tmp_path / f"{n}.txt").write_bytes((b"\xef\xbb\xbf" if n % 2 else b"") + content)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2000")
    try:
        ours = spark.read.format(LANDING_LINES).schema(LANDING_LINES_SCHEMA).option("maxLineBytes", "10")
        ours = ours.load(str(tmp_path)).selectExpr("_metadata.file_name AS f", "*").collect()
        text = spark.read.format("text").load(str(tmp_path)).selectExpr("_metadata.file_name AS f", "value")
        text = text.selectExpr("f", "CAST(value AS BINARY) AS value").collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    by_file = {}
    for row in text:
        by_file.setdefault(row.f, []).append(bytes(row.value))
    read = {}
    for row in sorted(ours, key=lambda r: (r.f, r.line_offset)):
        read.setdefault(row.f, []).append(row)
    assert sorted(read) == sorted(by_file) and len(ours) == len(text) > 1000
    for name, lines in by_file.items():
        content = (tmp_path / name).read_bytes()
        assert [bytes(row.value) for row in read[name]] == [line[:11] for line in lines], name
        assert [row.line_bytes for row in read[name]] == [len(line) for line in lines], name
        for row, line in zip(read[name], lines):
            start = row.line_offset + (3 if row.line_offset == 0 and content.startswith(b"\xef\xbb\xbf") else 0)
            assert content[start : start + len(line)] == line


@pytest.mark.e2e
@pytest.mark.spark
def test_a_line_larger_than_the_driver_heap_is_quarantined_and_the_run_goes_on(tmp_path, connector_name):
    """A 64 MB line among small ones, a 128 MB driver heap (Spark's text source fails there
    with OutOfMemoryError) and a 4 KiB limit: one `too_large` row with the file and offset,
    every other line in bronze."""
    landing = tmp_path / "landing"
    landing.mkdir()
    big = b'{"event_type": "a", "blob": "' + b"x" * (64 << 20) + b'"}'
    before = b"\xef\xbb\xbf" + event(0) + b"\r\n" + event(1) + b"\n"
    (landing / "1.ndjson").write_bytes(before + big + b"\r\n" + event(2) + b"\n" + event(3))
    (landing / "2.ndjson").write_bytes(event(4) + b"\n")
    limit = 4096
    environment = {
        **os.environ,
        "STREAMOPS_DRIVER_MEMORY": "128m",
        # Spark refuses a heap under 450 MB unless told the memory it may plan for
        "PYSPARK_SUBMIT_ARGS": "--conf spark.testing.memory=536870912 pyspark-shell",
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "streamops", "run", "--lake", str(tmp_path / "lake"), "--landing", str(landing),
            "--until-idle", "--delta", connector_name, "--max-record-bytes", str(limit), "--json",
        ],
        capture_output=True, text=True, timeout=600, env=environment,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["failures"] == {}
    (quarantined,) = DeltaTable(str(tmp_path / "lake" / "bronze" / "quarantine")).to_pyarrow_table().to_pylist()
    assert quarantined["reason"] == "too_large"
    assert quarantined["source_file"].endswith("/1.ndjson")
    assert quarantined["detail"] == f"{len(big)} bytes > limit {limit} at byte offset {len(before)}"
    assert quarantined["raw_bytes"] == big[: limit + 1], "the line's first bytes, not all of it"
    bronze = DeltaTable(str(tmp_path / "lake" / "bronze" / "events")).to_pyarrow_table(columns=["event_id"])
    assert sorted(bronze.column("event_id").to_pylist()) == [f"a-{i}" for i in range(5)]
