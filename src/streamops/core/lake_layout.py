"""Where every table and checkpoint of a lake lives: the one place paths are spelled.

The layout is a user-facing contract (docs/lake-layout.md), so every package asks this
module for a path instead of joining strings itself. Paths are `Location`s: the lake can be a
local directory or a URI (`s3://bucket/lake`, `abfss://...`, `gs://...`), and discovering its
checkpoints and tables costs one LIST per directory level on an object store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from streamops.core.exceptions import StreamopsError
from streamops.core.storage.location import Location, LocationLike

BRONZE_STREAM = "bronze"
BRONZE_EVENTS_TABLE = "bronze/events"
"""Bronze's events table by its path in the lake: the name its data-quality rules are counted
under (`_system/expectations.table`), which no event type or CDC table can take (no `/`)."""
MANAGEMENT_STREAM = "management"
SILVER_STREAM_PREFIX = "silver_"
DELTA_LOG_DIR = "_delta_log"
HISTORY_SUFFIX = "__history"
"""`silver/<table>__history`: the SCD type 2 history beside a CDC table's current state."""
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
TABLE_CONFIGURATION = {CHECKPOINT_INTERVAL_PROPERTY: "10"}
"""Properties of every table streamops creates. A checkpoint every 10 commits (Delta Spark's
default; delta-rs's is 100): delta-rs replays every commit since the last checkpoint to refresh
a table, read its txn and commit to it, so a streaming table's commit cost climbs with that
count (BENCHMARKS.md, "Per-batch costs: commits and projections")."""

EVENT_TYPE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
STREAM_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
"""Names that become directories. Matched whole (`fullmatch`): a trailing newline is not a name."""


class InvalidNameError(StreamopsError):
    """A name that would be used as a directory is not safe to use as one."""


class LakeNotFoundError(StreamopsError):
    """The lake root does not exist, or holds nothing the tools can read."""


def is_valid_event_type(name: object) -> bool:
    """True when `name` can name a silver table directory without escaping the lake."""
    return isinstance(name, str) and bool(EVENT_TYPE_PATTERN.fullmatch(name)) and ".." not in name


def silver_stream(group: str) -> str:
    """The streaming query (and checkpoint, and txn appId) name of one silver event group."""
    return SILVER_STREAM_PREFIX + group


def group_of(stream: str) -> str:
    """The event group a silver stream serves (`silver_g0001` -> `g0001`); "" for the others."""
    return stream[len(SILVER_STREAM_PREFIX) :] if stream.startswith(SILVER_STREAM_PREFIX) else ""


def _checked(name: str, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(name, str) or not pattern.fullmatch(name) or ".." in name:
        raise InvalidNameError(
            f"`{_printable(name)}` is not a valid {what}: use letters, digits, '_', '.', '-' (max 128, no '..')"
        )
    return name


def _printable(name: object) -> str:
    """The name as one line: control characters from a hostile record are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(name))


@dataclass(frozen=True)
class LakeLayout:
    """Paths of one lake. `root` is a local directory (the embedded default) or a URI."""

    root: Location

    @classmethod
    def at(cls, root: LakeLike) -> LakeLayout:
        """The layout of the lake at `root`: a path, a URI or a `Location` (a layout is kept)."""
        return root if isinstance(root, LakeLayout) else cls(Location.of(root))

    def require(self) -> LakeLayout:
        """This layout, once its root is known to exist (one LIST on an object store)."""
        if not self.root.is_dir():
            raise LakeNotFoundError(f"no lake at `{self.root}`: the path does not exist or holds nothing; check --lake")
        return self

    @property
    def bronze_events(self) -> Location:
        return self.root / BRONZE_EVENTS_TABLE

    @property
    def bronze_quarantine(self) -> Location:
        return self.root / "bronze" / "quarantine"

    @property
    def silver_root(self) -> Location:
        return self.root / "silver"

    def silver(self, event_type: str) -> Location:
        return self.silver_root / _checked(event_type, EVENT_TYPE_PATTERN, "event type")

    def silver_history(self, table: str) -> Location:
        """The SCD type 2 history of a CDC table (`streamops run --cdc ... --cdc-history`)."""
        return self.silver_root / (_checked(table, EVENT_TYPE_PATTERN, "table name") + HISTORY_SUFFIX)

    @property
    def system_root(self) -> Location:
        return self.root / "_system"

    @property
    def schema_registry(self) -> Location:
        return self.system_root / "schema_registry"

    @property
    def schema_alerts(self) -> Location:
        return self.system_root / "schema_alerts"

    @property
    def expectations(self) -> Location:
        """One row per stream, batch, table and expectation: rows passed and failed."""
        return self.system_root / "expectations"

    @property
    def kafka_data_loss(self) -> Location:
        """Kafka offsets a stream run with --allow-data-loss never read (retention deleted them)."""
        return self.system_root / "kafka_data_loss"

    @property
    def cdc_deleted_keys_root(self) -> Location:
        return self.system_root / "cdc_deleted_keys"

    def cdc_deleted_keys(self, table: str) -> Location:
        """The keys a CDC table's deletes removed, with their sequence (one table per source
        table, so the apply of each table commits alone)."""
        return self.cdc_deleted_keys_root / _checked(table, EVENT_TYPE_PATTERN, "table name")

    @property
    def cdc_applies(self) -> Location:
        """One row per CDC table and batch: rows inserted, updated, deleted, and the lag."""
        return self.system_root / "cdc_applies"

    @property
    def event_groups(self) -> Location:
        return self.system_root / "event_groups"

    @property
    def query_progress(self) -> Location:
        return self.system_root / "query_progress"

    def run_lock(self, stage: str) -> Location:
        """Held by the one `streamops run` that runs `stage` (bronze or silver) on this lake."""
        return self.system_root / "run_locks" / (_checked(stage, STREAM_NAME_PATTERN, "stage") + ".json")

    @property
    def checkpoints_root(self) -> Location:
        return self.root / "_checkpoints"

    def checkpoint(self, stream: str) -> Location:
        return self.checkpoints_root / _checked(stream, STREAM_NAME_PATTERN, "stream name")

    def checkpoint_dirs(self) -> list[Location]:
        """Every checkpoint directory present, sorted by stream name.

        Hidden directories (`.bronze.backup-...`, left by `checkpoint rewind`) are not streams:
        a stream name never starts with a dot.
        """
        return [p for p in self.checkpoints_root.subdirs() if not p.name.startswith(".")]

    def table_dirs(self) -> list[Location]:
        """Every Delta table present in the lake (bronze, silver/*, _system/*, and the CDC
        tables' deleted keys, _system/cdc_deleted_keys/*)."""
        candidates = [self.bronze_events, self.bronze_quarantine]
        for parent in (self.silver_root, self.system_root, self.cdc_deleted_keys_root):
            candidates.extend(parent.subdirs())
        return [p for p in candidates if DELTA_LOG_DIR in p.list_dir().dirs]

    @staticmethod
    def is_pipeline_stream(stream: str) -> bool:
        """True for the streams `streamops run` starts (their tables are known by name)."""
        return stream in (BRONZE_STREAM, MANAGEMENT_STREAM) or stream.startswith(SILVER_STREAM_PREFIX)

    def stream_source_table(self, stream: str) -> Location | None:
        """The Delta table a pipeline stream reads, or None for the file-sourced bronze stream."""
        if stream.startswith(SILVER_STREAM_PREFIX):
            return self.bronze_events
        if stream == MANAGEMENT_STREAM:
            return self.schema_registry
        return None


LakeLike = Union[LakeLayout, LocationLike]
"""What every public function that takes a lake accepts: a path, a URI or a `LakeLayout`."""
