"""Doctor findings about the lake's tables themselves: data files a table's log lists that the
store lacks or holds at another size (`table_files_damaged`).

A stream's own checks see only the files it has not read yet, so a file deleted after every
stream read it leaves each checkpoint healthy while the table is broken: every read of its
current snapshot (a batch query, a new stream, a rewind or a replay over that version) fails on
the file. The check is `streamops lake fsck`'s, without the repair (`fsck_table`): one stat per
live file of each table, and each file is an error while a stream still has to read it, a
warning otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from deltalake.exceptions import DeltaError

from streamops.checkpoint_tools.delta_checks import MAX_LISTED_FILES, MAX_NAMED_FILES
from streamops.checkpoint_tools.doctor import workers_for
from streamops.checkpoint_tools.findings import SEVERITY_RANK, Finding, exit_code, worst
from streamops.checkpoint_tools.stream_readers import StreamReaders, find_readers
from streamops.checkpoint_tools.table_fsck import FsckResult, fsck_table, rows_text
from streamops.core.delta_format.damaged_files import DamagedFile
from streamops.core.exceptions import StreamopsError, TableNotFoundError, error_line
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.errors import StorageError
from streamops.core.storage.location import Location


@dataclass(frozen=True)
class TableDiagnosis:
    """One table of the lake and what is wrong with its data files."""

    table: Location
    findings: tuple[Finding, ...]

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    @property
    def worst(self) -> str | None:
        return worst(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"table": str(self.table), "worst": self.worst, "findings": [f.to_json() for f in self.findings]}


def diagnose_lake_tables(
    lake: LakeLike, readers: StreamReaders | None = None, workers: int | None = None
) -> list[TableDiagnosis]:
    """Every Delta table of the lake (what `lake fsck --lake` checks), in the layout's order.

    `readers` (`find_readers(lake)` when not given) decides each file's severity. A table that
    cannot be read becomes a `check_failed` finding; a store that refuses (credentials, access)
    raises its `StorageError`."""
    lake = LakeLayout.at(lake).require()
    readers = readers if readers is not None else find_readers(lake)
    tables = lake.table_dirs()
    workers = workers if workers is not None else workers_for(tables)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = list(pool.map(lambda table: _diagnose_table(lake, table, readers), tables))
    return [diagnosis for diagnosis in found if diagnosis is not None]


def _diagnose_table(lake: LakeLayout, table: Location, readers: StreamReaders) -> TableDiagnosis | None:
    try:
        result = fsck_table(table, repair=False, readers=readers)
    except StorageError:
        raise
    except TableNotFoundError:
        return None  # a table whose first commit is still being written
    except (StreamopsError, DeltaError, OSError) as error:
        return TableDiagnosis(table, (_unreadable(table, error),))
    findings = damaged_file_findings(result, lake)
    return TableDiagnosis(table, tuple(sorted(findings, key=lambda f: -SEVERITY_RANK[f.severity])))


def damaged_file_findings(result: FsckResult, lake: LakeLayout) -> list[Finding]:
    """`table_files_damaged` for a dry-run fsck result: an error for the files streams still have
    to read (`result.needed_by`), a warning for the others."""
    needed = [d for d in result.damaged if d.path in result.needed_by]
    unneeded = [d for d in result.damaged if d.path not in result.needed_by]
    findings = []
    if needed:
        findings.append(_needed_finding(result, lake, needed))
    if unneeded:
        findings.append(_unneeded_finding(result, lake, unneeded))
    return findings


def _needed_finding(result: FsckResult, lake: LakeLayout, damaged: list[DamagedFile]) -> Finding:
    table = result.table
    streams = sorted({s for d in damaged for s in result.needed_by[d.path]})
    versions = sorted({d.version for d in damaged})
    return Finding(
        "table_files_damaged",
        "error",
        None,
        f"`{table}` lists {_files(damaged)} its store lacks or holds at another size, which "
        f"{_who(streams)} to read: {_named(table, damaged)}; their next batches, a replay and every read "
        "of the table's current snapshot fail on them",
        "Restore the file(s) under the same path from a backup or the store's object versioning, then "
        f"restart. If they are lost, `{_fsck_command(lake)}` lists every damaged file of the lake and "
        f"`{_repair_command(lake, table)}` drops these from the table's log (their rows are lost, and "
        f"recorded in its FSCK commit); {', '.join(streams)} still read the adds of version(s) "
        f"{', '.join(map(str, versions))}: start each on a new checkpoint with startingVersion={versions[-1] + 1} "
        f"(with ignoreDeletes=true to pass the FSCK commit) and back-fill versions {versions[0]}..{versions[-1]} "
        "from the repaired table.",
        _evidence(result, lake, damaged, streams=streams),
    )


def _unneeded_finding(result: FsckResult, lake: LakeLayout, damaged: list[DamagedFile]) -> Finding:
    table = result.table
    return Finding(
        "table_files_damaged",
        "warning",
        None,
        f"`{table}` lists {_files(damaged)} its store lacks or holds at another size, which no stream "
        f"of the lake still has to read: {_named(table, damaged)}; every read of the table's current "
        "snapshot (a batch query, a new stream) fails on them, as do a rewind or replay over their "
        "version(s) and time travel to them",
        "Restore the file(s) under the same path from a backup or the store's object versioning. If they "
        f"are lost, `{_fsck_command(lake)}` lists every damaged file of the lake and "
        f"`{_repair_command(lake, table)}` drops these from the table's log (their rows are lost, and "
        "recorded in its FSCK commit); the FSCK commit is a delete: streams that read the table stop at "
        "it unless they read with ignoreDeletes=true or skipChangeCommits=true.",
        _evidence(result, lake, damaged),
    )


def _who(streams: Sequence[str]) -> str:
    return f"{', '.join(streams)} still {'has' if len(streams) == 1 else 'have'}"


def _files(damaged: Sequence[DamagedFile]) -> str:
    return f"{len(damaged)} data file(s){rows_text(damaged)}"


def _named(table: Location, damaged: Sequence[DamagedFile]) -> str:
    """The first few files, each with its version, its damage and the rows it held."""
    named = "; ".join(
        d.describe(table) + ("" if d.rows is None else f" ({d.rows:,} rows)") for d in damaged[:MAX_NAMED_FILES]
    )
    more = len(damaged) - MAX_NAMED_FILES
    return named + (f" and {more} more" if more > 0 else "")


def _fsck_command(lake: LakeLayout) -> str:
    return f"streamops lake fsck --lake {lake.root}"


def _repair_command(lake: LakeLayout, table: Location) -> str:
    return f"streamops lake fsck {table} --lake {lake.root} --yes"


def _evidence(
    result: FsckResult, lake: LakeLayout, damaged: list[DamagedFile], streams: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "table": str(result.table),
        "damaged_files": len(damaged),
        "versions": sorted({d.version for d in damaged}),
        "rows": sum(d.rows or 0 for d in damaged),
        "streams": list(streams),
        "files": [
            {**d.to_json(), "needed_by": list(result.needed_by.get(d.path, ()))} for d in damaged[:MAX_LISTED_FILES]
        ],
        "fsck_command": _fsck_command(lake),
        "repair_command": _repair_command(lake, result.table),
    }


def _unreadable(table: Location, error: BaseException) -> Finding:
    return Finding(
        "check_failed",
        "warning",
        None,
        f"the data files of `{table}` could not be checked: {error_line(error)}",
        "Fix what the message names (a path, a permission, the table's log) and run the doctor again.",
        {"table": str(table), "check": "table_files_damaged"},
    )
