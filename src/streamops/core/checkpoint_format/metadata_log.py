"""Spark's metadata-log directories (`offsets/`, `commits/`, `sources/N/`) as files on disk.

Spark writes one file per batch id (`12`), compacted logs as `19.compact`, a Hadoop checksum
sidecar per file (`.12.crc`) and, while writing, a hidden temporary (`.12.<uuid>.tmp`) that is
renamed into place. Each file starts with a version line (`v1`). This module lists and reads
those files without interpreting their bodies, and reports what is wrong with one as data
(`LogProblem`) so a single bad file never hides the rest of a checkpoint. Directories are
`Location`s: a local directory, or a prefix in an object store listed in one paginated LIST.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Literal

from streamops.core.exceptions import MalformedLogFileError
from streamops.core.storage.location import Location, LocationLike

ProblemKind = Literal["empty", "truncated", "corrupt", "crc_mismatch", "unknown_version", "unreadable", "missing"]

COMPACT_SUFFIX = ".compact"
CRC_MAGIC = b"crc\x00"


@dataclass(frozen=True)
class LogProblem:
    """Something wrong with one checkpoint file, in words an operator can act on."""

    path: Location
    kind: ProblemKind
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"path": str(self.path), "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class LogFile:
    batch_id: int
    path: Location
    compact: bool
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class LogListing:
    """The batch files of one log directory, in batch order, plus leftover temporaries."""

    directory: Location
    files: tuple[LogFile, ...]
    temp_files: tuple[Location, ...] = ()
    checksums: frozenset[str] = frozenset()
    """Names of the Hadoop checksum sidecars present (`.12.crc`): only those are read."""

    @property
    def batch_ids(self) -> tuple[int, ...]:
        return tuple(f.batch_id for f in self.files)

    @property
    def latest(self) -> LogFile | None:
        return self.files[-1] if self.files else None

    def get(self, batch_id: int) -> LogFile | None:
        for log_file in reversed(self.files):
            if log_file.batch_id == batch_id:
                return log_file
        return None


@dataclass(frozen=True)
class VersionedText:
    """A log file split into its version number and body lines."""

    version: int
    lines: tuple[str, ...]


def list_log(directory: LocationLike) -> LogListing:
    """List `directory` the way Spark's HDFSMetadataLog sees it (a missing directory is empty)."""
    directory = Location.of(directory)
    files: list[LogFile] = []
    temps: list[Location] = []
    checksums: set[str] = set()
    for entry in directory.list_dir().files:
        name = entry.name
        if name.startswith("."):
            if name.endswith((".tmp", ".tmp.crc")):
                temps.append(directory / name)
            elif name.endswith(".crc"):
                checksums.add(name)
            continue
        compact = name.endswith(COMPACT_SUFFIX)
        stem = name[: -len(COMPACT_SUFFIX)] if compact else name
        if not stem.isdigit():
            continue
        files.append(LogFile(int(stem), directory / name, compact, entry.size, entry.mtime_ms))
    files.sort(key=lambda f: (f.batch_id, f.compact))
    return LogListing(directory, tuple(files), tuple(sorted(temps)), frozenset(checksums))


def read_versioned(path: Location, known_versions: tuple[int, ...]) -> tuple[VersionedText, LogProblem | None]:
    """Split a log file into version and lines.

    Raises `MalformedLogFileError` when the file cannot be used at all; returns an
    `unknown_version` problem alongside the text when a newer Spark wrote it, so callers can still
    show what it holds.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise MalformedLogFileError(f"cannot read `{path}`: {error.strerror or error}", "unreadable") from error
    if not data.strip():
        raise MalformedLogFileError(f"`{path}` is empty (a writer died before finishing it)", "empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedLogFileError(f"`{path}` is not UTF-8 text (byte {error.start})") from error
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # a newline after the last line ends it, as Spark's reader (getLines) treats it
    header = lines[0].strip()
    if not (header.startswith("v") and header[1:].isdigit()):
        raise MalformedLogFileError(f"`{path}` does not start with a version line like `v1` (found {header[:20]!r})")
    version = int(header[1:])
    problem = None
    if version not in known_versions:
        problem = LogProblem(
            path,
            "unknown_version",
            f"log version v{version} (these tools know v{', v'.join(map(str, known_versions))}); "
            "values are shown as written",
        )
    return VersionedText(version, tuple(lines[1:])), problem


def checksum_name(path: Location) -> str:
    return f".{path.name}.crc"


def crc_problem(path: LocationLike) -> LogProblem | None:
    """Check `path` against the Hadoop checksum sidecar Spark wrote next to it (`.name.crc`).

    The sidecar holds a CRC32 per 512-byte chunk of the content as written, so a truncated,
    hand-edited or half-overwritten file no longer matches. No sidecar means nothing to check.
    """
    path = Location.of(path)
    sidecar = path.with_name(checksum_name(path))
    try:
        crc = sidecar.read_bytes()
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(crc) < 8 or crc[:4] != CRC_MAGIC:
        return LogProblem(path, "crc_mismatch", f"checksum file `{sidecar.name}` is not a Hadoop .crc file")
    chunk = struct.unpack(">i", crc[4:8])[0]
    if chunk <= 0:
        return LogProblem(path, "crc_mismatch", f"checksum file `{sidecar.name}` has chunk size {chunk}")
    expected = crc[8:]
    actual = b"".join(struct.pack(">I", zlib.crc32(data[i : i + chunk])) for i in range(0, len(data), chunk))
    if expected != actual:
        return LogProblem(
            path,
            "crc_mismatch",
            f"content ({len(data)} bytes) does not match the checksum Spark wrote "
            f"(covering {len(expected) // 4 * chunk} bytes or less): truncated or rewritten",
        )
    return None


def hadoop_crc(data: bytes, chunk: int = 512) -> bytes:
    """The `.crc` sidecar Hadoop's local file system writes for `data`."""
    sums = b"".join(struct.pack(">I", zlib.crc32(data[i : i + chunk])) for i in range(0, len(data), chunk))
    return CRC_MAGIC + struct.pack(">i", chunk) + sums


def write_log_file(path: LocationLike, data: bytes) -> None:
    """Replace a log file whole (local: temp file and rename; object store: one PUT), with its
    checksum sidecar where Hadoop keeps one (always locally; on a store, where it had one)."""
    path = Location.of(path)
    sidecar = path.with_name(checksum_name(path))
    if path.is_local or sidecar.is_file():
        sidecar.write_bytes(hadoop_crc(data))
    path.write_bytes(data)


def create_log_file(path: Location, data: bytes) -> None:
    """Write a log file that must not exist yet (FileExistsError otherwise): a rewrite never
    overwrites a file a running query wrote in the meantime."""
    path.create(data)
    if path.is_local:
        path.with_name(checksum_name(path)).write_bytes(hadoop_crc(data))


def remove_log_file(path: LocationLike) -> None:
    """Remove a log file's checksum sidecar, then the file: interrupted in between, the file
    is left without a sidecar (read unverified, as Spark does) rather than a sidecar without
    its file, which nothing would ever remove."""
    path = Location.of(path)
    path.with_name(checksum_name(path)).delete()
    path.delete()


def as_problem(path: Location, error: MalformedLogFileError) -> LogProblem:
    return LogProblem(path, error.kind, str(error))  # type: ignore[arg-type]
