"""`streamops status`: which streams are ok, idle, lagging, stalled, failed or stopped."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from streamops.cli.options import Subcommands, add_command, add_json_option, add_lake_option, print_json
from streamops.core.plain_text import format_table, human_bytes, human_seconds
from streamops.monitor.status_severity import SEVERITY

if TYPE_CHECKING:
    from streamops.monitor.expectation_status import RuleStatus
    from streamops.monitor.fleet_status import StreamStatusRow

STATUS_EPILOG = f"""examples:
  streamops status --lake lake
  streamops status --lake lake --json | jq '.streams[] | select(.status != "ok")'

Works with the pipeline stopped: it reads <lake>/_system/query_progress, the source tables'
Delta logs and <lake>/_system/expectations (the data-quality rules failing in each table's last
batches, listed after the streams: a failing rule does not change a stream's status). The lake may be a local path or a URI (s3://, gs://, az://, abfss://); credentials
come from each cloud's standard environment (docs: Object storage).
Streams are listed worst first ({", ".join(SEVERITY)}).
"""
REASON_WIDTH = 70


def register(subcommands: Subcommands) -> None:
    """Add `streamops status`."""
    parser = add_command(
        subcommands,
        "status",
        summary="status, backlog and freshness of every stream (from the progress log)",
        description="Show every stream's status (ok, idle, lagging, stalled, failed, stopped), "
        "its last batch, backlog, freshness and rates.",
        epilog=STATUS_EPILOG,
        handler=_status,
    )
    add_lake_option(parser)
    add_json_option(parser)


def _status(args: argparse.Namespace) -> int:
    from streamops.core.lake_layout import LakeLayout
    from streamops.monitor.expectation_status import failing_rules
    from streamops.monitor.fleet_status import fleet_status

    lake = LakeLayout.at(args.lake).require()
    now = time.time()
    rows = fleet_status(lake, now=now)
    failing = failing_rules(lake, now)
    counts = Counter(row.status for row in rows)
    if args.json:
        print_json(
            {
                "lake": str(lake.root),
                "generated_at": datetime.fromtimestamp(now, tz=timezone.utc).isoformat().replace("+00:00", "Z"),
                "counts": dict(sorted(counts.items())),
                "streams": [row.to_json() for row in rows],
                "failing_expectations": [rule.to_json() for rule in failing],
            }
        )
        return 0
    table = [
        (
            row.stream,
            row.status.upper(),
            _last_batch(row.last_batch_id, row.last_batch_at, now),
            _backlog(row),
            human_seconds(row.freshness_seconds),
            _rates(row.input_rows_per_second, row.processed_rows_per_second),
            ", ".join(w.code for w in row.warnings) or "-",
            _clip(row.reason),
        )
        for row in rows
    ]
    print(
        format_table(
            ("STREAM", "STATUS", "LAST BATCH", "BACKLOG", "FRESHNESS", "ROWS/S IN/OUT", "WARNINGS", "REASON"),
            table,
        )
    )
    summary = ", ".join(f"{counts[s]} {s}" for s in SEVERITY if counts[s])
    print(f"\n{len(rows)} streams: {summary or 'none'}")
    connectors = sorted({row.delta_connector for row in rows if row.delta_connector})
    if connectors:
        print(f"Delta connector: {', '.join(connectors)}")
    if failing:
        _print_failing_rules(failing, now)
    return 0


def _print_failing_rules(failing: list[RuleStatus], now: float) -> None:
    """One line per rule that failed rows in its table's last batches: how many, and since when."""
    from streamops.monitor.expectation_status import LOOKBACK, RECENT_BATCHES

    tables = {rule.table for rule in failing}
    print(
        f"\n{_count(len(failing), 'expectation')} failing on {_count(len(tables), 'table')} "
        f"(rows that failed in each table's last {RECENT_BATCHES} batches, "
        f"of the last {human_seconds(LOOKBACK.total_seconds())}):"
    )
    print(
        format_table(
            ("TABLE", "RULE", "ACTION", "FAILED", "PASSED", "BATCHES FAILING", "SINCE", "STREAM"),
            [
                (
                    rule.table,
                    rule.expectation,
                    rule.action,
                    f"{rule.failed:,}",
                    f"{rule.passed:,}",
                    f"{rule.failing_batches} of {rule.recent_batches}",
                    _since(rule, now),
                    rule.stream,
                )
                for rule in failing
            ],
        )
    )


def _since(rule: RuleStatus, now: float) -> str:
    since = rule.failing_since if rule.failing_since is not None else rule.last_committed_at
    moment = datetime.fromtimestamp(since, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"batch {rule.failing_since_batch_id}, {moment} ({human_seconds(now - since)} ago)"


def _last_batch(batch_id: int | None, at: float | None, now: float) -> str:
    if batch_id is None:
        return "-"
    return f"{batch_id} ({human_seconds(now - at)} ago)" if at is not None else str(batch_id)


def _backlog(row: StreamStatusRow) -> str:
    """Measured files first; records behind the latest offset (Kafka and the like) with the
    estimated time to read them; files a source reports about itself."""
    parts = []
    backlog = row.backlog
    if backlog is not None and not backlog.is_empty:
        size, age = human_bytes(backlog.bytes), human_seconds(backlog.seconds)
        parts.append(f"{_count(backlog.files, 'file')}, {size}, {_count(backlog.versions, 'version')}, {age}")
    offsets = row.offsets
    if offsets:
        estimates = [e for e in row.estimated_seconds if e is not None]
        parts.append(
            f"{_count(offsets, 'record')}" + (f" (~{human_seconds(max(estimates))} to read)" if estimates else "")
        )
    reported = sum(s.files or 0 for s in row.sources if not s.measured)
    if reported:
        parts.append(f"{_count(reported, 'file')} reported")
    if parts:
        return "; ".join(parts)
    if backlog is not None or offsets == 0:
        return "none"
    return "waiting" if row.pending else "-"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _rates(rate_in: float | None, rate_out: float | None) -> str:
    if rate_in is None and rate_out is None:
        return "-"
    return f"{rate_in or 0:.0f} / {rate_out or 0:.0f}"


def _clip(text: str) -> str:
    return text if len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 3] + "..."
