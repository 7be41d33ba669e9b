"""Make docs/screenshots/: the viewer and the report on the repository's own episodes, in light and dark.

The inputs are docs/results/episodes as kept (the loop run's tarball unpacked into a temporary folder beside the
other files), so the pictures show what a reader can open themselves. The viewer is served in this process and
the report written to the temporary folder; Debian's Chromium (`make chromium`), driven by Playwright from the
`view` extra, takes each picture at a fixed size. Run: `.venv/bin/python bench/docs_screenshots.py`.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolshift.report.build import build_report
from toolshift.report.inputs import discover
from toolshift.report.sections import Options
from toolshift.report.view.server import Viewer, serving

ROOT = Path(__file__).resolve().parents[1]
EPISODES = ROOT / "docs" / "results" / "episodes"
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
TASK, VERSION = "marketing_campaigns-0010", "v2"


@dataclass(frozen=True)
class Shot:
    name: str
    scheme: str
    width: int
    height: int
    what: str


SHOTS = [
    Shot(
        "viewer-light.png",
        "light",
        1440,
        900,
        "the viewer: the steward condition's episodes, one open at a step",
    ),
    Shot("viewer-dark.png", "dark", 1440, 900, "the same task in two conditions side by side, turn by turn"),
    Shot("viewer-900.png", "light", 900, 900, "the viewer at 900 px: the list and the episode side by side"),
    Shot(
        "report-light.png", "light", 1440, 900, "the report: results first, runs by run, condition and agent"
    ),
    Shot("report-dark.png", "dark", 1440, 900, "the report in dark"),
]


def _inputs(tmp: Path) -> Path:
    folder = tmp / "episodes"
    folder.mkdir()
    for gz in EPISODES.glob("*.episodes.jsonl.gz"):
        shutil.copyfile(gz, folder / gz.name)
    with tarfile.open(EPISODES / "loop-full.tar.gz") as tar:
        tar.extractall(folder, filter="data")
    return folder


def main() -> None:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is not installed (make chromium)")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        os.chdir(tmp)  # the pages name the inputs as a reader who unpacked them would: `episodes/…`
        folder = _inputs(tmp).relative_to(tmp)
        cache = tmp / "cache"
        build_report([folder], tmp / "report.html", options=Options(resamples=1000), cache=cache,
                     title="toolshift report: docs/results/episodes")  # fmt: skip
        viewer = Viewer(discover([folder], cache=cache))
        steward = folder / "loop-full" / "steward" / VERSION / "episodes.jsonl"
        off = folder / "loop-full" / "off" / VERSION / "episodes.jsonl"
        episode = f"loop:{TASK}:{VERSION}"
        with serving(viewer) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox",
                                                                               "--disable-gpu"])  # fmt: skip
            for shot in SHOTS:
                context = browser.new_context(viewport={"width": shot.width, "height": shot.height},
                                              color_scheme=shot.scheme)  # fmt: skip
                page = context.new_page()
                if shot.name.startswith("report"):
                    page.goto((tmp / "report.html").as_uri())
                    page.wait_for_selector("#runs")
                else:
                    link = f"{url}#condition=steward&id={episode}&id_file={steward}&step=3"
                    if shot.name == "viewer-dark.png":
                        link += f"&vs={episode}&vs_file={off}"
                    page.goto(link)
                    page.wait_for_selector(
                        "#steps li.step.current" if "vs" not in link else "#compare .cmp-table"
                    )
                    page.wait_for_selector("#aggregate [data-figure='SR']")
                    page.wait_for_selector("#episodes tbody tr.selected")
                    if "vs" in link:
                        page.locator("#compare").scroll_into_view_if_needed()
                    else:
                        page.evaluate("scrollTo(0, 0)")  # the episode's head, its current step below
                page.wait_for_timeout(300)
                page.screenshot(path=str(OUT / shot.name))
                context.close()
            browser.close()
    for shot in SHOTS:
        print(f"{OUT / shot.name}: {shot.what} ({(OUT / shot.name).stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
