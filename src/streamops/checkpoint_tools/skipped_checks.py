"""The checks a verdict could not run, and why.

"Healthy" means nothing when half the checks were skipped: a Delta-source checkpoint whose
source table nobody named passes every checkpoint check and none of the source checks (vacuumed
files, log retention, table identity, backlog). Every diagnosis lists what it skipped, so a
clean report is read as clean only for what was actually checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamops.checkpoint_tools.doctor_context import DoctorContext
from streamops.core.checkpoint_format.delta_positions import delta_end


@dataclass(frozen=True)
class SkippedCheck:
    checks: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"checks": self.checks, "reason": self.reason}


SOURCE_CHECKS = "Delta source checks (files vacuumed, deleted or truncated, versions cleaned up, table identity, backlog, retention headroom, unread change commits)"
SINK_CHECKS = "sink checks (batches committed twice or missing, other writers)"
BROKER_CHECKS = "offsets against the {kind} source itself (retention, deleted topics or partitions)"


def skipped_checks(ctx: DoctorContext) -> tuple[SkippedCheck, ...]:
    skipped: list[SkippedCheck] = []
    ckpt = ctx.checkpoint
    if ctx.delta_slot is not None and ctx.source_path is None:
        latest = delta_end(ckpt, ckpt.latest_planned, ctx.delta_slot)
        table_id = f" (table id {latest.reservoir_id})" if latest is not None and latest.reservoir_id else ""
        skipped.append(
            SkippedCheck(
                SOURCE_CHECKS,
                f"the checkpoint reads a Delta table{table_id} that was not given and the lake layout does "
                "not name: pass --source-table",
            )
        )
    if not ctx.sinks and ckpt.latest_committed is not None:
        skipped.append(
            SkippedCheck(
                SINK_CHECKS,
                "no sink Delta table was given or found by the stream's txn id: pass --sink-table "
                "(sinks that are not Delta tables cannot be checked)",
            )
        )
    unchecked = {"unknown"} if ctx.settings.kafka_bootstrap else {"kafka", "unknown"}
    kinds = sorted({o.kind for batch in ckpt.offsets.values() for o in batch.sources} & unchecked)
    for kind in kinds:
        name = "Kafka" if kind == "kafka" else "unrecognised"
        skipped.append(
            SkippedCheck(
                BROKER_CHECKS.format(kind=name),
                "the doctor reads files only and does not connect to brokers or services",
            )
        )
    return tuple(skipped)
