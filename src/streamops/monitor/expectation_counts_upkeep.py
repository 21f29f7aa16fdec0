"""Upkeep of `_system/expectations`, which the pipeline appends to in a commit of a few rows per
group and batch: one row per table, rule and batch, around two million rows an hour for 300
tables of 10 rules on 5-second batches. The monitor's worker keeps it to the monitor's retention
and compacts its small files, on the same clock as the progress log's upkeep.

Old rows go by `committed_at`, after a look at the files' statistics so an hourly pass over a
table with nothing old reads no data. Both are commits of their own, each a conflict-free
companion of the pipeline's blind appends; one that fails is logged and tried again at the next
pass. The exporter's counters come from the batches as they commit, not from this table, so
dropping old rows changes no metric; `streamops status` and the console read the last day.
"""

from __future__ import annotations

from streamops.core.delta_format.file_stats import may_hold_older
from streamops.core.delta_format.read import is_table, open_table
from streamops.monitor.progress_log import MaintenanceResult, RetainedTable

COMMITTED_AT = "committed_at"


class ExpectationCounts(RetainedTable):
    """`_system/expectations` at `path`, kept for `retention_days`."""

    def maintain(self, now: float) -> MaintenanceResult:
        """Drop the rows committed before the retention, then compact the table's small files."""
        cutoff = self.cutoff(now)
        if not is_table(self.path):
            return MaintenanceResult(cutoff.date(), 0, 0)
        table = open_table(self.path)
        deleted = 0
        if may_hold_older(table, COMMITTED_AT, cutoff):
            metrics = table.delete(f"{COMMITTED_AT} < '{cutoff.isoformat()}'")
            deleted = int(metrics.get("num_deleted_rows") or 0)
            table = open_table(self.path)
        compacted = table.optimize.compact()
        return MaintenanceResult(cutoff.date(), deleted, int(compacted.get("numFilesRemoved") or 0))
