"""Screenshots of the ops console's pages at 1280 px, for docs/dashboards.md.

    python docs/scripts/console_screenshots.py --lake streamops-demo/lake --out docs/img/console

Starts `streamops console` on the lake (a free port, loopback), opens each page in headless
Chromium (Debian's /usr/bin/chromium through Playwright's client, as the console's browser tests
do) in a 1280 x 800 window, waits until every table and chart is drawn, and saves the whole page
as `<page>.png`, reduced to a small palette so the images stay small in the repository. Pages
whose lake holds nothing for them (a lake without CDC tables) show what they show then; `--only`
takes some pages from another lake.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

PAGES = {
    "fleet": "/",
    "stream": "/stream",
    "schemas": "/schemas",
    "quarantine": "/quarantine",
    "groups": "/groups",
    "cdc": "/cdc",
}
WIDTH, HEIGHT = 1280, 800
MAX_HEIGHT = 3200
COLOURS = 128
CHROMIUM = "/usr/bin/chromium"
DRAWN = """() => {
    const shown = selector => [...document.querySelectorAll(selector)].filter(e => !e.closest('details:not([open])'));
    return document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']") !== null
        && document.querySelector('h1') !== null
        && shown('[data-testid="stDataFrame"]').every(grid => grid.querySelector('canvas'))
        && shown('[data-testid="stVegaLiteChart"]').every(chart => chart.querySelector('svg, canvas'));
}"""
"""The script has run and every table and chart in view is drawn (not those in closed expanders)."""
SHAPE = """() => [
    document.querySelectorAll('[data-testid="stDataFrame"] canvas').length,
    document.querySelectorAll('[data-testid="stVegaLiteChart"]').length,
    document.querySelector('[data-testid=stMainBlockContainer]')?.scrollHeight,
]"""
"""What changes while the page is still arriving (Streamlit mounts tables and charts late)."""
SETTLED_POLLS = 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lake", required=True, help="the lake the console shows")
    parser.add_argument("--out", type=Path, required=True, help="where the PNGs go")
    parser.add_argument("--only", nargs="+", choices=list(PAGES), help="these pages only")
    parser.add_argument(
        "--query",
        action="append",
        default=[],
        metavar="PAGE:PARAMS",
        help="query parameters of a page, e.g. stream:stream=silver_g0001 (default: the page's own choice)",
    )
    args = parser.parse_args(argv)
    queries = dict(q.split(":", 1) for q in args.query)
    args.out.mkdir(parents=True, exist_ok=True)
    with console(args.lake) as url:
        for name in args.only or PAGES:
            path = PAGES[name] + (f"?{queries[name]}" if name in queries else "")
            target = args.out / f"{name}.png"
            screenshot(url + path, target)
            print(f"{target} ({target.stat().st_size // 1024} KB)")
    return 0


@contextlib.contextmanager
def console(lake: str) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "streamops", "console", "--lake", lake, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"streamops console did not start on {url}")
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def screenshot(url: str, target: Path) -> None:
    """The whole page at WIDTH px: the window grows to the page's height (Streamlit scrolls its
    main area, not the document, so a full-page capture of the document would cut it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(url)
            shape, same, deadline = None, 0, time.monotonic() + 120
            while same < SETTLED_POLLS:  # drawn, and unchanged for a second
                if time.monotonic() > deadline:
                    raise SystemExit(f"{url} did not finish drawing in 120 s")
                page.wait_for_timeout(250)
                current = page.evaluate(SHAPE) if page.evaluate(DRAWN) else None
                same = same + 1 if current is not None and current == shape else 0
                shape = current
                height = (current[2] if current else None) or HEIGHT
                page.set_viewport_size({"width": WIDTH, "height": min(MAX_HEIGHT, max(HEIGHT, height + 100))})
            page.screenshot(path=str(target))
        finally:
            browser.close()
    Image.open(target).convert("RGB").quantize(COLOURS, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)


if __name__ == "__main__":
    raise SystemExit(main())
