"""`_system/expectations`: one row per stream, batch, table and rule, written with the batch's
identity like every other table the pipeline writes, so a replayed batch is never counted twice.
The exporter's `streamops_expectation_records_total`, the console and `streamops status` read
the same counts. Bronze, event groups and CDC groups count alike, so all three build their
rows, and the one line that stops a stream on a `fail` rule, here."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pyarrow as pa

from streamops.pipeline.expectations.rule_columns import TableCounts, TableRules
from streamops.pipeline.expectations.rules import Action

EXPECTATIONS_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.string(), nullable=False),
        pa.field("batch_id", pa.int64(), nullable=False),
        pa.field("table", pa.string(), nullable=False),
        pa.field("version", pa.int64()),
        pa.field("expectation", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("passed", pa.int64(), nullable=False),
        pa.field("failed", pa.int64(), nullable=False),
        pa.field("applicable", pa.bool_(), nullable=False),
        pa.field("committed_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)
"""`version`: the Delta version of `table` the batch wrote (null when it wrote none);
`applicable`: false for a rule naming a column the table does not have yet (both counts 0)."""


@dataclass(frozen=True)
class ExpectationCount:
    """One rule on one table in one batch: rows that passed and failed it (a rule on columns the
    table does not have yet is `applicable=False`, both counts 0). `version`: the Delta version
    of the table the batch wrote, None when it wrote none."""

    table: str
    expectation: str
    action: Action
    passed: int
    failed: int
    version: int | None = None
    applicable: bool = True


def expectation_counts(
    counts: dict[str, TableCounts], rules: dict[str, TableRules], versions: dict[str, int | None]
) -> tuple[ExpectationCount, ...]:
    """Per table the batch evaluated rows of, and per rule: rows passed and failed (0 and 0 for
    a rule its columns do not resolve), with the table version the batch wrote (`versions`)."""
    found = []
    for table, tally in sorted(counts.items()):
        if not tally.evaluated:
            continue
        version = versions.get(table)
        for rule in rules[table].applicable:
            failed = tally.failed.get(rule.name, 0)
            found.append(ExpectationCount(table, rule.name, rule.action, tally.evaluated - failed, failed, version))
        for rule in rules[table].not_applicable:
            found.append(ExpectationCount(table, rule.name, rule.action, 0, 0, version, applicable=False))
    return tuple(found)


def counts_rows(counts: tuple[ExpectationCount, ...], stream: str, batch_id: int) -> pa.Table:
    """`_system/expectations` rows of one batch."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return pa.Table.from_pylist(
        [
            {
                "stream": stream,
                "batch_id": batch_id,
                "table": c.table,
                "version": c.version,
                "expectation": c.expectation,
                "action": c.action,
                "passed": c.passed,
                "failed": c.failed,
                "applicable": c.applicable,
                "committed_at": now,
            }
            for c in counts
        ],
        schema=EXPECTATIONS_SCHEMA,
    )


def failing_fail_rules(counts: tuple[ExpectationCount, ...]) -> list[ExpectationCount]:
    return [c for c in counts if c.action == "fail" and c.failed]


def fail_rule_stop_line(who: str, failing: list[ExpectationCount], batch_id: int) -> str:
    """The one line a stream stopped by `fail` rules logs and raises; `who` names the stream
    ("group `g0001`", "bronze")."""
    return (
        f"{who} stopped in batch {batch_id}: "
        + "; ".join(f"expectation `{c.expectation}` failed on {c.failed} rows of table `{c.table}`" for c in failing)
        + "; nothing of the batch was written: fix the data or the rule, then restart the run"
    )
