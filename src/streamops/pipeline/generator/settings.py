"""What one `streamops generate` run is asked to produce, checked before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.generator.event_catalog import MAX_EVENT_TYPES
from streamops.pipeline.generator.event_clock import DEFAULT_START_TIME, parse_start_time
from streamops.pipeline.generator.landing_writer import LandingFiles
from streamops.pipeline.generator.line_target import LineTarget

DEFAULT_EVENTS_PER_FILE = 5_000


@dataclass(frozen=True)
class GeneratorSettings:
    """A run. `events` counts lines, bad ones included; `rate` None means as fast as possible.

    With a rate and no explicit `events_per_file`, each file holds one second of events.
    """

    out: Path
    events: int
    event_types: int = 300
    titles: int = 400
    drift: float = 0.1
    bad: float = 0.001
    violations: float = 0.0
    """Fraction of the lines that are valid events breaking data-quality rules on purpose
    (generator/violations.py); their rules file is written beside the manifest."""
    rate: float | None = None
    seed: int = 1
    events_per_file: int | None = None
    start_time: datetime = field(default_factory=lambda: parse_start_time(DEFAULT_START_TIME))
    time_span_seconds: float = 3600.0
    target: LineTarget = LandingFiles()
    """Where the lines go: files in `out` by default, or a Kafka topic (`KafkaTarget`; `out` then
    holds only the manifest)."""

    def __post_init__(self) -> None:
        if self.events < 1:
            raise PipelineConfigError(f"--events must be at least 1, got {self.events}")
        if not 1 <= self.event_types <= MAX_EVENT_TYPES:
            raise PipelineConfigError(f"--event-types must be between 1 and {MAX_EVENT_TYPES}, got {self.event_types}")
        if self.titles < 1:
            raise PipelineConfigError(f"--titles must be at least 1, got {self.titles}")
        for name, value in (("--drift", self.drift), ("--bad", self.bad), ("--violations", self.violations)):
            if not 0.0 <= value <= 1.0:
                raise PipelineConfigError(f"{name} is a fraction between 0 and 1, got {value}")
        if self.rate is not None and not self.rate > 0:
            raise PipelineConfigError(f"--rate must be a positive number of events/s, got {self.rate}")
        if self.events_per_file is not None and self.events_per_file < 1:
            raise PipelineConfigError(f"--events-per-file must be at least 1, got {self.events_per_file}")
        if not self.time_span_seconds >= 0:
            raise PipelineConfigError(f"--time-span must be >= 0 seconds, got {self.time_span_seconds}")

    @property
    def lines_per_file(self) -> int:
        if self.events_per_file is not None:
            return self.events_per_file
        if self.rate is not None:
            return max(1, round(self.rate))
        return DEFAULT_EVENTS_PER_FILE
