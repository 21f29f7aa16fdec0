"""The alert rules as Grafana-managed rules (grafana-foundation-sdk) and their provisioning file.

Each rule queries its value expression (A), reduces it to the last value per series (B) and
applies the threshold (C); `for` is the same pending period Prometheus uses. No data is OK:
disappearing streams are what `StreamAbsent` alerts on.
"""

from __future__ import annotations

from streamops.core.extras import require

require("dashboards", __name__)

import json
import re
from typing import Any, Sequence

from grafana_foundation_sdk.builders import alerting, expr, prometheus
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import alerting as alerting_models
from grafana_foundation_sdk.models import dashboard as dashboard_models

from streamops.dashboards.alert_rules import RULE_GROUP, SERVICE_LABEL, AlertRule

DATASOURCE_UID = "streamops-prometheus"
"""The uid of the provisioned Prometheus datasource the rules query."""
FOLDER_TITLE = "streamops"
FOLDER_UID = "streamops"
ORG_ID = 1
EVALUATION_SECONDS = 60
QUERY_WINDOW_SECONDS = 600
EXPRESSION_DATASOURCE = "__expr__"
VALUE, LAST, CONDITION = "A", "B", "C"
_OPERATOR = {">": "gt", "<": "lt"}
FILE_RULE_KEYS = (
    "uid",
    "title",
    "condition",
    "data",
    "noDataState",
    "execErrState",
    "for",
    "annotations",
    "labels",
    "isPaused",
)
"""The keys Grafana's alerting provisioning files take per rule (the API form has more)."""


def rule_uid(rule: AlertRule) -> str:
    """A stable uid (Grafana allows 40 characters) derived from the rule name."""
    return "streamops-" + re.sub(r"(?<!^)(?=[A-Z])", "-", rule.name).lower()


def grafana_rule(rule: AlertRule) -> alerting.Rule:
    expression_source = dashboard_models.DataSourceRef(type_val=EXPRESSION_DATASOURCE, uid=EXPRESSION_DATASOURCE)
    value = prometheus.Dataquery().expr(rule.value).instant().ref_id(VALUE)
    last = (
        expr.TypeReduce()
        .ref_id(LAST)
        .datasource(expression_source)
        .expression(VALUE)
        .reducer("last")
        .settings(expr.ExprTypeReduceSettings().mode("dropNN"))
    )
    threshold = (
        expr.TypeThreshold()
        .ref_id(CONDITION)
        .datasource(expression_source)
        .expression(LAST)
        .conditions(
            [
                expr.ExprTypeThresholdConditions().evaluator(
                    expr.ExprTypeThresholdConditionsEvaluator()
                    .type(_OPERATOR[rule.comparison])
                    .params([rule.threshold])
                )
            ]
        )
    )
    window = alerting_models.RelativeTimeRange(from_val=QUERY_WINDOW_SECONDS, to=0)
    return (
        alerting.Rule(rule.name)
        .uid(rule_uid(rule))
        .org_id(ORG_ID)
        .folder_uid(FOLDER_UID)
        .rule_group(RULE_GROUP)
        .condition(CONDITION)
        .with_query(alerting.Query(VALUE).datasource_uid(DATASOURCE_UID).relative_time_range(window).model(value))
        .with_query(alerting.Query(LAST).datasource_uid(EXPRESSION_DATASOURCE).model(last))
        .with_query(alerting.Query(CONDITION).datasource_uid(EXPRESSION_DATASOURCE).model(threshold))
        .for_val(rule.pending)
        .no_data_state("OK")
        .exec_err_state("Error")
        .is_paused(False)
        .labels({"severity": rule.severity, **SERVICE_LABEL})
        .annotations(
            {
                "summary": rule.summary_with(f"$values.{LAST}.Value"),
                "description": rule.description,
            }
        )
    )


def rule_group(rules: Sequence[AlertRule]) -> alerting_models.RuleGroup:
    return (
        alerting.RuleGroup(RULE_GROUP)
        .folder_uid(FOLDER_UID)
        .interval(EVALUATION_SECONDS)
        .rules([grafana_rule(rule) for rule in rules])
        .build()
    )


def alerting_provisioning_document(rules: Sequence[AlertRule]) -> dict[str, Any]:
    """`provisioning/alerting/streamops.yaml`: the rule group in Grafana's file format."""
    group = json.loads(JSONEncoder().encode(rule_group(rules)))
    return {
        "apiVersion": 1,
        "groups": [
            {
                "orgId": ORG_ID,
                "name": group["title"],
                "folder": FOLDER_TITLE,
                "interval": f"{group['interval']}s",
                "rules": [{key: rule[key] for key in FILE_RULE_KEYS if key in rule} for rule in group["rules"]],
            }
        ],
    }
