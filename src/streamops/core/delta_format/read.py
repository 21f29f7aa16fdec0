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

The same holds for tables on object stores: their Parquet files are read through Arrow's
native S3, Azure or GCS filesystem, configured from the storage layer's options
(`streamops.core.storage.arrow_filesystem`), never through a Python file object.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
from deltalake import DeltaTable

from streamops.core.storage.arrow_filesystem import arrow_filesystem
from streamops.core.storage.location import Location, LocationLike


def open_table(table: LocationLike) -> DeltaTable:
    """delta-rs's handle on a table anywhere, with the storage layer's options."""
    location = Location.of(table)
    return DeltaTable(str(location), storage_options=location.storage_options())


def is_table(table: LocationLike) -> bool:
    location = Location.of(table)
    return DeltaTable.is_deltatable(str(location), storage_options=location.storage_options())


def read_delta(
    table: DeltaTable | LocationLike,
    columns: Sequence[str] | None = None,
    filters: Any = None,
) -> pa.Table:
    """`DeltaTable.to_pyarrow_table(columns, filters)`, read through Arrow's native filesystem."""
    dt = table if isinstance(table, DeltaTable) else open_table(table)
    return dt.to_pyarrow_table(
        columns=list(columns) if columns is not None else None,
        filters=filters,
        filesystem=arrow_filesystem(Location.of(dt.table_uri)),
    )
