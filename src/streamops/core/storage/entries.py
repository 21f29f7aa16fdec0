"""What a listing returns, the same for every store."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One file: its name (relative to the listed directory), size and modification time."""

    name: str
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class DirListing:
    """One directory level: its files and the names of its subdirectories."""

    files: tuple[Entry, ...] = ()
    dirs: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.files and not self.dirs
