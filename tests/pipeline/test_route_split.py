"""The sink splits each Arrow batch by route: every row once, routes in order, rows in arrival order."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamops.pipeline.delta_connector.lake_sink import split_routes
from streamops.pipeline.delta_connector.write_plan import ROUTE_COLUMN
from streamops.pipeline.exceptions import PipelineConfigError


def batch(routes: list[str | None]) -> pa.Table:
    return pa.table({ROUTE_COLUMN: pa.array(routes, pa.string()), "n": list(range(len(routes)))})


@pytest.mark.parametrize("route_count", [1, 2, 64])
def test_every_row_lands_once_under_its_route_in_arrival_order(route_count):
    names = [f"r{k:02d}" for k in range(route_count)]
    routes = [names[(i * 7) % route_count] for i in range(500)]
    table = batch(routes)
    split = list(split_routes(table))
    assert [route for route, _ in split] == sorted(set(routes))
    for route, rows in split:
        assert rows.column(ROUTE_COLUMN).to_pylist() == [route] * rows.num_rows
        assert rows.column("n").to_pylist() == [i for i, r in enumerate(routes) if r == route]
    assert sum(rows.num_rows for _, rows in split) == table.num_rows


def test_rows_without_a_route_are_refused():
    with pytest.raises(PipelineConfigError):
        list(split_routes(batch(["events", None])))
    assert list(split_routes(batch([]))) == []
