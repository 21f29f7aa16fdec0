"""Why a stream of the pipeline failed, measured from the storage it runs on.

When a query fails, what Spark hands the driver is a Java exception around a Python one around
another Java one, and whether the root is a full disk, an object store that stopped answering or
a data file that is gone cannot be told from its classes (Java has one `IOException` for all of
them) and must not be told from its text. So the supervisor asks the storage instead, right
after the failure, and prints the answer as the failure's line (the whole exception stays in
`_system/query_progress`):

- an object store holding the lake or the landing does not answer a listing within
  `PROBE_SECONDS` (its client's own retries included);
- the local disk holding the stream's checkpoint or the lake has less free space than the failed
  batch reads (the input files it lists, at least `MIN_FREE_BYTES`): a batch writes about what it
  reads, and a failed write deletes its partial files, so the disk looks emptier after the failure
  than it was when it filled;
- a data file of the Delta table the stream reads, among those it has not read yet, is missing or
  shorter than the table's log says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from streamops.core.checkpoint_format.reader import read_checkpoint
from streamops.core.exceptions import StreamopsError, error_line
from streamops.core.lake_layout import LakeLayout
from streamops.core.plain_text import human_bytes
from streamops.core.storage.local_files import free_bytes
from streamops.core.storage.location import Location

MIN_FREE_BYTES = 16 * 1024 * 1024
"""Less free space than this on the lake's disk is a full disk, whatever the batch reads."""
PROBE_SECONDS = 15.0
MAX_NAMED_FILES = 2
REPLAYED = "the failed batch is replayed then: nothing is lost"


@dataclass
class FailureCauses:
    """`reads`: the Delta table each stream reads, by stream name (the silver groups read bronze)."""

    lake: LakeLayout
    inputs: tuple[Location, ...] = ()
    reads: Callable[[str], Location | None] = field(default=lambda stream: None)

    def explain(self, stream: str) -> str | None:
        """The measured cause of `stream`'s failure as one line with what to do, or None."""
        for probe in (self._silent_store, self._full_disk, self._damaged_source):
            try:
                cause = probe(stream)
            except Exception:  # noqa: BLE001 - a probe that cannot measure says nothing, whatever stopped
                continue  # it (a store, a library); the failure's own line stands and the run goes on
            if cause is not None:
                return cause
        return None

    def _silent_store(self, stream: str) -> str | None:
        for location in _distinct_stores([self.lake.root, *self.inputs]):
            problem = _listing_problem(location)
            if problem is not None:
                return f"the object store holding `{location}` does not answer: {problem}; {REPLAYED}"
        return None

    def _full_disk(self, stream: str) -> str | None:
        checkpoint = self.lake.checkpoint(stream)
        local = [location for location in (checkpoint, self.lake.root) if location.is_local]
        if not local:
            return None
        needed = max(MIN_FREE_BYTES, _batch_input_bytes(checkpoint))
        for location in local:
            free = free_bytes(location.key)
            if free < needed:
                return (
                    f"no space left for `{location}`: {human_bytes(free)} free on its disk, the batch "
                    f"needs about {human_bytes(needed)}; free space there (or move the lake); {REPLAYED}"
                )
        return None

    def _damaged_source(self, stream: str) -> str | None:
        from streamops.core.delta_format.damaged_files import unread_damaged_files

        table = self.reads(stream)
        if table is None:
            return None
        damaged = unread_damaged_files(self.lake.checkpoint(stream), table)
        if not damaged:
            return None
        named = "; ".join(f.describe(table) for f in damaged[:MAX_NAMED_FILES])
        more = f" (and {len(damaged) - MAX_NAMED_FILES} more)" if len(damaged) > MAX_NAMED_FILES else ""
        return (
            f"{stream} cannot read on: {named}{more}; restore the file from a backup or the store's "
            f"versioning and the stream carries on, or see `streamops lake fsck {table}`"
        )


def _distinct_stores(locations: Iterable[Location]) -> list[Location]:
    seen: dict[object, Location] = {}
    for location in locations:
        if not location.is_local:
            seen.setdefault(location.root, location)
    return list(seen.values())


def _listing_problem(location: Location) -> str | None:
    """Why `location` cannot be listed now (an error, or no answer in PROBE_SECONDS), or None."""
    outcome: list[BaseException | None] = []

    def probe() -> None:
        try:
            location.list_dir()
            outcome.append(None)
        except Exception as error:  # noqa: BLE001 - any failure to list is the answer
            outcome.append(error)

    worker = threading.Thread(target=probe, name="streamops-store-probe", daemon=True)
    worker.start()
    worker.join(PROBE_SECONDS)
    if not outcome:
        return f"no answer to a listing within {PROBE_SECONDS:.0f} s; check the store and the network"
    error = outcome[0]
    if error is None:
        return None
    return (
        str(error)
        if isinstance(error, StreamopsError)
        else f"{error_line(error, 160)}; check the store and the network"
    )


def _batch_input_bytes(checkpoint: Location) -> int:
    """Bytes of the input files the checkpoint's planned, uncommitted batch lists (file sources);
    0 when it has none or they cannot be measured."""
    ckpt = read_checkpoint(checkpoint, last_batches=2)
    batch = ckpt.uncommitted_batch
    if batch is None:
        return 0
    total = 0
    for source in ckpt.source_logs:
        if source.kind != "file_source":
            continue
        for entry in ckpt.file_source_log(source.source_id).entries:
            if entry.batch_id == batch:
                found = Location.of(entry.path).stat()
                total += found.size if found is not None else 0
    return total
