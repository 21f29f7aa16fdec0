"""NDJSON files that appear whole: written under a hidden name, then renamed into place.

Spark's file source lists a directory and ignores names starting with `.` or `_`, and a rename
within one directory is atomic, so a streaming reader sees either nothing or the complete file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from streamops.pipeline.exceptions import PipelineConfigError

FILE_PATTERN = "events-*.ndjson"
MANIFEST_NAME = "_manifest.json"


def data_file_name(index: int) -> str:
    """The name of the `index`-th file (1-based): names sort in the order they were written."""
    return f"events-{index:06d}.ndjson"


def prepare_landing_dir(out: Path) -> None:
    """Create `out`, refusing one that already holds a run: mixing two runs breaks the manifest."""
    if out.exists() and not out.is_dir():
        raise PipelineConfigError(f"--out `{out}` is a file: give a directory")
    out.mkdir(parents=True, exist_ok=True)
    if next(out.glob(FILE_PATTERN), None) is not None or (out / MANIFEST_NAME).exists():
        raise PipelineConfigError(f"--out `{out}` already holds generated files: use an empty or new directory")


def write_atomically(path: Path, payload: bytes) -> None:
    """Write `payload` to a hidden sibling, then rename it to `path`; no partial file remains."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(payload)
        os.rename(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def write_data_file(path: Path, lines: list[bytes]) -> int:
    """Write one NDJSON file (every line, the last included, ends with a newline); its size."""
    payload = b"\n".join(lines) + b"\n"
    write_atomically(path, payload)
    return len(payload)


@dataclass(frozen=True)
class LandingFiles:
    """The generator's default target: NDJSON files in the run's `out`, beside its manifest."""

    def open(self, out: Path) -> LandingFileWriter:
        return LandingFileWriter(out)

    def describe(self, out: Path) -> str:
        return str(out)


@dataclass(frozen=True)
class LandingFileWriter:
    out: Path

    def write(self, name: str, lines: list[bytes]) -> int:
        return write_data_file(self.out / name, lines)


class Pacer:
    """Holds a sustained rate: after `n` lines it waits until `n / rate` seconds have passed."""

    def __init__(self, rate: float | None) -> None:
        self._rate = rate
        self._started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def wait_for(self, lines_done: int) -> float:
        """Sleep until `lines_done` is on schedule; return how many seconds we are behind (>= 0)."""
        if self._rate is None:
            return 0.0
        ahead = lines_done / self._rate - self.elapsed()
        if ahead > 0:
            time.sleep(ahead)
            return 0.0
        return -ahead
