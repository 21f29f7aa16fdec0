"""Prometheus alerting rules and a sample scrape configuration for the streamops exporter."""

from __future__ import annotations

from typing import Any, Sequence

from streamops.dashboards.alert_rules import RULE_GROUP, SERVICE_LABEL, AlertRule

SCRAPE_JOB = "streamops"
RULES_FILE = "streamops-rules.yml"
SCRAPE_INTERVAL = "15s"


def rules_document(rules: Sequence[AlertRule]) -> dict[str, Any]:
    """The rules file Prometheus loads through `rule_files:` (group `streamops`)."""
    return {
        "groups": [
            {
                "name": RULE_GROUP,
                "rules": [
                    {
                        "alert": rule.name,
                        "expr": rule.expr,
                        "for": rule.pending,
                        "labels": {"severity": rule.severity, **SERVICE_LABEL},
                        "annotations": {
                            "summary": rule.summary_with("$value"),
                            "description": rule.description,
                        },
                    }
                    for rule in rules
                ],
            }
        ]
    }


def scrape_document(
    target: str, rule_files: Sequence[str] = (RULES_FILE,), interval: str = SCRAPE_INTERVAL
) -> dict[str, Any]:
    """A `prometheus.yml` that scrapes one streamops exporter and loads the streamops rules."""
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": list(rule_files),
        "scrape_configs": [{"job_name": SCRAPE_JOB, "static_configs": [{"targets": [target]}]}],
    }
