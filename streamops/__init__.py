"""streamops: observability and stream operations for Spark Structured Streaming on Delta Lake.

This package is the core every other package builds on, and it needs no Spark: readers and
writers of the on-disk formats (Delta logs and source offsets; a Spark checkpoint's offset,
commit, metadata and file-source logs, and the whole checkpoint), the lake layout, commit
metadata, backlog, the error base class, CLI helpers and the command-line root. It imports no
other streamops package (tests/test_architecture.py).
"""

__version__ = "0.1.0"
