"""Diagnosis and repair of Spark checkpoints without Spark: inspect, correlate each batch with
the Delta versions it read and wrote, doctor, rewind, and table maintenance (vacuum, optimize)
that never breaks a stream, and fsck of a table's damaged data files. Built on the core's
readers of Spark's and Delta's formats."""

from streamops.core.public_names import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DoctorSettings": "doctor_context",
        "Finding": "findings",
        "SinkTableIndex": "sink_index",
        "apply_rewind": "rewind",
        "checkpoint_targets": "doctor",
        "correlate": "correlation",
        "diagnose": "doctor",
        "diagnose_lake": "doctor",
        "diagnose_many": "doctor",
        "find_readers": "stream_readers",
        "fsck_tables": "table_fsck",
        "inspect_checkpoint": "inspection",
        "optimize_table": "stream_safe_optimize",
        "plan_rewind": "rewind",
        "vacuum_tables": "stream_safe_vacuum",
    },
)
