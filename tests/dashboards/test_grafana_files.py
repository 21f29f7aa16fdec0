"""Grafana provisioning and dashboards: they parse, reference each other and the generated
dashboards, and every alert exists for Grafana and Prometheus alike."""

from __future__ import annotations

import json
import re

import yaml

from streamops.dashboards.alert_rules import build_alert_rules
from streamops.dashboards.build import (
    ALERTING_PROVISIONING,
    DASHBOARD_FILES,
    DASHBOARD_PROVISIONING,
    DATASOURCE_PROVISIONING,
    PROMETHEUS_RULES,
)
from streamops.dashboards.expression_inventory import dashboard_queries, used_queries
from streamops.dashboards.grafana_alerts import EXPRESSION_DATASOURCE
from streamops.dashboards.panels import DATASOURCE_VARIABLE, FLEET_UID, STREAM_UID
from streamops.dashboards.promql import GRAFANA_VARIABLES
from streamops.dashboards.provisioning import GRAFANA_DASHBOARDS_PATH


def load(built_dir, path):
    text = (built_dir / path).read_text()
    return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)


def all_panels(dashboard):
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels") or []


def test_datasource_is_what_the_alert_rules_query(built_dir):
    datasources = load(built_dir, DATASOURCE_PROVISIONING)["datasources"]
    assert [ds["type"] for ds in datasources] == ["prometheus"]
    alerting = load(built_dir, ALERTING_PROVISIONING)
    used = {
        query["datasourceUid"]
        for group in alerting["groups"]
        for rule in group["rules"]
        for query in rule["data"]
        if query["datasourceUid"] != EXPRESSION_DATASOURCE
    }
    assert used == {datasources[0]["uid"]}


def test_dashboard_provider_serves_the_generated_dashboards(built_dir):
    provider = load(built_dir, DASHBOARD_PROVISIONING)["providers"][0]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == GRAFANA_DASHBOARDS_PATH
    alerting_folder = load(built_dir, ALERTING_PROVISIONING)["groups"][0]["folder"]
    assert provider["folder"] == alerting_folder
    uids = {load(built_dir, path)["uid"] for path in DASHBOARD_FILES}
    assert uids == {FLEET_UID, STREAM_UID}


def test_alerting_file_has_every_rule_with_consistent_refs(built_dir):
    groups = load(built_dir, ALERTING_PROVISIONING)["groups"]
    assert [(g["name"], g["folder"], g["interval"]) for g in groups] == [("streamops", "streamops", "60s")]
    rules = groups[0]["rules"]
    assert [r["title"] for r in rules] == [rule.name for rule in build_alert_rules()]
    assert len({r["uid"] for r in rules}) == len(rules)
    for rule in rules:
        assert len(rule["uid"]) <= 40
        refs = [query["refId"] for query in rule["data"]]
        assert rule["condition"] == refs[-1]
        for position, query in enumerate(rule["data"]):
            assert query["model"]["refId"] == query["refId"]
            if query["datasourceUid"] == EXPRESSION_DATASOURCE:
                assert query["model"]["expression"] in refs[:position]
        assert {"summary", "description"} <= set(rule["annotations"])
        assert "streamops status" in rule["annotations"]["description"]


def test_grafana_and_prometheus_rules_agree(built_dir):
    prometheus = {r["alert"]: r for r in load(built_dir, PROMETHEUS_RULES)["groups"][0]["rules"]}
    grafana = {r["title"]: r for r in load(built_dir, ALERTING_PROVISIONING)["groups"][0]["rules"]}
    assert prometheus.keys() == grafana.keys()
    for rule in build_alert_rules():
        prom, graf = prometheus[rule.name], grafana[rule.name]
        assert prom["expr"].startswith(graf["data"][0]["model"]["expr"])
        assert prom["for"] == graf["for"]
        assert prom["labels"] == graf["labels"]
        threshold = graf["data"][-1]["model"]["conditions"][0]["evaluator"]
        assert threshold["params"] == [rule.threshold]
        assert prom["expr"].endswith(f" {rule.comparison} {threshold['params'][0]:g}")


def test_doctor_is_suggested_where_a_checkpoint_may_be_at_fault(built_dir):
    grafana = {r["title"]: r for r in load(built_dir, ALERTING_PROVISIONING)["groups"][0]["rules"]}
    for name in ("StreamStalled", "StreamFailed", "StreamAbsent", "BacklogSecondsHigh"):
        assert "streamops checkpoint doctor" in grafana[name]["annotations"]["description"]


def test_dashboards_read_from_the_datasource_variable(built_dir):
    for path in DASHBOARD_FILES:
        dashboard = load(built_dir, path)
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables[DATASOURCE_VARIABLE]["type"] == "datasource"
        assert variables[DATASOURCE_VARIABLE]["query"] == "prometheus"
        for panel in all_panels(dashboard):
            if panel["type"] != "row":
                assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        for variable in variables.values():
            if variable["type"] == "query":
                assert variable["datasource"]["uid"] == "${datasource}"


def test_panels_have_unique_ids_and_unique_refs(built_dir):
    for path in DASHBOARD_FILES:
        dashboard = load(built_dir, path)
        ids = [panel["id"] for panel in all_panels(dashboard)]
        assert len(ids) == len(set(ids)) and 0 not in ids
        for panel in all_panels(dashboard):
            refs = [target["refId"] for target in panel.get("targets") or []]
            assert len(refs) == len(set(refs)) and "" not in refs


def test_fleet_has_the_variables_and_sections_on_call_needs(built_dir):
    fleet = load(built_dir, "dashboards/streamops-fleet.json")
    names = [v["name"] for v in fleet["templating"]["list"]]
    assert names == [DATASOURCE_VARIABLE, "group", "stream", "event_type"]
    titles = {panel["title"] for panel in all_panels(fleet)}
    for expected in (
        "Failed",
        "Stalled",
        "Lagging",
        "Streams",
        "Top 10 lagging streams",
        "Throughput, all streams",
        "Freshness per stream",
        "Backlog (versions)",
        "Backlog (files)",
        "Backlog (bytes)",
        "Quarantine by reason",
        "Schema versions",
    ):
        assert expected in titles


def test_stream_detail_is_about_one_stream(built_dir):
    detail = load(built_dir, "dashboards/streamops-stream.json")
    stream = next(v for v in detail["templating"]["list"] if v["name"] == "stream")
    assert stream["multi"] is False and stream["includeAll"] is False
    for query in dashboard_queries("detail", detail):
        if query.kind == "panel":
            assert 'stream="$stream"' in query.text, query.where
    phases = next(p for p in all_panels(detail) if p["title"] == "Batch duration by phase")
    assert phases["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"


def test_queries_use_only_the_grafana_variables_promql_declares(documents):
    used = set()
    for query in used_queries(documents):
        used |= {a or b for a, b in re.findall(r"\$(\w+)|\$\{(\w+)\}", query.text)}
    assert used == set(GRAFANA_VARIABLES)
    for query in used_queries(documents):
        if query.kind in ("grafana_alert", "prometheus_alert"):
            assert "$" not in query.text, f"{query.where} uses a dashboard variable"
