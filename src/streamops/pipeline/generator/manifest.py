"""The ground truth of a run: what the lake must hold once the pipeline has read every file.

It lists only what was actually written: a planned drift whose type emitted no event after
the change point is not in it, so every count and variation here can be checked in the lake.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from streamops.pipeline.generator.attribute_schema import paths
from streamops.pipeline.generator.bad_records import BAD_KINDS, QUARANTINE_REASON_OF
from streamops.pipeline.generator.drift_plan import DRIFT_KINDS
from streamops.pipeline.generator.event_stream import HEADER_PATHS, EventStream, TypeTally
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.generator.violations import (
    BROKEN_RULES,
    NULLED_PATH,
    RULES_FILE_NAME,
    VIOLATION_KINDS,
    VIOLATION_RULES,
)

MANIFEST_VERSION = 1
RESCUED_STAGES = ("numeric_widening", "incompatible_type")
"""Stages whose changed field the silver table cannot hold: under the default policy (rescue)
those rows keep the value in `_rescued_data`."""


@dataclass(frozen=True)
class WrittenFile:
    name: str
    lines: int
    bytes: int
    first_ordinal: int


def build_manifest(settings: GeneratorSettings, stream: EventStream, files: list[WrittenFile]) -> dict[str, Any]:
    event_types = {t.spec.name: _type_entry(t) for t in stream.types if t.first_file is not None}
    drift: dict[str, list[str]] = {kind: [] for kind in DRIFT_KINDS}
    for name, entry in sorted(event_types.items()):
        for kind in entry["drift"]:
            drift[kind].append(name)
    bad = {kind: stream.bad_counts.get(kind, 0) for kind in BAD_KINDS}
    expected_quarantine: dict[str, int] = {}
    for kind, count in bad.items():
        reason = QUARANTINE_REASON_OF[kind]
        expected_quarantine[reason] = expected_quarantine.get(reason, 0) + count
    return {
        "manifest_version": MANIFEST_VERSION,
        "seed": settings.seed,
        "parameters": {
            "events": settings.events,
            "event_types": settings.event_types,
            "titles": settings.titles,
            "drift": settings.drift,
            "bad": settings.bad,
            "violations": settings.violations,
            "rate": settings.rate,
            "events_per_file": settings.lines_per_file,
            "start_time": settings.start_time.isoformat(),
            "time_span_seconds": settings.time_span_seconds,
        },
        "lines_total": sum(f.lines for f in files),
        "events_total": sum(entry["events"] for entry in event_types.values()),
        "bad_total": sum(bad.values()),
        "incompatible_rows_total": sum(entry["incompatible_rows"] for entry in event_types.values()),
        "rescued_rows_total": sum(entry["rescued_rows"] for entry in event_types.values()),
        "files": [
            {"name": f.name, "lines": f.lines, "bytes": f.bytes, "first_ordinal": f.first_ordinal} for f in files
        ],
        "event_types": event_types,
        "drift": drift,
        "bad": bad,
        "expected_quarantine": expected_quarantine,
        **_violations(settings, stream, event_types),
    }


def _violations(settings: GeneratorSettings, stream: EventStream, event_types: dict[str, Any]) -> dict[str, Any]:
    """What the violations add: per kind, per table and rule (every rule of every table, zeros
    included, when there are rules), and per table the rows a `drop` rule removes from silver."""
    kinds = {kind: sum(n for (_, k), n in stream.violation_counts.items() if k == kind) for kind in VIOLATION_KINDS}
    if not settings.violations:
        return {"violation_kinds": kinds, "violations": {}, "violations_dropped": {}, "expectations_file": None}
    drop_rules = {rule.name for rule in VIOLATION_RULES if rule.action == "drop"}
    failed = {table: {rule.name: 0 for rule in VIOLATION_RULES} for table in event_types}
    dropped = dict.fromkeys(event_types, 0)
    for (table, kind), count in stream.violation_counts.items():
        for rule in BROKEN_RULES[kind]:
            failed[table][rule] += count
        if drop_rules.intersection(BROKEN_RULES[kind]):
            dropped[table] += count
    return {
        "violation_kinds": kinds,
        "violations": failed,
        "violations_dropped": dropped,
        "expectations_file": RULES_FILE_NAME,
    }


def _type_entry(tally: TypeTally) -> dict[str, Any]:
    emitted = [s for s in tally.stages if s.events]
    variations = []
    for stage_tally in emitted:
        stage, step = stage_tally.stage, stage_tally.stage.step
        whole = sorted([*HEADER_PATHS, *paths(stage.schema)])
        for shape, shape_paths, nulled in (
            (stage_tally.whole, whole, None),
            (stage_tally.without_player_id, [p for p in whole if p != NULLED_PATH], NULLED_PATH.split(":")[0]),
        ):
            if not shape.events:
                continue
            variations.append(
                {
                    "stage": stage.name,
                    "nulled": nulled,
                    "first_event_ordinal": shape.first_ordinal,
                    "events": shape.events,
                    "paths": shape_paths,
                    "change": None
                    if step is None
                    else {"kind": step.kind, "path": step.path, "at_ordinal": step.at_ordinal},
                }
            )
    variations.sort(key=lambda variation: variation["first_event_ordinal"])
    return {
        "events": sum(s.events for s in emitted),
        "first_file": tally.first_file,
        "variations": variations,
        "incompatible_rows": sum(s.events for s in emitted if s.stage.name == "incompatible_type"),
        "rescued_rows": sum(s.events for s in emitted if s.stage.name in RESCUED_STAGES),
        "drift": [s.stage.step.kind for s in emitted if s.stage.step is not None],
    }


def manifest_json(manifest: dict[str, Any]) -> str:
    """The one serialisation used for `_manifest.json` and for `--json` (identical bytes)."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"
