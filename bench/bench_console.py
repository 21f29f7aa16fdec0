"""How fast the ops console's fleet view renders 1,000 streams, against baselines in the same run:

1. `fleet_status` alone (what `streamops status` computes; the console must not add much);
2. a minimal Streamlit app with no console logic that calls `fleet_status` and shows every row
   in one `st.dataframe`, run with AppTest, against the console's fleet view run with AppTest
   (cold: caches cleared; warm: cached reads, what every click and every other viewer gets;
   and a filter change);
3. time to content in headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
   the console served by `streamops console`, against the minimal app served by `streamlit run`,
   from navigation until the table is drawn; first load (cold cache) and reload (warm).

The progress log is built from recorded real progress events renamed per stream
(tests/dashboards/console/recorded_fleet.py), 12 batches per stream.

    python bench/bench_console.py [--streams 1000] [--repeats 5]

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "dashboards" / "console"))

from bench_support import machine  # noqa: E402
from console_server import render_in_chromium, running_console, wait_for_http  # noqa: E402
from ports import free_port  # noqa: E402
from recorded_fleet import write_recorded_fleet  # noqa: E402

MINIMAL_APP = """
import os
import streamlit as st
from streamops.monitor.fleet_status import fleet_status
from streamops.core.lake_layout import LakeLayout

rows = fleet_status(LakeLayout.at(os.environ["STREAMOPS_CONSOLE_LAKE"]))
st.caption(f"{len(rows)} rows shown")
st.dataframe([row.to_json() for row in rows])
"""


def seconds(function, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(times) * 1000, 1), "max_ms": round(max(times) * 1000, 1)}


def apptest_runs(lake_root: Path, repeats: int) -> dict[str, Any]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from streamops.dashboards.console import APP_PATH, LAKE_ENV

    os.environ[LAKE_ENV] = str(lake_root)

    def minimal() -> None:
        at = AppTest.from_string(MINIMAL_APP, default_timeout=120).run()
        assert not at.exception and len(at.dataframe[0].value) > 0

    def console_cold() -> None:
        st.cache_data.clear()
        at = AppTest.from_file(str(APP_PATH), default_timeout=120).run()
        assert not at.exception and "streams match" in " ".join(c.value for c in at.caption)

    console_cold()  # imports and first compilation, not measured
    warm_app = AppTest.from_file(str(APP_PATH), default_timeout=120).run()

    def console_warm() -> None:
        warm_app.run()
        assert not warm_app.exception

    def console_filter() -> None:
        warm_app.multiselect(key="status_filter").set_value(["failed", "stalled"]).run()
        warm_app.multiselect(key="status_filter").set_value([]).run()

    return {
        "minimal_app_apptest": summary(seconds(minimal, repeats)),
        "console_fleet_apptest_cold": summary(seconds(console_cold, repeats)),
        "console_fleet_apptest_warm": summary(seconds(console_warm, repeats)),
        "console_fleet_filter_change_two_reruns": summary(seconds(console_filter, repeats)),
    }


def browser_runs(lake_root: Path, scratch: Path) -> dict[str, Any]:
    from streamops.dashboards.console import LAKE_ENV

    results: dict[str, Any] = {}
    with running_console(lake_root, scratch / "console.log") as server:
        first = render_in_chromium(server.url, "streams match", scratch / "chromium-1")
        again = render_in_chromium(server.url, "streams match", scratch / "chromium-2")
        results["console_first_load_s"] = round(first.seconds_to_content, 2)
        results["console_reload_s"] = round(again.seconds_to_content, 2)
    app = scratch / "minimal_app.py"
    app.write_text(MINIMAL_APP)
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(app),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        env={**os.environ, LAKE_ENV: str(lake_root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/_stcore/health", 60, b"ok")
        ready = ("[data-testid='stDataFrame'] canvas",)
        minimal = render_in_chromium(url, "rows shown", scratch / "chromium-3", ready_selectors=ready)
        results["minimal_app_first_load_s"] = round(minimal.seconds_to_content, 2)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium measurements")
    args = parser.parse_args()

    from streamops.core.lake_layout import LakeLayout
    from streamops.monitor.fleet_status import fleet_status

    with tempfile.TemporaryDirectory(prefix="bench-console-") as scratch:
        lake = LakeLayout.at(Path(scratch) / "lake")
        write_recorded_fleet(lake, args.streams)
        result: dict[str, Any] = {"benchmark": "console", "machine": machine(), "streams": args.streams}
        result["fleet_status_alone"] = summary(seconds(lambda: fleet_status(lake), args.repeats))
        result["apptest"] = apptest_runs(lake.root, args.repeats)
        if not args.no_browser:
            result["chromium_time_to_content"] = browser_runs(lake.root, Path(scratch))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
