"""A real `streamops console` server on a free port, and headless Chromium driven by Playwright
(Debian's /usr/bin/chromium: Playwright's own browser download is not used)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ports import free_port
from waiting import wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def wait_for_http(url: str, timeout: float, expect: bytes | None = None) -> bytes:
    """The body of the first 200 answer from `url` (holding `expect`); the server may still be starting."""

    def answer() -> bytes | None:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
        except OSError:
            return None
        return body if response.status == 200 and (expect is None or expect in body) else None

    return wait_until(answer, timeout, f"{url} to answer", 0.3)


@dataclass(frozen=True)
class ConsoleServer:
    url: str
    process: subprocess.Popen


@contextlib.contextmanager
def running_console(lake: Path, log: Path) -> Iterator[ConsoleServer]:
    port = free_port()
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamops", "console", "--lake", str(lake), "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for_http(url + "/_stcore/health", 60, b"ok")
            yield ConsoleServer(url, process)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)


@dataclass(frozen=True)
class RenderedPage:
    text: str
    seconds_to_content: float
    screenshot: Path | None
    chart_shots: tuple[Path, ...] = ()


CHART = "[data-testid='stVegaLiteChart']"
READY_SELECTORS = (
    "[data-testid='stApp'][data-test-script-state='notRunning']",
    "[data-testid='stDataFrame'] canvas",
    "[data-testid='stMultiSelect']",
)
"""The script finished, and the lazily loaded table and widgets are drawn (not placeholders)."""


def render_in_chromium(
    url: str,
    wait_for_text: str,
    user_data_dir: Path,
    screenshot: Path | None = None,
    viewport: tuple[int, int] = (1600, 1800),
    timeout_s: float = 90,
    ready_selectors: tuple[str, ...] = READY_SELECTORS,
    charts_dir: Path | None = None,
) -> RenderedPage:
    """Load `url`, wait until the page shows `wait_for_text` (Streamlit renders client-side)
    and every `ready_selectors` element is there, then take its text and optionally a screenshot
    (and one of each visible chart, into `charts_dir`, named by its position on the page)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": viewport[0], "height": viewport[1]},
        )
        try:
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(url)
            page.get_by_text(wait_for_text).first.wait_for(timeout=timeout_s * 1000)
            for selector in ready_selectors:
                page.wait_for_selector(selector, timeout=timeout_s * 1000)
            seconds = time.perf_counter() - started
            page.wait_for_timeout(500)
            text = page.inner_text("body")
            if screenshot is not None:
                page.screenshot(path=str(screenshot))
            shots: list[Path] = []
            if charts_dir is not None:
                charts_dir.mkdir(parents=True, exist_ok=True)
                for index, chart in enumerate(page.locator(CHART).all()):
                    if not chart.is_visible():  # a chart with no plot has no box at all
                        continue
                    shots.append(charts_dir / f"chart-{index}.png")
                    chart.screenshot(path=str(shots[-1]))
            return RenderedPage(text, seconds, screenshot, tuple(shots))
        finally:
            browser.close()


SCRIPT_DONE = "[data-testid='stApp'][data-test-script-state='notRunning']"
DRAWN = """() => {
    const shown = selector => [...document.querySelectorAll(selector)].filter(e => !e.closest('details:not([open])'));
    return shown('[data-testid="stDataFrame"]').every(grid => {
            const table = grid.querySelector('table');
            return grid.querySelector('canvas') && table
                && (table.getAttribute('aria-rowcount') === '1' || table.querySelector('tbody tr'));
        })
        && shown('[data-testid="stVegaLiteChart"]').every(chart => chart.querySelector('svg, canvas'));
}"""
"""Every table (its canvas, and the accessible table that lists its cells) and chart in view is
drawn, not a placeholder; those in a closed expander are not drawn until it opens."""


@contextlib.contextmanager
def chromium_page(user_data_dir: Path, viewport: tuple[int, int] = (1280, 900)) -> Iterator[Any]:
    """One headless Chromium page (Playwright's `Page`) for many visits."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": viewport[0], "height": viewport[1]},
        )
        try:
            yield browser.new_page()
        finally:
            browser.close()


SHAPE = """() => [
    document.querySelectorAll('[data-testid="stDataFrame"] tbody tr').length,
    document.querySelectorAll('[data-testid="stVegaLiteChart"]').length,
    document.body.innerText.length,
]"""
"""What grows while the page is still arriving: table rows, charts, text."""
SETTLED_POLLS = 4


def visit(page: Any, url: str, timeout_s: float = 90) -> None:
    """Open `url` and wait until its script has run, every table and chart is drawn, and the page
    has stopped changing (Streamlit mounts tables and charts after the script's first elements:
    a page with none yet is "drawn" too)."""
    page.goto(url)
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    shape, same = None, 0
    while same < SETTLED_POLLS:
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} was still changing after {timeout_s:g}s")
        page.wait_for_timeout(250)
        ready = page.locator(SCRIPT_DONE).count() == 1 and page.evaluate(DRAWN)
        current = page.evaluate(SHAPE) if ready else None
        same = same + 1 if ready and current == shape else 0
        shape = current
