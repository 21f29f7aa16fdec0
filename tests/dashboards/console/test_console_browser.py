"""The fleet view as a person sees it: a real `streamops console` server on a lake whose progress
log holds 300 streams of recorded progress, rendered by headless Chromium."""

from __future__ import annotations

import collections

import psutil
import pytest
from console_server import CHART, render_in_chromium, running_console, wait_for_http
from PIL import Image
from recorded_fleet import write_recorded_fleet
from recorded_runs import write_recorded_runs

from streamops.core.lake_layout import LakeLayout
from streamops.monitor.fleet_status import fleet_status

pytestmark = pytest.mark.services

STREAMS = 300


def test_fleet_view_of_300_streams_in_chromium(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    write_recorded_fleet(lake, STREAMS)
    truth = fleet_status(lake)
    counts = collections.Counter(row.status for row in truth)
    assert len(truth) == STREAMS and counts["failed"] and counts["stalled"]
    first_failed = next(row for row in truth if row.status == "failed")

    with running_console(lake.root, tmp_path / "console.log") as server:
        listening = [
            c.laddr
            for c in psutil.net_connections("tcp")
            if c.status == "LISTEN" and c.laddr.port == int(server.url.rsplit(":", 1)[1])
        ]
        assert [address.ip for address in listening] == ["127.0.0.1"], "binds loopback only"
        assert b"<title>" in wait_for_http(server.url + "/", 10)
        shot = tmp_path / "fleet.png"
        page = render_in_chromium(server.url + "/", "streams match", tmp_path / "chromium", shot)

    urgent = counts["failed"] + counts["stalled"]
    assert f"{STREAMS} streams, judged at" in page.text
    assert f"{urgent} streams need attention now" in page.text
    assert f"FAILED {first_failed.stream}: {first_failed.reason}" in page.text
    assert f"{STREAMS} of {STREAMS} streams match" in page.text
    assert first_failed.stream in page.text and "silver_g0001" not in page.text.split("streams match")[0]

    image = Image.open(shot).convert("RGB")
    assert image.size == (1600, 1800)
    small = image.resize((400, 450))
    colors = collections.Counter(small.getdata())
    assert len(colors) > 200, "a rendered page, not a blank one"
    reddish = sum(n for (r, g, b), n in colors.items() if r - max(g, b) > 60)
    assert reddish > 100, "failed and stalled streams are drawn in red"


def coloured_rows(shot) -> int:
    """Pixel rows of the upper part of a chart (above its legend) that hold a coloured mark."""
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    plot = image.crop((0, 0, width, int(height * 0.6)))
    pixels = plot.load()
    return sum(
        1 for y in range(plot.size[1]) if any(max(pixels[x, y]) - min(pixels[x, y]) > 60 for x in range(plot.size[0]))
    )


def test_the_stream_views_rate_chart_draws_its_plot_in_chromium(tmp_path):
    """The input-vs-processed chart once drew no plot at all (Streamlit's fit autosize gave
    its height to the title and the legend below it: a flat line). On a recorded run whose
    processing rate varies, the line must rise and fall over many pixel rows."""
    lake = LakeLayout.at(tmp_path / "lake")
    write_recorded_runs(lake)
    with running_console(lake.root, tmp_path / "console.log") as server:
        page = render_in_chromium(
            server.url + "/stream?stream=window_rocksdb",
            "Input vs processed",
            tmp_path / "chromium",
            ready_selectors=("[data-testid='stApp'][data-test-script-state='notRunning']", CHART),
            charts_dir=tmp_path / "charts",
        )
    assert "Input vs processed rows/s" in page.text
    rates = page.chart_shots[0]
    assert rates.name == "chart-0.png"  # the first chart on the page is drawn
    assert coloured_rows(rates) > 30, "the rates chart draws a plot, not a flat line"
