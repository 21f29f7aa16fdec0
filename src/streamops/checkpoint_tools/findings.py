"""What the doctor reports: one `Finding` per problem, with severity, evidence and a fix.

The catalog below is the single list of finding codes: the doctor may only emit these, and
tests check that it does and that the docs explain each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Severity = Literal["info", "warning", "error"]
FindingCode = Literal[
    "missing_metadata",
    "corrupt_log_file",
    "unknown_log_version",
    "stale_temp_file",
    "batch_gap",
    "uncommitted_batch",
    "conf_changed",
    "concurrent_writers",
    "file_source_log_behind",
    "source_table_missing",
    "kafka_data_loss",
    "source_table_replaced",
    "source_version_cleaned_up",
    "source_files_vacuumed",
    "source_files_damaged",
    "table_files_damaged",
    "backlog",
    "retention_headroom",
    "unread_change_commits",
    "stalled",
    "sink_txn_ahead",
    "sink_txn_behind",
    "sink_written_by_other_query",
    "duplicate_sink_commit",
    "state_missing",
    "state_out_of_step",
    "state_orphaned_versions",
    "state_partitions_mismatch",
    "state_schema_missing",
    "check_failed",
]

SEVERITY_RANK: dict[Severity, int] = {"info": 0, "warning": 1, "error": 2}
EXIT_HEALTHY, EXIT_WARNINGS, EXIT_ERRORS = 0, 1, 2


@dataclass(frozen=True)
class FindingKind:
    code: FindingCode
    severities: tuple[Severity, ...]
    meaning: str


CATALOG: dict[str, FindingKind] = {
    kind.code: kind
    for kind in (
        FindingKind(
            "missing_metadata",
            ("warning", "error"),
            "`metadata` (the query id) is missing or unreadable; Spark would start under a new id",
        ),
        FindingKind(
            "corrupt_log_file",
            ("warning", "error"),
            "an offsets/commits/sources file is empty, truncated, not JSON or fails its .crc; "
            "error when a restart reads it",
        ),
        FindingKind(
            "unknown_log_version",
            ("warning",),
            "a log file was written in a format version these tools do not know (newer Spark)",
        ),
        FindingKind(
            "stale_temp_file", ("info",), "a hidden temporary file a writer left behind when it died mid-write"
        ),
        FindingKind(
            "batch_gap",
            ("warning", "error"),
            "batch ids missing from offsets/ or commits/; error when a restart needs the missing file",
        ),
        FindingKind(
            "uncommitted_batch",
            ("info", "warning"),
            "the last batch was planned but not committed: a restart replays it with the same "
            "offsets; info while it is younger than the stall threshold (probably running)",
        ),
        FindingKind(
            "conf_changed",
            ("warning", "error"),
            "a Spark conf recorded in the offset log differs between batches; error when it breaks restoring state",
        ),
        FindingKind(
            "concurrent_writers",
            ("error",),
            "evidence that two runs wrote this checkpoint: a batch re-planned after it was "
            "committed, batch timestamps or source offsets going backwards",
        ),
        FindingKind(
            "file_source_log_behind",
            ("error",),
            "offsets reference a file-source log batch that sources/<id> does not hold",
        ),
        FindingKind(
            "state_missing",
            ("error",),
            "a state version the restart must load is incomplete in some partition or store "
            "(the exact missing file is named)",
        ),
        FindingKind(
            "state_out_of_step",
            ("info",),
            "state stores of one operator end at different versions (a batch died mid-write)",
        ),
        FindingKind(
            "state_orphaned_versions", ("warning",), "state versions newer than any batch the offset log planned"
        ),
        FindingKind(
            "state_partitions_mismatch",
            ("error",),
            "fewer or more state partition directories than the operator's metadata declares",
        ),
        FindingKind(
            "state_schema_missing", ("info",), "a stateful operator without a state schema file (written by Spark 3.0+)"
        ),
        FindingKind("source_table_missing", ("error",), "the Delta table the stream reads does not exist"),
        FindingKind(
            "kafka_data_loss",
            ("error",),
            "with --kafka-bootstrap: Kafka retention deleted offsets a restart needs first (topic, partition "
            "and range named); the restart would stop or skip them",
        ),
        FindingKind(
            "source_table_replaced", ("error",), "the source path holds a different table (reservoirId != table id)"
        ),
        FindingKind(
            "source_version_cleaned_up",
            ("error",),
            "the stream needs a source version that log cleanup removed; restart will fail",
        ),
        FindingKind(
            "source_files_vacuumed",
            ("error",),
            "data files a pending batch must read were removed by a later commit, then deleted by VACUUM; "
            "restart will fail",
        ),
        FindingKind(
            "source_files_damaged",
            ("error",),
            "data files a pending batch must read are missing while the table still lists them (deleted "
            "outside Delta) or truncated; each is named with the version that added it; restart will fail",
        ),
        FindingKind(
            "table_files_damaged",
            ("warning", "error"),
            "with --lake alone: data files a lake table's log lists are missing or truncated (the `lake fsck` "
            "check); error while a stream still has to read them, else warning: every read of the table's "
            "snapshot fails on them",
        ),
        FindingKind(
            "backlog", ("info", "warning"), "source data not yet processed, in versions, files, bytes and seconds"
        ),
        FindingKind(
            "retention_headroom",
            ("warning",),
            "the oldest unread source data is within --retention-warning-seconds (or past) of "
            "the table's deletedFileRetentionDuration / logRetentionDuration",
        ),
        FindingKind(
            "unread_change_commits",
            ("warning",),
            "unread source commits that delete, rewrite or change the schema: the stream fails "
            "there unless skipChangeCommits/ignoreDeletes/ignoreChanges say otherwise",
        ),
        FindingKind(
            "stalled", ("warning",), "no batch committed since the source advanced, for longer than the stall threshold"
        ),
        FindingKind(
            "sink_txn_ahead",
            ("error",),
            "a sink holds batches the checkpoint has not planned: they will be skipped on replay",
        ),
        FindingKind("sink_txn_behind", ("warning",), "committed batches that read data never reached a sink"),
        FindingKind(
            "sink_written_by_other_query",
            ("error",),
            "the stream's sink commits carry another query id: two checkpoints share one appId",
        ),
        FindingKind(
            "duplicate_sink_commit", ("error",), "one batch produced two sink commits: its rows are duplicated"
        ),
        FindingKind("check_failed", ("warning",), "a check could not run (the evidence says why)"),
    )
}
assert set(CATALOG) == set(get_args(FindingCode)), "every finding code needs a catalog entry"


@dataclass(frozen=True)
class Finding:
    code: FindingCode
    severity: Severity
    stream: str | None
    """None for a finding about a lake table rather than one stream (`table_files_damaged`)."""
    message: str
    fix: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = CATALOG[self.code]
        if self.severity not in kind.severities:
            raise ValueError(f"finding `{self.code}` cannot have severity {self.severity}")

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "stream": self.stream,
            "message": self.message,
            "fix": self.fix,
            "evidence": dict(self.evidence),
        }


def worst(findings: Iterable[Finding]) -> Severity | None:
    ranked = [SEVERITY_RANK[f.severity] for f in findings]
    if not ranked:
        return None
    return next(s for s, r in SEVERITY_RANK.items() if r == max(ranked))


def exit_code(findings: Iterable[Finding]) -> int:
    """0 healthy (info findings allowed), 1 warnings, 2 errors."""
    level = worst(findings)
    if level == "error":
        return EXIT_ERRORS
    if level == "warning":
        return EXIT_WARNINGS
    return EXIT_HEALTHY
