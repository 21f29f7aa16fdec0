"""What a lake holds, table by table: the numbers `streamops run` prints when it finishes and
the tests compare with the generator's manifest. Read with delta-rs; no Spark needed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from deltalake import DeltaTable

from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.pipeline.lake_tables import table_access


@dataclass(frozen=True)
class LakeSummary:
    bronze_rows: int = 0
    quarantine_by_reason: dict[str, int] = field(default_factory=dict)
    silver_rows: dict[str, int] = field(default_factory=dict)
    variations: int = 0
    schema_versions: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    schema_alerts: int = 0

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def _table(path: Path) -> DeltaTable | None:
    with table_access(path, "read"):
        return open_table(path) if is_table(path) else None


def _rows(path: Path) -> int:
    table = _table(path)
    return table.count() if table is not None else 0


def _column(path: Path, name: str) -> list:
    table = _table(path)
    return read_delta(table, columns=[name]).column(name).to_pylist() if table is not None else []


def summarize_lake(lake: LakeLike) -> LakeSummary:
    lake = LakeLayout.at(lake)
    registry = _table(lake.schema_registry)
    versions: dict[str, int] = {}
    if registry is not None:
        for row in read_delta(registry, columns=["event_type", "schema_version"]).to_pylist():
            versions[row["event_type"]] = max(versions.get(row["event_type"], 0), row["schema_version"])
    silver = {}
    if lake.silver_root.is_dir():
        silver = {p.name: _rows(p) for p in sorted(lake.silver_root.iterdir()) if _table(p) is not None}
    return LakeSummary(
        bronze_rows=_rows(lake.bronze_events),
        quarantine_by_reason=dict(Counter(_column(lake.bronze_quarantine, "reason"))),
        silver_rows=silver,
        variations=_rows(lake.schema_registry),
        schema_versions=versions,
        groups=dict(Counter(_column(lake.event_groups, "group"))),
        schema_alerts=_rows(lake.schema_alerts),
    )
