"""Doctor checks of the state stores: can a restart load the state it needs?

A restart runs batch `latest committed + 1` and loads state version `latest committed + 1` in
every partition of every store of every operator; one missing file fails the query at its first
batch (often minutes into a cluster start). These checks read listings only.
"""

from __future__ import annotations

from streamops.checkpoint_tools.checkpoint_checks import id_ranges
from streamops.checkpoint_tools.doctor_context import DoctorContext
from streamops.checkpoint_tools.findings import Finding
from streamops.checkpoint_tools.state_report import restorable_batches, state_pins


def check_state_restorable(ctx: DoctorContext) -> list[Finding]:
    ckpt = ctx.checkpoint
    if not ckpt.state.present or ckpt.latest_committed is None:
        return []
    needed = ckpt.latest_committed + 1
    missing = ckpt.state.missing_for(needed, state_pins(ckpt, needed))
    if not missing:
        return []
    restorable = [b for b in restorable_batches(ckpt) if b < needed]
    newest = restorable[-1] if restorable else None
    return [
        ctx.finding(
            "state_missing",
            "error",
            f"the restart at batch {needed} cannot load state version {needed}: {len(missing)} "
            f"file(s) missing, first {missing[0]}",
            (
                f"Restore the missing files from a backup, or rewind to a batch whose state is complete "
                f"(`streamops checkpoint rewind {ckpt.path} --to-batch {newest}`), or start on a new checkpoint."
                if newest is not None and newest > 0
                else "Restore the missing files from a backup, or start the query on a new checkpoint."
            ),
            missing=missing[:50],
            restorable_batches=restorable,
        )
    ]


def check_state_layout(ctx: DoctorContext) -> list[Finding]:
    """Partitions out of step, versions beyond the offset log, partitions or schemas missing."""
    ckpt = ctx.checkpoint
    if not ckpt.state.present:
        return []
    findings = []
    planned = ckpt.latest_planned if ckpt.latest_planned is not None else -1
    for operator in ckpt.state.operators:
        label = f"operator {operator.operator_id}" + (f" ({operator.name})" if operator.name else "")
        latest = {f"{s.partition}/{s.store}": s.latest_version for s in operator.stores}
        if len(set(latest.values())) > 1:
            findings.append(
                ctx.finding(
                    "state_out_of_step",
                    "info",
                    f"{label}: stores end at different versions ({id_ranges(sorted({v for v in latest.values() if v is not None}))}); "
                    "normal after a batch that died mid-write, which the restart writes again",
                    "Nothing to do unless `state_missing` is reported too.",
                    latest_versions=latest,
                )
            )
        beyond = sorted({v for s in operator.stores for v in s.versions if v > planned + 1})
        if beyond:
            findings.append(
                ctx.finding(
                    "state_orphaned_versions",
                    "warning",
                    f"{label}: state versions {id_ranges(beyond)} are newer than any batch the offset log "
                    f"planned (through {planned}): left by a rewind that kept the state, or by another run",
                    "Move those version files out of the state directory (`streamops checkpoint rewind` does "
                    "this for state), so a later batch cannot pick up state from another timeline.",
                    versions=beyond,
                )
            )
        if operator.declared_partitions is not None and operator.partitions != operator.declared_partitions:
            findings.append(
                ctx.finding(
                    "state_partitions_mismatch",
                    "error",
                    f"{label}: {operator.partitions} partition directories on disk, its metadata declares "
                    f"{operator.declared_partitions}",
                    "Restore the missing partition directories from a backup, or start on a new checkpoint.",
                    on_disk=operator.partitions,
                    declared=operator.declared_partitions,
                )
            )
        if operator.stores and not operator.schema_files:
            findings.append(
                ctx.finding(
                    "state_schema_missing",
                    "info",
                    f"{label}: no state schema file (`0/_metadata/schema` or `_stateSchema/`); Spark 3.0+ "
                    "writes one to check a changed query against its state",
                    "Nothing breaks: the next Spark 3+ run writes it; until then a query change that no "
                    "longer fits the state is found only when rows fail to decode.",
                )
            )
    return findings


STATE_CHECKS = (check_state_restorable, check_state_layout)
