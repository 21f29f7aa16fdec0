"""Every console page as a new user meets it, on lakes the real pipeline wrote with the monitor
attached: bronze reading a Kafka topic, its streams running idle beside a query that failed; and
bronze reading landing files of Debezium changes that CDC streams apply (pipeline_lakes.py).

Through AppTest, every table the pages hand Streamlit draws a missing value as an em dash and
holds no `None`, `nan` or `NaT` text, every time column and time axis is 24-hour UTC and says
so, and each source is named by what it reads. In headless Chromium at 1280 px, no page shows
such a word, the fleet table needs no horizontal scrolling, no page scrolls sideways, and no
source is described by its class.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from console_server import chromium_page, running_console, visit
from pipeline_lakes import FAILING_STREAM, RunningLake, cdc_files_lake, running_kafka_lake
from test_console_views import open_page, texts

from streamops.core.lake_layout import LakeLayout
from streamops.monitor.fleet_status import fleet_status

pytestmark = pytest.mark.services

WIDTH = 1280
EM_DASH = "—"
MISSING = re.compile(r"\b(?:None|nan|NaN|NaT)\b")
CLASS_NAME = re.compile(r"(?:[A-Za-z_$][\w$]*\.){2,}[A-Za-z_$][\w$]*|PythonMicroBatchStream")
"""A Java or Python class name (`org.apache.spark...PythonMicroBatchStreamWithAdmissionControl`)."""
URLS = {
    "fleet_view.py": "/",
    "stream_view.py": "/stream",
    "schema_view.py": "/schemas",
    "quarantine_view.py": "/quarantine",
    "expectations_view.py": "/expectations",
    "groups_view.py": "/groups",
    "cdc_view.py": "/cdc",
}
SEEN = """() => ({
    text: document.body.innerText,
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    grids: [...document.querySelectorAll('[data-testid="stDataFrame"]')]
        .filter(grid => !grid.closest('details:not([open])'))
        .map(grid => {
            const scroller = grid.querySelector('.dvn-scroller');
            return {
                key: (grid.closest('[class*="st-key-"]')?.className.match(/st-key-([\\w-]+)/) || [])[1] || null,
                scroll: scroller ? [scroller.scrollWidth, scroller.clientWidth] : null,
                headers: [...grid.querySelectorAll('table th')].map(cell => cell.textContent),
                rows: [...grid.querySelectorAll('table tbody tr')].map(
                    row => [...row.querySelectorAll('td')].map(cell => cell.textContent)),
            };
        }),
})"""
"""What a reader sees: the page's text, its width, and each visible table's cells (the grid draws
on a canvas; its accessible table holds the cells in view) and scroll width."""


@pytest.fixture(scope="module")
def cdc_lake(spark, tmp_path_factory) -> LakeLayout:
    return cdc_files_lake(spark, tmp_path_factory.mktemp("cdc_files"))


@pytest.fixture(scope="module")
def kafka_lake(spark, tmp_path_factory, cdc_lake) -> Iterator[RunningLake]:
    """Built after the CDC lake, whose run has stopped: a monitor records every query of the session."""
    with running_kafka_lake(spark, tmp_path_factory.mktemp("kafka")) as running:
        yield running


def pages(lake: LakeLayout) -> list[tuple[str, dict[str, str]]]:
    """Every view, and the stream view of every stream: (page script, query parameters)."""
    streams = [row.stream for row in fleet_status(lake)]
    return [
        ("fleet_view.py", {}),
        *[("stream_view.py", {"stream": stream}) for stream in streams],
        ("schema_view.py", {}),
        ("quarantine_view.py", {}),
        ("expectations_view.py", {}),
        ("groups_view.py", {}),
        ("cdc_view.py", {}),
    ]


def expected_reads(lake: LakeLayout, stream: str, kafka: RunningLake | None) -> str:
    """What the stream's one source reads, from how each lake was built (pipeline_lakes.py)."""
    if stream == "bronze":
        return f"topic {kafka.topic}" if kafka else str(lake.root.local_path.parent / "landing")
    if stream == "management":
        return "_system/schema_registry"
    if stream == FAILING_STREAM:
        return "generated rows, 20 rows/s"
    assert stream.startswith("silver_"), stream
    return "bronze/events"


def lakes(kafka_lake: RunningLake, cdc_lake: LakeLayout) -> list[tuple[LakeLayout, RunningLake | None]]:
    return [(kafka_lake.lake, kafka_lake), (cdc_lake, None)]


def test_the_lakes_hold_every_kind_of_source_and_a_failed_and_an_idle_stream(kafka_lake, cdc_lake):
    kafka_statuses = {row.stream: row.status for row in fleet_status(kafka_lake.lake)}
    assert kafka_statuses[FAILING_STREAM] == "failed"
    assert kafka_statuses["bronze"] == "idle" and any(s == "idle" for n, s in kafka_statuses.items() if "silver" in n)
    kinds = {lag.kind for lake in (kafka_lake.lake, cdc_lake) for row in fleet_status(lake) for lag in row.sources}
    assert {"kafka", "file", "delta", "rate"} <= kinds
    assert cdc_lake.cdc_applies.is_dir()


def test_every_page_marks_missing_values_and_times_and_names_sources_by_what_they_read(console, kafka_lake, cdc_lake):
    problems: list[str] = []
    for lake, kafka in lakes(kafka_lake, cdc_lake):
        for script, params in pages(lake):
            at = open_page(console, lake, script, **params)
            where = f"{lake.root.local_path.parent.name} {script} {params}"
            problems += [f"{where}: {p}" for p in _page_problems(at)]
            if script == "stream_view.py":
                (sources,) = [d.value for d in at.dataframe if {"reads", "kind"} <= set(d.value.columns)]
                reads = list(sources["reads"])
                if reads != [expected_reads(lake, params["stream"], kafka)]:
                    problems.append(f"{where}: the source reads {reads}")
    assert problems == []


def _page_problems(at) -> list[str]:
    problems = [f"text says {word!r}" for word in MISSING.findall(texts(at))]
    for metric in at.metric:
        for part in (metric.label, metric.value, metric.proto.delta):
            problems += [f"card {metric.label!r} says {word!r}" for word in MISSING.findall(str(part))]
    for table in at.dataframe:
        frame, config = table.value, json.loads(table.proto.columns or "{}")
        if table.proto.placeholder != EM_DASH:
            problems.append(f"table {list(frame.columns)} draws missing values as {table.proto.placeholder!r}")
        for column in frame.columns:
            cells = frame[column]
            for cell in cells[cells.map(lambda v: isinstance(v, str))]:
                if not cell.strip() or MISSING.fullmatch(cell.strip()):
                    problems.append(f"column {column!r} holds the text {cell!r}")
            if str(cells.dtype).startswith("datetime64"):
                shown = config.get(str(column), {})
                time_format = shown.get("type_config", {}).get("format", "")
                if "UTC" not in shown.get("label", "") or "HH" not in time_format:
                    problems.append(f"time column {column!r} is shown as {shown}")
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        if "%I" in chart.proto.spec:
            problems.append(f"chart {spec.get('title')!r} uses a 12-hour clock")
        for channel, encoding in spec.get("encoding", {}).items():
            if channel in ("x", "y") and encoding.get("type") == "temporal":
                if encoding.get("scale", {}).get("type") != "utc" or "UTC" not in str(encoding.get("title")):
                    problems.append(f"chart {spec.get('title')!r} has a time axis not in UTC: {encoding}")
        if "per minute" in str(spec.get("title")) and spec["encoding"]["x"].get("type") != "ordinal":
            problems.append(f"chart {spec.get('title')!r} draws minutes on a time axis (empty minutes between bars)")
    return problems


def test_every_page_in_chromium_at_1280_px_fits_and_shows_no_raw_value_or_class_name(kafka_lake, cdc_lake, tmp_path):
    problems: list[str] = []
    for lake, kafka in lakes(kafka_lake, cdc_lake):
        name = lake.root.local_path.parent.name
        with (
            running_console(lake.root, tmp_path / f"console-{name}.log") as server,
            chromium_page(tmp_path / f"chromium-{name}", viewport=(WIDTH, 900)) as page,
        ):
            for script, params in pages(lake):
                query = "&".join(f"{key}={value}" for key, value in params.items())
                visit(page, server.url + URLS[script] + (f"?{query}" if query else ""))
                seen = page.evaluate(SEEN)
                where = f"{name} {URLS[script]} {params}"
                problems += [f"{where}: {p}" for p in _seen_problems(seen, script)]
                if script == "stream_view.py":
                    problems += [
                        f"{where}: {p}" for p in _source_problems(seen, expected_reads(lake, **params, kafka=kafka))
                    ]
                if script == "fleet_view.py" and kafka is not None:
                    (fleet,) = [g for g in seen["grids"] if g["key"] == "fleet_table"]
                    statuses = {row[0] for row in fleet["rows"]}
                    assert {"failed", "idle"} <= statuses, statuses
    assert problems == []


def _seen_problems(seen: dict, script: str) -> list[str]:
    problems = [f"the page says {word!r}" for word in MISSING.findall(seen["text"])]
    if "PythonMicroBatchStream" in seen["text"]:
        problems.append("the page names a source by its class")
    width, visible = seen["page"]
    if width > visible:
        problems.append(f"the page scrolls sideways ({width} px in {visible} px)")
    for grid in seen["grids"]:
        for row in grid["rows"]:
            problems += [f"table {grid['headers']} shows {cell!r}" for cell in row if MISSING.fullmatch(cell.strip())]
    if script == "fleet_view.py":
        (fleet,) = [g for g in seen["grids"] if g["key"] == "fleet_table"]
        content, visible = fleet["scroll"]
        if content > visible:
            problems.append(f"the fleet table scrolls sideways ({content} px in {visible} px)")
    return problems


def _source_problems(seen: dict, expected: str) -> list[str]:
    sources = [g for g in seen["grids"] if g["headers"][:2] == ["#", "reads"]]
    if len(sources) != 1:
        return [f"{len(sources)} sources tables"]
    (grid,) = sources
    reads = [row[1] for row in grid["rows"]]
    problems = [f"a source is described as the class {r!r}" for r in reads if CLASS_NAME.search(r)]
    if reads != [expected]:
        problems.append(f"the source reads {reads}, not {expected!r}")
    return problems
