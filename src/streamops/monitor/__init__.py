"""Watches every streaming query of a Spark application: a durable progress log, Prometheus
metrics and each stream's status (ok, idle, lagging, stalled, failed, stopped).

    from streamops.monitor import StreamMonitor
    StreamMonitor(spark, lake="s3://acme/lake", metrics_port=9108).start()

`StreamMonitor` needs `streamops[monitor]` and the application's own PySpark (3.5 or newer);
reading the progress log and the expectation counts back (`fleet_status`, `ProgressLog`,
`rule_statuses`) needs neither.
"""

from streamops.core.public_names import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CATALOG": "metric_catalog",
        "KafkaGroupCommits": "kafka_groups",
        "MonitorError": "exceptions",
        "ProgressLog": "progress_log",
        "QueryProgress": "progress_event",
        "RuleStatus": "expectation_status",
        "StatusPolicy": "status_rules",
        "StreamMonitor": "stream_monitor",
        "StreamStatus": "status_severity",
        "StreamStatusRow": "fleet_status",
        "TableCommit": "fleet",
        "failing_rules": "expectation_status",
        "fleet_status": "fleet_status",
        "parse_event": "progress_event",
        "rule_statuses": "expectation_status",
    },
)
