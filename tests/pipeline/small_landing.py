"""A handful of events landed the way producers must land them, and the silver rows they became:
for tests that run the real pipeline on a few lines."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import DeltaTable

from streamops.core.lake_layout import LakeLayout


def write_events(landing: Path, name: str, events: list[dict]) -> None:
    """Written aside under a hidden name, then renamed into place: Spark never sees half a file."""
    landing.mkdir(parents=True, exist_ok=True)
    temporary = landing / f".{name}.tmp"
    temporary.write_text("".join(json.dumps(e) + "\n" for e in events))
    temporary.rename(landing / name)


def event(event_type: str, i: int, **fields) -> dict:
    return {"event_type": event_type, "event_id": f"{event_type}-{i}", "event_time": "2026-11-22T10:00:00Z", **fields}


def silver_count(lake: LakeLayout, event_type: str) -> int:
    path = lake.silver(event_type)
    return DeltaTable(str(path)).count() if DeltaTable.is_deltatable(str(path)) else 0
