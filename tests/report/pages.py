"""Debian's headless Chromium driven by Playwright for the viewer and report tests, and what they look at."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
TIMEOUT_MS = 120_000
"""How long a step may wait for the page (a hang guard on a loaded machine, not a speed requirement)."""
VIEWPORT = {"width": 1400, "height": 1000}


def launch_chromium():
    """(playwright, browser): one Chromium for the whole session, or a skip where it is absent."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"Debian's chromium is not installed at {CHROMIUM} (`make test` installs it with apt-get)"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra `view`)")
    p = sync_api.sync_playwright().start()
    return p, p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def visible_box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0, selector
    return box


def rows(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#episodes tbody tr", "trs => trs.map(tr => [...tr.cells].map(td => td.textContent))"
    )


def wait_page(page, needle: str) -> None:
    page.wait_for_function(
        "needle => document.getElementById('page-info').textContent.includes(needle)", arg=needle
    )


ON_SCREEN = "r.height > 0 && r.top >= -1 && r.bottom <= innerHeight + 1"
"""Wholly on screen, within a pixel: layout is sub-pixel, and a step scrolled to the bottom edge ends at
1000.41 px of a 1000 px window in Chromium 156 (its fractional font metrics), a fraction no user sees."""


def wait_in_viewport(page, selector: str, timeout_ms: int = 60_000) -> None:
    """Wait until the element is wholly on screen: a scroll (smooth, or behind a busy machine) settles first."""
    page.wait_for_function(
        """s => { const e = document.querySelector(s); if (!e) return false;
                  const r = e.getBoundingClientRect(); return ON_SCREEN; }""".replace("ON_SCREEN", ON_SCREEN),
        arg=selector,
        timeout=timeout_ms,
    )


def in_viewport(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector,
        "e => { const r = e.getBoundingClientRect(); return ON_SCREEN; }".replace("ON_SCREEN", ON_SCREEN),
    )


def runs_table(html: str) -> list[dict[str, str]]:
    """The report's runs table as one dict a row: its header's names (a column holding one value throughout is
    said once above the table, and is then read from there) and `run`, the heading of the run it is under."""
    import re

    part = html.split("By run, condition and agent")[1].split("By domain")[0]
    before = html.split("By run, condition and agent")[0].rsplit("<h2>Runs</h2>", 1)[-1]
    constant = {}
    said = re.search(r"In every row: ([^<]*)\.</p>", before)
    for item in said.group(1).split("; ") if said else ():
        for name in ("model", "harness", "strict unknown", "unjudged"):
            if item.startswith(name + " "):
                constant[name] = item[len(name) + 1 :]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", part.split("</thead>")[0])
    out, run = [], ""
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", part.split("</thead>")[1], re.S):
        heading = re.findall(r'<th class="l" colspan="\d+">([^<]*)</th>', row)
        if heading:
            run = heading[0]
            continue
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        if cells:
            out.append({**constant, **dict(zip(header, cells, strict=True)), "run": run})
    return out
