"""The fleet view as a person sees it: a real `streamops console` server on a lake whose progress
log holds 300 streams of recorded progress, rendered by headless Chromium."""

from __future__ import annotations

import collections

import psutil
from console_server import render_in_chromium, running_console, wait_for_http
from PIL import Image
from recorded_fleet import write_recorded_fleet

from monitor.fleet_status import fleet_status
from streamops.lake_layout import LakeLayout

STREAMS = 300


def test_fleet_view_of_300_streams_in_chromium(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    write_recorded_fleet(lake, STREAMS)
    truth = fleet_status(lake)
    counts = collections.Counter(row.status for row in truth)
    assert len(truth) == STREAMS and counts["failed"] and counts["stalled"]
    first_failed = next(row for row in truth if row.status == "failed")

    with running_console(lake.root, tmp_path / "console.log") as server:
        listening = [c.laddr for c in psutil.net_connections("tcp") if c.status == "LISTEN"
                     and c.laddr.port == int(server.url.rsplit(":", 1)[1])]
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
