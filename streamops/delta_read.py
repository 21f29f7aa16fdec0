"""The one way streamops reads Delta table rows into Arrow: delta-rs for the snapshot, Arrow's
native local filesystem for the Parquet files.

Why not plain `DeltaTable.to_pyarrow_table()`: by default deltalake hands pyarrow a
`PyFileSystem(DeltaStorageHandler)`, so every Parquet file of the scan is an
`arrow::py::PyReadableFile` that owns a Python object. Arrow's async scanner can drop the last
reference to the scan (ExecPlan -> SourceNode -> ... -> parquet FileReaderImpl ->
SerializedFile -> PyReadableFile) on one of its own thread-pool threads, a moment *after*
`to_table()` has returned. That destructor takes the GIL (`OwnedRefNoGIL::~OwnedRefNoGIL` ->
`PyGILState_Ensure`). If the main thread is already finalizing the interpreter, CPython ends
the calling thread with `pthread_exit`, whose forced unwind runs into a `noexcept` C++
destructor: `std::terminate`, "terminate called without an active exception", SIGABRT, exit
134 — after the command had finished its work. With Arrow's own `LocalFileSystem` the scan
holds no Python object, so its teardown never needs the interpreter, whenever it happens.

Local tables only (the lake is a local directory): for any other URI the reader falls back to
deltalake's default filesystem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse
from urllib.request import url2pathname

import pyarrow as pa
import pyarrow.fs as pa_fs
from deltalake import DeltaTable


def local_root(table: DeltaTable) -> str | None:
    """The table's directory on this machine, or None when it lives elsewhere (s3://, ...)."""
    uri = table.table_uri
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return url2pathname(parsed.path)
    if parsed.scheme == "":
        return uri
    return None


def arrow_filesystem(table: DeltaTable) -> pa_fs.FileSystem | None:
    """A native Arrow filesystem rooted at the table (the file paths delta-rs hands pyarrow are
    relative to the table root and already decoded to their on-disk spelling), or None for
    deltalake's default."""
    root = local_root(table)
    if root is None:
        return None
    return pa_fs.SubTreeFileSystem(str(Path(root).resolve()), pa_fs.LocalFileSystem())


def read_delta(
    table: DeltaTable | str | Path,
    columns: Sequence[str] | None = None,
    filters: Any = None,
) -> pa.Table:
    """`DeltaTable.to_pyarrow_table(columns, filters)`, read through `arrow_filesystem`."""
    dt = table if isinstance(table, DeltaTable) else DeltaTable(str(table))
    return dt.to_pyarrow_table(
        columns=list(columns) if columns is not None else None,
        filters=filters,
        filesystem=arrow_filesystem(dt),
    )
