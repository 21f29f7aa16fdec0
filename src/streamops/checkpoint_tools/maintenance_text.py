"""What `streamops lake vacuum|optimize` print for people: per table, what was done and why."""

from __future__ import annotations

from collections.abc import Sequence

from streamops.checkpoint_tools.stream_safe_optimize import TableOptimize
from streamops.checkpoint_tools.stream_safe_vacuum import TableVacuum
from streamops.core.plain_text import format_table


def vacuum_text(results: Sequence[TableVacuum]) -> str:
    verb = "would delete" if all(r.dry_run for r in results) else "deleted"
    rows = [
        (
            str(r.table),
            "REFUSED" if r.refused else len(r.deleted),
            "" if r.refused else r.kept_by_retention,
            "" if r.refused else r.kept_by_streams,
            "" if r.refused else (r.retention_hours if r.retention_hours is not None else ""),
        )
        for r in results
    ]
    lines = [format_table(("table", verb, "kept: retention", "kept: streams", "retention h"), rows), ""]
    for result in results:
        if result.refused:
            lines.append(f"{result.table}: not vacuumed: {result.refused}")
        elif not result.readers:
            lines.append(
                f"{result.table}: no stream protected it (no known checkpoint reads it); normal retention only"
            )
        else:
            for protection in result.protections:
                read = protection.read
                what = (
                    f"the snapshot at version {read.needed_version} and later versions"
                    if read.needs_snapshot
                    else f"version {read.needed_version} and later"
                )
                lines.append(
                    f"{result.table}: kept {protection.files_kept} file(s) for stream `{read.stream}` "
                    f"(checkpoint {read.checkpoint}), which still reads {what}"
                )
    return "\n".join(lines).rstrip()


def optimize_text(results: Sequence[TableOptimize]) -> str:
    rows = [
        (
            str(r.table),
            r.live_files,
            r.small_files,
            "-" if r.dry_run else (r.version if r.version is not None else "nothing to do"),
            "" if r.dry_run else f"{r.files_removed} -> {r.files_added}",
            "" if r.dry_run else r.attempts,
        )
        for r in results
    ]
    lines = [format_table(("table", "live files", "small files", "version", "files", "attempts"), rows), ""]
    for result in results:
        streams = ", ".join(f"`{r.stream}`" for r in result.readers)
        if result.duplicated:
            lines.append(
                f"{result.table}: ERROR: a concurrent compaction (version(s) "
                f"{', '.join(map(str, result.raced_with))}) compacted the same files: their rows are now "
                f"in the table twice; restore the table to version {result.version - 1 if result.version else '?'} "
                "(streams reading it must then restart from a new checkpoint)"
            )
        elif streams:
            lines.append(
                f"{result.table}: read by {streams}: the compaction commit changes no data (dataChange=false), so they skip it"
            )
    return "\n".join(lines).rstrip()
