"""How prometheus_client exposes each catalog kind, so queries select what a scrape really holds.

A catalog spec is not always the series name Prometheus stores: a counter `x_total` is exposed
as `x_total` (and `x_created`), an info `x` as `x_info`, a stateset `x` as one series per state
labelled `x="<state>"`, a histogram `x` as `x_bucket` (labelled `le`), `x_count` and `x_sum`. These suffix rules live here and nowhere else; queries and the
catalog-coverage test both go through them.
"""

from __future__ import annotations

from streamops.monitor.metric_catalog import CATALOG, MetricSpec

BUCKET_LABEL = "le"


def _counter_base(name: str) -> str:
    return name.removesuffix("_total")


def sample_name(spec: MetricSpec) -> str:
    """The series name a query selects to read the spec's value."""
    if spec.kind == "counter":
        return _counter_base(spec.name) + "_total"
    if spec.kind == "info":
        return spec.name + "_info"
    if spec.kind == "histogram":
        return spec.name + "_bucket"
    return spec.name


def exposed_names(spec: MetricSpec) -> tuple[str, ...]:
    """Every series name a scrape of the spec can hold."""
    if spec.kind == "counter":
        return (sample_name(spec), _counter_base(spec.name) + "_created")
    if spec.kind == "histogram":
        return (sample_name(spec), spec.name + "_count", spec.name + "_sum", spec.name + "_created")
    return (sample_name(spec),)


def state_label(spec: MetricSpec) -> str:
    """The label that names the state of a stateset's series (prometheus_client uses the name)."""
    if spec.kind != "stateset":
        raise ValueError(f"`{spec.name}` is a {spec.kind}, not a stateset")
    return spec.name


def exposed_labels(spec: MetricSpec) -> tuple[str, ...]:
    """Labels the exposed series carry: an info's value keys, a stateset's state label and a
    histogram's bucket bound too."""
    if spec.kind == "stateset":
        return spec.labels + (state_label(spec),)
    if spec.kind == "info":
        return spec.labels + spec.info_keys
    if spec.kind == "histogram":
        return spec.labels + (BUCKET_LABEL,)
    return spec.labels


def spec_for_series(series_name: str) -> MetricSpec | None:
    """The catalog spec a series name comes from, or None when no spec exposes it."""
    return _BY_EXPOSED_NAME.get(series_name)


_BY_EXPOSED_NAME: dict[str, MetricSpec] = {name: spec for spec in CATALOG for name in exposed_names(spec)}
