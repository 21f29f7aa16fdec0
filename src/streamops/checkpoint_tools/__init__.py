"""Diagnosis and repair of Spark checkpoints without Spark: inspect, correlate each batch with
the Delta versions it read and wrote, doctor, rewind, and table maintenance (vacuum, optimize)
that never breaks a stream, and fsck of a table's damaged data files. Built on the core's
readers of Spark's and Delta's formats. The frozen records the tools return (`Diagnosis`,
`Correlation`, `RewindPlan`, `TableVacuum`, `FsckResult`, ...) are exported with them."""

from streamops.core.public_names import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BatchCorrelation": "correlation",
        "CheckpointToolsError": "exceptions",
        "Correlation": "correlation",
        "Diagnosis": "doctor",
        "DoctorSettings": "doctor_context",
        "DoctorTarget": "doctor",
        "FileRead": "correlation",
        "FileSourceRewind": "rewind",
        "Finding": "findings",
        "FindingKind": "findings",
        "FsckResult": "table_fsck",
        "LandingFile": "correlation",
        "RewindError": "exceptions",
        "RewindPlan": "rewind",
        "RewindResult": "rewind",
        "RowChanges": "sink_commits",
        "SinkCommit": "sink_commits",
        "SinkEffect": "rewind",
        "SinkTableIndex": "sink_index",
        "SkippedCheck": "skipped_checks",
        "SourceRead": "correlation",
        "StreamProtection": "stream_safe_vacuum",
        "StreamRead": "stream_readers",
        "StreamReaders": "stream_readers",
        "TableDiagnosis": "table_checks",
        "TableOptimize": "stream_safe_optimize",
        "TableVacuum": "stream_safe_vacuum",
        "UnreadableCheckpoint": "stream_readers",
        "apply_rewind": "rewind",
        "checkpoint_targets": "doctor",
        "correlate": "correlation",
        "diagnose": "doctor",
        "diagnose_lake": "doctor",
        "diagnose_lake_tables": "table_checks",
        "diagnose_many": "doctor",
        "find_readers": "stream_readers",
        "fsck_tables": "table_fsck",
        "inspect_checkpoint": "inspection",
        "optimize_table": "stream_safe_optimize",
        "plan_rewind": "rewind",
        "vacuum_tables": "stream_safe_vacuum",
    },
)
