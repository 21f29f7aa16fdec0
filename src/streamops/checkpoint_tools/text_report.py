"""Human-readable renderings of inspect/correlate/doctor/rewind results (the CLI's default)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from streamops.checkpoint_tools.checkpoint_checks import id_ranges
from streamops.checkpoint_tools.correlation import Correlation
from streamops.checkpoint_tools.doctor import Diagnosis
from streamops.checkpoint_tools.findings import Finding
from streamops.checkpoint_tools.rewind import RewindPlan, RewindResult
from streamops.checkpoint_tools.table_checks import TableDiagnosis
from streamops.core.plain_text import format_table

SEVERITY_MARK = {"error": "ERROR", "warning": "WARN", "info": "info"}


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def offset_text(kind: str, offset: Any) -> str:
    """Short form: delta v3#4 (S = starting snapshot), file log 11, kafka t/0=42, else as written."""
    if kind == "none" or offset is None:
        return "-"
    if kind == "delta":
        flag = " S" if offset.get("isStartingVersion") else ""
        return f"v{offset['reservoirVersion']}#{offset['index']}{flag}"
    if kind == "file":
        return f"log {offset['logOffset']}"
    if kind == "kafka":
        return " ".join(f"{t}/{p}={o}" for t, parts in offset.items() for p, o in parts.items())
    text = offset if isinstance(offset, str) else str(offset)
    return text if len(text) <= 40 else text[:37] + "..."


def inspection_text(report: dict[str, Any]) -> str:
    state = report["state"]
    state_text = (
        f"{len(state['operators'])} operator(s), {state['provider']} provider, {state['partitions']} "
        f"partition(s), version {state['latest_version']}, restorable batches "
        f"{id_ranges(state['restorable_batches']) or 'none'}"
        if state["present"]
        else "none (stateless query)"
    )
    lines = [
        f"checkpoint  {report['checkpoint']}",
        f"query id    {report['query_id'] or '(missing: ' + report['metadata_problem']['detail'] + ')'}",
        f"batches     planned through {report['latest_planned']}, committed through "
        f"{report['latest_committed']}"
        + (f", batch {report['uncommitted_batch']} not committed" if report["uncommitted_batch"] is not None else ""),
        f"state       {state_text}",
        "",
    ]
    rows = [
        [
            b["batch_id"],
            b["status"],
            iso(b["batch_timestamp_ms"]),
            b["watermark_ms"],
            iso(b["committed_ms"]),
            "; ".join(offset_text(s["kind"], s["offset"]) for s in b["sources"]),
        ]
        for b in report["batches"]
    ]
    lines.append(
        format_table(["batch", "status", "planned (UTC)", "watermark", "committed (UTC)", "end offsets"], rows)
    )
    if state["present"]:
        lines += [
            "",
            format_table(
                ["operator", "name", "provider", "layout", "partitions", "stores", "version", "bytes", "schema"],
                [
                    [
                        o["operator_id"],
                        o["name"] or "",
                        o["provider"],
                        o["layout"],
                        o["partitions"],
                        ",".join(o["stores"]),
                        o["latest_version"],
                        o["size_bytes"],
                        o["schema_version"] or "missing",
                    ]
                    for o in state["operators"]
                ],
            ),
        ]
    if report["source_logs"]:
        lines += [
            "",
            format_table(
                ["source", "kind", "files", "latest", "entries", "compacted"],
                [
                    [
                        s["source_id"],
                        s["kind"],
                        s["files"],
                        s["latest_log_batch"],
                        s.get("entries", ""),
                        ",".join(map(str, s.get("compact_batches", []))),
                    ]
                    for s in report["source_logs"]
                ],
            ),
        ]
    lines += ["", f"conf ({len(report['conf'])} keys recorded in the offset log):"]
    lines += [f"  {k} = {v}" for k, v in sorted(report["conf"].items())]
    for change in report["conf_changes"]:
        lines.append(
            f"  changed at batch {change['batch_id']}: {change['key']} {change['before']} -> {change['after']}"
        )
    for problem in report["problems"]:
        lines.append(f"problem: {problem['kind']}: {problem['detail']}")
    for temp in report["temp_files"]:
        lines.append(f"temporary file: {temp}")
    return "\n".join(lines)


def correlation_text(correlation: Correlation) -> str:
    lines = [
        f"stream {correlation.stream}  query {correlation.query_id}",
        f"source {correlation.source_table or '(none given)'}",
        f"sinks  {', '.join(map(str, correlation.sink_tables)) or '(none given)'}",
        "",
    ]
    rows = []
    for item in correlation.batches:
        read = item.source_read
        sinks = ", ".join(f"{c.table.name}@v{c.version}{c.describe_rows()}" for c in item.sink_commits)
        rows.append(
            [
                item.batch.batch_id,
                item.batch.status,
                iso(item.batch.batch_timestamp_ms),
                ",".join(map(str, read.versions)) if read else "",
                len(read.files) if read else "",
                read.rows if read else "",
                read.bytes if read else "",
                read.problem if read and read.problem else sinks,
            ]
        )
    lines.append(
        format_table(
            ["batch", "status", "planned (UTC)", "source versions", "files", "rows", "bytes", "sink commits"], rows
        )
    )
    if correlation.landing_files:
        lines += [
            "",
            format_table(
                ["file", "batch", "discovered (UTC)", "committed", "committed at (UTC)"],
                [
                    [
                        f.path,
                        f.batch_id if f.batch_id is not None else f"log {f.log_batch}",
                        iso(f.discovered_ms),
                        "yes" if f.committed else "no",
                        iso(f.committed_ms),
                    ]
                    for f in correlation.landing_files
                ],
            ),
        ]
    return "\n".join(lines)


def diagnoses_text(diagnoses: Sequence[Diagnosis], tables: Sequence[TableDiagnosis] = ()) -> str:
    """Each checkpoint's verdict and findings, then each lake table with findings (`tables`:
    every table checked, from `diagnose_lake_tables`), then the counts."""
    lines = []
    for diagnosis in diagnoses:
        verdict = diagnosis.worst or "healthy"
        lines.append(
            f"{diagnosis.stream}: {verdict}  (planned {diagnosis.latest_planned}, committed "
            f"{diagnosis.latest_committed}, {diagnosis.checkpoint})"
        )
        lines += _finding_lines(diagnosis.findings)
        for skipped in diagnosis.skipped:
            lines.append(f"  not checked: {skipped.checks}: {skipped.reason}")
    for table in tables:
        if table.findings:
            lines.append(f"table {table.table}: {table.worst}")
            lines += _finding_lines(table.findings)
    findings = [f for d in diagnoses for f in d.findings] + [f for t in tables for f in t.findings]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITY_MARK}
    checked = f"{len(diagnoses)} checkpoint(s)" + (f" and {len(tables)} table(s)" if tables else "")
    lines.append(
        f"{checked}: {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
        + (
            f"; {sum(1 for d in diagnoses if d.skipped)} with checks not run (see `not checked`)"
            if any(d.skipped for d in diagnoses)
            else ""
        )
    )
    return "\n".join(lines)


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    lines = []
    for finding in findings:
        lines.append(f"  {SEVERITY_MARK[finding.severity]:5} {finding.code}: {finding.message}")
        lines.append(f"        fix: {finding.fix}")
    return lines


def rewind_text(plan: RewindPlan, result: RewindResult | None) -> str:
    lines = [
        (
            f"rewind {plan.checkpoint} to batch {plan.to_batch} (planned through {plan.latest_planned}, "
            f"committed through {plan.latest_committed})"
        ),
        (
            f"the next run plans batches from {plan.to_batch}; batches {plan.to_batch}..{plan.latest_planned} "
            "are processed again:"
        ),
    ]
    rows = []
    for item in plan.replayed:
        read = item.source_read
        rows.append(
            [
                item.batch.batch_id,
                item.batch.status,
                ",".join(map(str, read.versions)) if read else "",
                len(read.files) if read else "",
                read.rows if read else "",
                ", ".join(f"{c.table.name}@v{c.version}" for c in item.sink_commits),
            ]
        )
    lines.append(format_table(["batch", "status", "source versions", "files", "rows", "sink commits"], rows))
    for sink in plan.sinks:
        lines.append(
            f"sink {sink.table}: txn {sink.txn}; skipped (already there): "
            f"{_span(sink.skipped_batches)}; written: {_span(sink.written_batches)}"
        )
    for source in plan.file_sources:
        lines.append(
            f"file source {source.source_id}: {source.entries_released} file(s) from log batch "
            f"{source.keep_before_log_batch} on count as new again"
        )
    lines.append(
        f"removes {len(plan.remove)} offsets/commits file(s)"
        + (f" and {len(plan.state_remove)} state file(s) of later versions" if plan.state_remove else "")
    )
    lines += [f"warning: {w}" for w in plan.warnings]
    if result is None:
        lines.append("dry run: nothing changed; add --yes to apply (the checkpoint is backed up first)")
    else:
        lines.append(f"done; backup at {result.backup}")
    return "\n".join(lines)


def _span(ids: Sequence[int]) -> str:
    return f"{ids[0]}..{ids[-1]}" if ids else "none"
