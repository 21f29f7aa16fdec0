"""The expression builders: scopes filter only labels a metric has, states are checked."""

from __future__ import annotations

import pytest

from streamops.dashboards import promql
from streamops.dashboards.exposition import sample_name
from streamops.monitor.metric_catalog import BATCH_PHASES, EVENT_TYPE_ROWS, SCHEMA_ALERTS, STREAM_INFO, STREAM_UP


def test_a_scope_filters_only_the_labels_a_metric_carries():
    assert promql.selector(STREAM_UP, promql.FLEET) == sample_name(STREAM_UP) + '{stream=~"$stream"}'
    assert promql.selector(EVENT_TYPE_ROWS, promql.FLEET) == (
        sample_name(EVENT_TYPE_ROWS) + '{event_type=~"$event_type", group=~"$group"}'
    )
    assert promql.selector(SCHEMA_ALERTS, promql.ONE_STREAM) == sample_name(SCHEMA_ALERTS)


def test_the_info_metric_is_filtered_by_its_value_keys():
    scope = promql.Scope.of(group='=~"$group"')
    assert promql.selector(STREAM_INFO, scope) == sample_name(STREAM_INFO) + '{group=~"$group"}'


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="`stuck` is not a stream status"):
        promql.in_status("stuck")


def test_the_whole_batch_phase_is_a_spark_phase():
    assert promql.TOTAL_PHASE in BATCH_PHASES
    assert f'phase!="{promql.TOTAL_PHASE}"' in promql.phase_durations()
