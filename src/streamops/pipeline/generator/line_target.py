"""Where the generator puts its lines: one `LineTarget` per kind of destination (landing files:
generator/landing_writer.py; a Kafka topic: generator/kafka_writer.py), so the run writes the
same way whichever it is."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class LineWriter(Protocol):
    def write(self, name: str, lines: list[bytes]) -> int:
        """Deliver one file's worth of lines (`name` as the manifest names it); their bytes."""
        ...


class LineTarget(Protocol):
    def open(self, out: Path) -> LineWriter:
        """A writer for a run whose manifest goes into `out`."""
        ...

    def describe(self, out: Path) -> str:
        """Where the lines went, for the run's summary."""
        ...
