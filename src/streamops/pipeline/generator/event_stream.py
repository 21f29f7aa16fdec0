"""The run's lines in order: valid events, drift as planned, bad records and rule violations
where planned.

Everything random comes from generators seeded with `--seed` and a purpose, so the lines of a
run depend only on its settings (and, under `--rate`, on the wall clock for `event_time`).
While it produces lines it counts what it produced: the counts become the manifest.
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect
from collections import Counter, deque
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Callable

import orjson

from streamops.pipeline.generator.bad_records import BadKind, plan_bad_records, render_bad_record
from streamops.pipeline.generator.drift_plan import DriftStep, Stage, plan_drift, stages
from streamops.pipeline.generator.event_catalog import EventTypeSpec, build_catalog
from streamops.pipeline.generator.event_clock import SyntheticClock, WallClock
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.generator.value_builder import EventBuilder, compile_builder
from streamops.pipeline.generator.violations import ViolationKind, break_rules, nulls_player_id, plan_violations
from streamops.pipeline.records.record_rules import EVENT_ID_FIELD, EVENT_TIME_FIELD, EVENT_TYPE_FIELD

TITLE_FIELD = "title_id"
HEADER_FIELDS = (EVENT_TYPE_FIELD, EVENT_ID_FIELD, EVENT_TIME_FIELD, TITLE_FIELD)
"""String fields every valid event carries ahead of its type's attributes."""
HEADER_PATHS = tuple(f"{name}:string" for name in HEADER_FIELDS)


@dataclass
class ShapeTally:
    """How many events of one variation were produced, and the line of the first."""

    events: int = 0
    first_ordinal: int | None = None

    def count(self, ordinal: int) -> None:
        self.events += 1
        if self.first_ordinal is None:
            self.first_ordinal = ordinal


@dataclass
class StageTally:
    """The events of one stage of one type: those of its shape, and those whose `player.id` a
    violation made null (another variation)."""

    stage: Stage
    build: EventBuilder
    whole: ShapeTally = field(default_factory=ShapeTally)
    without_player_id: ShapeTally = field(default_factory=ShapeTally)

    @property
    def events(self) -> int:
        return self.whole.events + self.without_player_id.events


@dataclass
class TypeTally:
    """One type's stages in order, which one is live (-1: not started yet), and its first file."""

    spec: EventTypeSpec
    step: DriftStep | None
    stages: list[StageTally]
    current: int = -1
    first_file: str | None = None


def run_tag(seed: int) -> str:
    """The `event_id` prefix of a run: ids are unique within a run and differ between seeds."""
    return "e" + hashlib.blake2b(str(seed).encode(), digest_size=6).hexdigest() + "-"


class EventStream:
    """Produces the run's lines file by file, in order, and tallies them for the manifest.

    Types are picked by weight among the live ones; a type whose stage just changed jumps the
    queue once, so even a rare type shows its new variation right at the change point.
    """

    def __init__(self, settings: GeneratorSettings) -> None:
        seed = settings.seed
        self.total = settings.events
        catalog = build_catalog(settings.event_types, seed)
        steps = plan_drift(catalog, settings.drift, self.total, random.Random(f"{seed}:drift"))
        self.bad_plan: dict[int, BadKind] = plan_bad_records(
            self.total, settings.bad, random.Random(f"{seed}:bad-plan")
        )
        self.bad_counts: Counter[BadKind] = Counter()
        self.violation_plan: dict[int, ViolationKind] = plan_violations(
            self.total, settings.violations, set(self.bad_plan), random.Random(f"{seed}:violation-plan")
        )
        self.violation_counts: Counter[tuple[str, ViolationKind]] = Counter()
        """(event type, kind) -> events that broke the kind's rules."""
        self._bad_rng = random.Random(f"{seed}:bad")
        self._pick = random.Random(f"{seed}:pick").random
        values = random.Random(f"{seed}:values")
        self._value = values.random
        self.types = [
            TypeTally(
                spec,
                steps.get(spec.name),
                [
                    StageTally(stage, compile_builder(stage.schema, values, HEADER_FIELDS))
                    for stage in stages(spec, steps.get(spec.name))
                ],
            )
            for spec in catalog
        ]
        self._changes: dict[int, list[tuple[TypeTally, int]]] = {}
        for tally in self.types:
            for index, stage_tally in enumerate(tally.stages):
                self._changes.setdefault(stage_tally.stage.starts_at, []).append((tally, index))
        self._change_points = sorted(self._changes)
        self._active: list[TypeTally] = []
        self._cumulative: list[float] = []
        self._due: deque[TypeTally] = deque()
        self._clock: Callable[[int], str] = (
            WallClock()
            if settings.rate
            else SyntheticClock(settings.start_time, settings.time_span_seconds, self.total)
        )
        self._titles = tuple(f"title-{index:04d}" for index in range(settings.titles))
        self._tag = run_tag(seed)
        self._next = 0

    def lines(self, count: int, file_name: str) -> list[bytes]:
        """The next `count` lines of the run (without newlines), all destined for `file_name`."""
        stop = min(self._next + count, self.total)
        out: list[bytes] = []
        append, dumps, bad_plan, violation_plan = out.append, orjson.dumps, self.bad_plan, self.violation_plan
        clean_ids: dict[str, str] = {}  # per type, its latest clean event in this file: what a repeated id repeats
        for ordinal in range(self._next, stop):
            if self._change_points and ordinal == self._change_points[0]:
                self._apply_changes(self._change_points.pop(0))
            kind = bad_plan.get(ordinal)
            if kind is not None:
                event = self._event(ordinal, self._pick_active())
                self.bad_counts[kind] += 1
                append(render_bad_record(kind, event, self._bad_rng))
                continue
            tally = self._due.popleft() if self._due else self._pick_active()
            stage = tally.stages[tally.current]
            event = self._event(ordinal, tally)
            name = tally.spec.name
            violation = violation_plan.get(ordinal)
            if violation is not None and break_rules(violation, event, clean_ids.get(name)):
                self.violation_counts[(name, violation)] += 1
                shape = stage.without_player_id if nulls_player_id(violation) else stage.whole
            else:
                clean_ids[name] = event[EVENT_ID_FIELD]
                shape = stage.whole
            append(dumps(event))
            shape.count(ordinal)
            if tally.first_file is None:
                tally.first_file = file_name
        self._next = stop
        return out

    def _event(self, ordinal: int, tally: TypeTally) -> dict[str, Any]:
        return tally.stages[tally.current].build(
            tally.spec.name,
            f"{self._tag}{ordinal:010d}",
            self._clock(ordinal),
            self._titles[int(self._value() * len(self._titles))],
        )

    def _pick_active(self) -> TypeTally:
        return self._active[bisect(self._cumulative, self._pick() * self._cumulative[-1])]

    def _apply_changes(self, ordinal: int) -> None:
        """Move types into their next stage; each gets the next free line so every stage shows."""
        for tally, index in self._changes[ordinal]:
            if tally.current < 0:
                self._active.append(tally)
            tally.current = index
            if tally.step is not None and tally.step.at_ordinal == ordinal:
                self._due.append(tally)
        self._cumulative = list(accumulate(t.spec.weight for t in self._active))
