"""What the doctor checks of a Kafka source when it is given the brokers (`--kafka-bootstrap`):
whether a restart now would lose data. Spark resumes each partition at the offset its newest
committed batch ended; a partition whose earliest offset moved past it has lost the records in
between to retention, and the restart would stop (or, with failOnDataLoss=false, skip them)."""

from __future__ import annotations

from streamops.checkpoint_tools.doctor_context import DoctorContext
from streamops.checkpoint_tools.findings import Finding
from streamops.core.checkpoint_format.kafka_positions import lost_ranges, next_kafka_offsets
from streamops.core.kafka_admin import KafkaAdmin


def check_kafka_retention(ctx: DoctorContext) -> list[Finding]:
    bootstrap = ctx.settings.kafka_bootstrap
    if bootstrap is None:
        return []
    latest = (
        ctx.checkpoint.offsets.get(ctx.checkpoint.latest_planned) if ctx.checkpoint.latest_planned is not None else None
    )
    findings = []
    for slot, source in enumerate(latest.sources if latest is not None else ()):
        if source.kind != "kafka":
            continue
        needed = next_kafka_offsets(ctx.checkpoint, slot)
        lost = lost_ranges(needed, KafkaAdmin(bootstrap).earliest(needed)) if needed else []
        if lost:
            findings.append(
                ctx.finding(
                    "kafka_data_loss",
                    "error",
                    f"a restart would lose data: Kafka retention deleted {'; '.join(r.describe() for r in lost)} "
                    "before the stream read them",
                    "restart with failOnDataLoss=false (streamops run: --allow-data-loss) to skip them and replay "
                    "them from their producer, or rewind to a batch that still can (checkpoint rewind)",
                    lost=[{"topic": r.topic, "partition": r.partition, "first": r.first, "end": r.end} for r in lost],
                    source=slot,
                )
            )
    return findings


KAFKA_CHECKS = (check_kafka_retention,)
