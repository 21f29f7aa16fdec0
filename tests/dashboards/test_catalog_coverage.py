"""Every metric a dashboard or rule reads exists in the monitor's catalog, under the name and
labels prometheus_client really exposes."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info, generate_latest

from streamops.dashboards.exposition import exposed_labels, exposed_names, sample_name, spec_for_series
from streamops.dashboards.expression_inventory import used_queries
from streamops.monitor.metric_catalog import CATALOG, MetricSpec

_SELECTOR = re.compile(r"\b(streamops_[A-Za-z0-9_]+)(\{(?P<matchers>[^}]*)\})?")
_MATCHER_LABEL = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|on)\s*\(([^)]*)\)")


def _exposition_of(spec: MetricSpec) -> str:
    """What prometheus_client writes for one sample of `spec`."""
    registry = CollectorRegistry()
    kinds = {"counter": Counter, "gauge": Gauge, "stateset": Enum, "info": Info, "histogram": Histogram}
    extra = {"states": list(spec.states)} if spec.kind == "stateset" else {}
    metric = kinds[spec.kind](spec.name, spec.help, spec.labels, registry=registry, **extra)
    child = metric.labels(**{label: "x" for label in spec.labels}) if spec.labels else metric
    if spec.kind == "counter":
        child.inc()
    elif spec.kind == "gauge":
        child.set(1)
    elif spec.kind == "stateset":
        child.state(spec.states[0])
    elif spec.kind == "histogram":
        child.observe(1)
    else:
        child.info({key: "v" for key in spec.info_keys})
    return generate_latest(registry).decode()


@pytest.mark.parametrize("spec", CATALOG, ids=lambda spec: spec.name)
def test_exposition_rules_match_prometheus_client(spec):
    text = _exposition_of(spec)
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")}
    assert names == set(exposed_names(spec))
    sample = next(line for line in text.splitlines() if line.startswith(sample_name(spec)))
    labels = set(re.findall(r'(\w+)="', sample))
    assert labels == set(exposed_labels(spec))


def test_every_metric_in_a_query_is_in_the_catalog(documents):
    queries = used_queries(documents)
    assert len(queries) > 40
    unknown = {
        (query.file, query.where, name)
        for query in queries
        for name in query.metric_names()
        if spec_for_series(name) is None
    }
    assert not unknown, f"queries read metrics missing from monitor/metric_catalog.py: {sorted(unknown)}"


def test_every_label_a_query_filters_on_exists_on_its_metric(documents):
    wrong = []
    for query in used_queries(documents):
        for match in _SELECTOR.finditer(query.text):
            spec = spec_for_series(match.group(1))
            filtered = set(_MATCHER_LABEL.findall(match.group("matchers") or ""))
            missing = filtered - set(exposed_labels(spec))
            if missing:
                wrong.append((query.where, spec.name, sorted(missing)))
    assert not wrong


def test_every_label_a_query_groups_by_exists_on_some_metric_it_reads(documents):
    wrong = []
    for query in used_queries(documents):
        available = {label for name in query.metric_names() for label in exposed_labels(spec_for_series(name))}
        for grouping in _GROUPING.findall(query.text):
            labels = {label.strip() for label in grouping.split(",") if label.strip()}
            if labels - available:
                wrong.append((query.where, sorted(labels - available)))
    assert not wrong


def test_dashboards_and_rules_use_every_catalog_metric(documents):
    used = {spec_for_series(name) for query in used_queries(documents) for name in query.metric_names()}
    unused = [spec.name for spec in CATALOG if spec not in used]
    assert not unused, f"no panel or rule shows {unused}: add them to dashboards/"
