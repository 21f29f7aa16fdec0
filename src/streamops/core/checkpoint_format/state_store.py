"""The state stores of a checkpoint (`<checkpoint>/state/`), read from their files alone.

Spark keeps one store per stateful operator, partition and store name:

    state/<operator>/_metadata/metadata             operator id, name, stores, partitions (v1)
    state/<operator>/_metadata/v2/<batch>           the same for transformWithState (v2)
    state/<operator>/<partition>/_metadata/schema   key and value schema (partition 0 only)
    state/<operator>/<partition>/[<store>/]...      the versions, one per committed batch

A store at version V holds the state after batch V-1, so re-running batch N loads version N.
What a version is made of depends on the provider:

- HDFS-backed: `V.delta` (changes in batch V-1) and now and then `V.snapshot` (everything);
  version V loads from the newest snapshot at or below V plus every delta after it.
- RocksDB: `V.zip` (a checkpoint of the database, naming its SST files under `SSTs/`), or with
  changelog checkpointing `V.changelog` files between zips; checkpoint format v2 names files
  `V_<uuid>.zip` / `V_<uuid>.changelog` and the commit log says which uuid a batch wrote.

Stream-stream joins keep four stores per partition (`left-keyToNumValues`, ...), in
subdirectories named after them; every other operator has one store, `default`, in the partition
directory itself. Version 0 is the empty store and always loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamops.core.storage.entries import DirListing
from streamops.core.storage.location import Location

Provider = Literal["hdfs", "rocksdb", "unknown"]
FileKind = Literal["delta", "snapshot", "zip", "changelog"]
DEFAULT_STORE = "default"
METADATA_DIR = "_metadata"
SCHEMA_DIRS = (METADATA_DIR, "_stateSchema")
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
FORMAT_CONFS = {
    "aggregation": "spark.sql.streaming.aggregation.stateFormatVersion",
    "join": "spark.sql.streaming.join.stateFormatVersion",
    "flatMapGroupsWithState": "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
    "checkpoint": "spark.sql.streaming.stateStore.checkpointFormatVersion",
}
_SUFFIXES: dict[str, FileKind] = {
    ".delta": "delta",
    ".snapshot": "snapshot",
    ".zip": "zip",
    ".changelog": "changelog",
}


@dataclass(frozen=True)
class VersionFile:
    version: int
    kind: FileKind
    name: str
    unique_id: str | None
    size: int


@dataclass(frozen=True)
class StoreFiles:
    """One store of one partition: its version files, by version."""

    partition: int
    store: str
    location: Location
    files: tuple[VersionFile, ...]
    size_bytes: int

    @property
    def versions(self) -> tuple[int, ...]:
        return tuple(sorted({f.version for f in self.files}))

    @property
    def latest_version(self) -> int | None:
        return max((f.version for f in self.files), default=None)

    def missing_for(self, version: int, unique_ids: Mapping[int, str] | None = None) -> str | None:
        """The file that loading `version` lacks, or None when it loads. `unique_ids` pins
        version -> uuid (checkpoint format v2), so a file a failed attempt left under another uuid
        does not count.

        Walks down from `version`: a full copy (snapshot, zip) ends the walk, an increment
        (delta, changelog) needs the version below it too; version 0 is the empty store."""
        have: dict[int, set[FileKind]] = {}
        for item in self.files:
            pinned = (unique_ids or {}).get(item.version)
            if pinned is None or item.unique_id in (None, pinned):
                have.setdefault(item.version, set()).add(item.kind)
        rocksdb = any(f.kind in ("zip", "changelog") for f in self.files)
        current = version
        while current > 0:
            kinds = have.get(current, set())
            if kinds & {"snapshot", "zip"}:
                return None
            if not kinds & {"delta", "changelog"}:
                pin = (unique_ids or {}).get(current)
                stem = f"{current}_{pin}" if pin else str(current)
                wanted = f"{stem}.zip (or {stem}.changelog)" if rocksdb else f"{stem}.delta"
                needed = f" (needed to load version {version})" if current != version else ""
                return f"{self.location / wanted}{needed}"
            current -= 1
        return None


@dataclass(frozen=True)
class StateOperator:
    operator_id: int
    name: str | None
    metadata_version: int | None
    declared_partitions: int | None
    declared_stores: tuple[str, ...]
    stores: tuple[StoreFiles, ...]
    schema_files: tuple[str, ...]
    schema_version: str | None

    @property
    def partitions(self) -> int:
        return len({s.partition for s in self.stores})

    @property
    def store_names(self) -> tuple[str, ...]:
        return tuple(sorted({s.store for s in self.stores}))

    @property
    def latest_version(self) -> int | None:
        return max((v for s in self.stores if (v := s.latest_version) is not None), default=None)

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.stores)

    @property
    def layout(self) -> str:
        kinds = {f.kind for s in self.stores for f in s.files}
        if kinds & {"zip", "changelog"}:
            return "rocksdb changelog + snapshots" if "changelog" in kinds else "rocksdb snapshots"
        if kinds:
            return "deltas + snapshots" if "snapshot" in kinds else "deltas"
        return "empty"

    def provider_on_disk(self) -> Provider:
        kinds = {f.kind for s in self.stores for f in s.files}
        if kinds & {"zip", "changelog"}:
            return "rocksdb"
        return "hdfs" if kinds else "unknown"


@dataclass(frozen=True)
class StateStores:
    """Every stateful operator of a checkpoint (empty for a stateless query)."""

    location: Location
    operators: tuple[StateOperator, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def present(self) -> bool:
        return bool(self.operators)

    @property
    def latest_version(self) -> int | None:
        return max((v for o in self.operators if (v := o.latest_version) is not None), default=None)

    @property
    def partitions(self) -> int:
        return max((o.partitions for o in self.operators), default=0)

    def missing_for(self, version: int, unique_ids: Mapping[str, Any] | None = None) -> list[str]:
        """Every file that loading `version` in every operator, partition and store lacks."""
        missing = []
        for operator in self.operators:
            for store in operator.stores:
                pins = _pins(unique_ids, operator.operator_id, store.partition, version)
                if (lack := store.missing_for(version, pins)) is not None:
                    missing.append(lack)
        return missing

    def files_after(self, version: int) -> list[Location]:
        """Version files newer than `version`, newest version first: what a rewind to batch
        `version` moves away, in the order it removes them."""
        newer = [
            (item.version, store.location / item.name)
            for operator in self.operators
            for store in operator.stores
            for item in store.files
            if item.version > version
        ]
        return [path for _, path in sorted(newer, key=lambda pair: (-pair[0], str(pair[1])))]


def provider_from_conf(conf: Mapping[str, str]) -> Provider:
    value = conf.get(PROVIDER_CONF, "")
    if "RocksDB" in value:
        return "rocksdb"
    if "HDFSBacked" in value or not value:
        return "hdfs"
    return "unknown"


def state_formats(conf: Mapping[str, str]) -> dict[str, str]:
    """The state format versions a batch ran with (as recorded in its offsets conf)."""
    return {name: conf[key] for name, key in FORMAT_CONFS.items() if key in conf}


def read_state_stores(state_root: Location) -> StateStores:
    """List `<checkpoint>/state`; files are listed, never loaded (only metadata JSON is read)."""
    top = state_root.list_dir()
    operators = []
    problems: list[str] = []
    for name in sorted((d for d in top.dirs if d.isdigit()), key=int):
        operators.append(_read_operator(state_root / name, int(name), problems))
    return StateStores(state_root, tuple(operators), tuple(problems))


def _read_operator(root: Location, operator_id: int, problems: list[str]) -> StateOperator:
    listing = root.list_dir()
    info = _operator_metadata(root / METADATA_DIR, problems) if METADATA_DIR in listing.dirs else {}
    operator_info = info.get("operatorInfo") or {}
    store_info = info.get("stateStoreInfo") or []
    declared = {int(s["numPartitions"]) for s in store_info if isinstance(s, dict) and "numPartitions" in s}
    stores: list[StoreFiles] = []
    schema_files: list[str] = []
    schema_version = None
    for partition_name in sorted((d for d in listing.dirs if d.isdigit()), key=int):
        partition_root = root / partition_name
        part_listing = partition_root.list_dir()
        sub_stores = [d for d in part_listing.dirs if d not in SCHEMA_DIRS and d != "SSTs"]
        places = [(partition_name, DEFAULT_STORE, partition_root, part_listing)]
        if sub_stores and not any(_version_file(f.name, f.size) for f in part_listing.files):
            places = [
                (f"{partition_name}/{store}", store, partition_root / store, (partition_root / store).list_dir())
                for store in sorted(sub_stores)
            ]
        for label, store, location, store_listing in places:
            stores.append(_store_files(int(partition_name), store, location, store_listing))
            if METADATA_DIR not in store_listing.dirs:
                continue
            for entry in (location / METADATA_DIR).list_dir().files:
                if entry.name.startswith("."):
                    continue
                schema_files.append(f"{label}/{METADATA_DIR}/{entry.name}")
                if entry.name == "schema" and schema_version is None:
                    schema_version = _schema_version(location / METADATA_DIR / entry.name)
    if "_stateSchema" in listing.dirs:
        schema_files.extend(f"_stateSchema/{e.name}" for e in (root / "_stateSchema").walk())
    return StateOperator(
        operator_id=operator_id,
        name=operator_info.get("operatorName"),
        metadata_version=info.get("_version"),
        declared_partitions=max(declared) if declared else None,
        declared_stores=tuple(str(s.get("storeName")) for s in store_info if isinstance(s, dict)),
        stores=tuple(stores),
        schema_files=tuple(schema_files),
        schema_version=schema_version,
    )


def _store_files(partition: int, store: str, location: Location, listing: DirListing) -> StoreFiles:
    files = []
    size = 0
    for entry in listing.files:
        name = entry.name
        if name.startswith("."):
            continue
        size += entry.size
        parsed = _version_file(name, entry.size)
        if parsed is not None:
            files.append(parsed)
    if "SSTs" in listing.dirs:
        size += sum(e.size for e in (location / "SSTs").list_dir().files if not e.name.startswith("."))
    files.sort(key=lambda f: (f.version, f.kind))
    return StoreFiles(partition, store, location, tuple(files), size)


def _version_file(name: str, size: int) -> VersionFile | None:
    for suffix, kind in _SUFFIXES.items():
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            version, _, unique_id = stem.partition("_")
            if version.isdigit():
                return VersionFile(int(version), kind, name, unique_id or None, size)
    return None


def _operator_metadata(root: Location, problems: list[str]) -> dict[str, Any]:
    """`_metadata/metadata` (v1), else the newest `_metadata/v2/<batch>` (transformWithState)."""
    listing = root.list_dir()
    candidates = []
    if "metadata" in {f.name for f in listing.files}:
        candidates.append(root / "metadata")
    if "v2" in listing.dirs:
        batches = sorted((f.name for f in (root / "v2").list_dir().files if f.name.isdigit()), key=int)
        if batches:
            candidates.append(root / "v2" / batches[-1])
    for path in reversed(candidates):
        try:
            lines = path.read_bytes().decode("utf-8").splitlines()
            value = orjson.loads(lines[1])
            if isinstance(value, dict):
                value["_version"] = int(lines[0].strip().lstrip("v"))
                return value
        except (OSError, UnicodeDecodeError, IndexError, ValueError, orjson.JSONDecodeError):
            problems.append(f"`{path}` is not operator metadata Spark can read")
    return {}


def _schema_version(path: Location) -> str | None:
    """The version written first in a state schema file (Java's writeUTF: 2-byte length + text)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < 2:
        return None
    length = int.from_bytes(data[:2], "big")
    text = data[2 : 2 + length].decode("utf-8", "replace")
    return text if text.startswith("v") else None


def _pins(unique_ids: Mapping[str, Any] | None, operator: int, partition: int, version: int) -> dict[int, str]:
    """Checkpoint format v2: the uuid of `version` for this operator and partition, from the
    `stateUniqueIds` of the commit that produced it ({operator: [[uuid per store], ...]})."""
    if not unique_ids:
        return {}
    per_partition = unique_ids.get(str(operator)) or []
    if partition >= len(per_partition) or len(per_partition[partition]) != 1:
        return {}  # several stores per partition (joins): which uuid is whose is not recorded
    return {version: per_partition[partition][0]}
