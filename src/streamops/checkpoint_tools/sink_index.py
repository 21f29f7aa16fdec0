"""Which tables of a lake each stream writes, found from the tables' own txn actions.

A stream can write several tables per batch (bronze writes bronze/events, bronze/quarantine and
the schema registry; a silver group writes one table per event type), and the lake layout does
not say which silver table belongs to which group. Every streamops sink commit carries a txn
(appId = stream), so the tables holding a txn for a stream are its sinks. Tables are loaded once
through delta-rs and refreshed incrementally, so a console or monitor that keeps one index asks
again for the price of reading new commits only.
"""

from __future__ import annotations

from collections.abc import Iterable

from deltalake.exceptions import DeltaError

from streamops.checkpoint_tools.exceptions import CheckpointToolsError
from streamops.core.delta_format.log import DeltaLog
from streamops.core.exceptions import TableNotFoundError
from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.location import Location


class SinkTableIndex:
    def __init__(self, lake: LakeLayout) -> None:
        self.lake = lake
        self._logs: dict[Location, DeltaLog] = {}
        self._loaded = False

    def refresh(self) -> SinkTableIndex:
        """Pick up new tables and new commits of known ones."""
        for table in self.lake.table_dirs():
            log = self._logs.get(table)
            try:
                if log is None:
                    log = DeltaLog(table).refresh()
                    self._logs[table] = log
                else:
                    log.refresh()
            except TableNotFoundError:
                continue  # a table directory whose first commit is still being written
            except DeltaError as error:
                raise CheckpointToolsError(
                    f"cannot read the Delta table `{table}` to find which stream writes it: "
                    f"{str(error).splitlines()[0]}"
                ) from error
        self._loaded = True
        return self

    def tables_for(self, app_ids: Iterable[str]) -> dict[Location, int]:
        """Tables holding a txn of any of `app_ids`, with the highest such txn version."""
        if not self._loaded:
            self.refresh()
        ids = tuple(app_ids)
        found: dict[Location, int] = {}
        for table, log in self._logs.items():
            versions = [v for v in (log.txn_version(a) for a in ids) if v is not None]
            if versions:
                found[table] = max(versions)
        return found

    def table_with_id(self, table_id: str) -> Location | None:
        """The lake's table whose Delta table id is `table_id` (what a Delta source's offsets
        name as `reservoirId`), or None."""
        if not self._loaded:
            self.refresh()
        return next((table for table, log in self._logs.items() if log.table_id() == table_id), None)

    def log(self, table: Location) -> DeltaLog:
        if not self._loaded:
            self.refresh()
        return self._logs.get(table) or DeltaLog(table)
