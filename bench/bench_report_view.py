"""Benchmark: `toolshift view` first paint and `toolshift report` build time at 10,000 and 100,000 episodes.

Run sets are made from real published runs (τ-bench airline and WorkBench, converted; the τ²-bench example
run where the shared data is absent), copied with fresh ids and five agent names into ten files each. For
each size it measures:

- the cold index build (every file read once, `toolshift.report.episode_index`), in process;
- first paint: from starting `toolshift view DIR --port 0` (indexes cached) to the first page of rows drawn
  in headless Chromium (already running, as a person's browser is), and its two parts;
- one filtered page from the API (agent and outcome), the median of five;
- `toolshift report DIR` with the indexes cached (inputs, runs; no catalog, so no flows section).

Then the report of the real runs as converted (catalogs included, so the flows sections are drawn).
Run: `.venv/bin/python bench/bench_report_view.py [SHARED_DATA] [--sizes 10000,100000]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from toolshift.report.benchlog import record
from toolshift.report.build import build_report
from toolshift.report.inputs import discover
from toolshift.traces.store import StoreHeader

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def real_runs(shared: Path, out: Path) -> list[Path]:
    """The published runs converted with `toolshift traces convert` (their catalogs beside them)."""
    from toolshift.traces.demo import EXAMPLE_RUN
    from toolshift.traces.taubench import convert_taubench_v1
    from toolshift.traces.workbench import convert_workbench

    tau = shared / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    wb = shared / "workbench" / "results"
    folders = []
    if tau.is_file():
        convert_taubench_v1(tau).write(out / "tau-bench")
        folders.append(out / "tau-bench")
    if wb.is_dir():
        convert_workbench(wb).write(out / "workbench")
        folders.append(out / "workbench")
    shutil.copyfile(EXAMPLE_RUN, out / EXAMPLE_RUN.name)
    folders.append(out / EXAMPLE_RUN.name)
    return folders


def template_lines(folders: list[Path], cache: Path) -> list[dict]:
    inputs = discover(folders, cache=cache)
    lines = []
    for f in inputs.episode_sources():
        assert f.index is not None
        lines += [json.loads(f.index.read_line(r)) for r in range(f.index.episodes)]
    return lines


def generate(folder: Path, templates: list[dict], n: int, files: int = 10) -> int:
    folder.mkdir(parents=True)
    per = -(-n // files)
    written = 0
    for k in range(files):
        with (folder / f"part{k:02d}.episodes.jsonl").open("w", encoding="utf-8") as fh:
            fh.write(StoreHeader(meta={"generated": "bench_report_view"}).model_dump_json() + "\n")
            for i in range(k * per, min(n, (k + 1) * per)):
                ep = dict(templates[i % len(templates)])
                ep["id"] = f"copy{i}/{ep['id']}"
                ep["agent"] = f"{ep.get('agent') or 'agent'}-{i % 5}"
                line = json.dumps(ep, ensure_ascii=False) + "\n"
                fh.write(line)
                written += len(line)
    return written


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_paint(folder: Path, cache: Path, context) -> tuple[float, float, float, float, str]:
    """(process start → URL printed, URL → rows drawn, total, the server's CPU seconds by then) for
    `toolshift view`, and the URL and pid of its server."""
    env = {**os.environ, "TOOLSHIFT_VIEW_CACHE": str(cache), "COLUMNS": "300"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "toolshift", "view", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    url = ""
    for line in proc.stdout:
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if found:
            url = found.group(1)
            break
    if not url:
        raise SystemExit(f"toolshift view did not start: {proc.stderr.read() if proc.stderr else ''}")
    served = time.perf_counter()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr", timeout=600_000)
    painted = time.perf_counter()
    cpu = cpu_seconds(proc.pid)
    page.close()
    return served - start, painted - served, painted - start, cpu, url + "|" + str(proc.pid)


def api_page(url: str, agent: str) -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        r = httpx.get(
            url + "api/episodes", params={"agent": agent, "outcome": "success", "limit": 50}, timeout=600
        )
        r.raise_for_status()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[tuple[str, str, str]] = []
    browser = None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folders = real_runs(args.shared, root / "real")
        cache = root / "cache"
        templates = template_lines(folders, cache)
        mean_kb = sum(len(json.dumps(t)) for t in templates) / len(templates) / 1024
        t = time.perf_counter()
        report = build_report(folders, root / "real.html", cache=cache)
        real_n = sum(f.index.episodes for f in report.inputs.episode_sources() if f.index)
        rows.append((f"report of the real runs ({real_n} episodes, {len(report.sections)} sections, flows included)",
                     f"{time.perf_counter() - t:.1f} s", "—"))  # fmt: skip
        if CHROMIUM.exists():
            from playwright.sync_api import sync_playwright

            browser = sync_playwright().start()
            context = browser.chromium.launch_persistent_context(
                str(root / "profile"), executable_path=str(CHROMIUM), args=ARGS, headless=True
            )
        for n in sizes:
            folder = root / f"runs-{n}"
            size = generate(folder, templates, n)
            cache_n = root / f"cache-{n}"
            t = time.perf_counter()
            inputs = discover([folder], cache=cache_n)
            cold = time.perf_counter() - t
            assert inputs.runset().size == n
            rows.append((f"{n} episodes ({size / 2**20:.0f} MiB, 10 files): index built once (cold)",
                         f"{cold:.1f} s ({n / cold:,.0f} episodes/s)", "once per file version"))  # fmt: skip
            t = time.perf_counter()
            discover([folder], cache=cache_n).runset()
            rows.append(
                (
                    f"{n} episodes: index opened from the cache (in process)",
                    f"{time.perf_counter() - t:.2f} s",
                    "—",
                )
            )
            if browser is not None:
                served, paint, total, cpu, handle = first_paint(folder, cache_n, context)
                url, pid = handle.split("|")
                try:
                    agent = inputs.runset().values["agent"][0]
                    latency = api_page(url, agent)
                finally:
                    os.kill(int(pid), 15)
                    os.waitpid(int(pid), 0)
                rows.append((f"{n} episodes: first paint of `toolshift view` (start → rows drawn)",
                             f"{total:.2f} s (server up {served:.2f} s, page {paint:.2f} s; server CPU {cpu:.2f} s)",
                             "< 3 s"))  # fmt: skip
                rows.append(
                    (
                        f"{n} episodes: one filtered page from the API (median of 5)",
                        f"{1000 * latency:.0f} ms",
                        "—",
                    )
                )
            t = time.perf_counter()
            build_report([folder], root / f"report-{n}.html", cache=cache_n)
            rows.append(
                (
                    f"{n} episodes: `toolshift report` with the index cached",
                    f"{time.perf_counter() - t:.1f} s",
                    "—",
                )
            )
            shutil.rmtree(folder)
        if browser is not None:
            context.close()
            browser.stop()
    note = (f"Episodes copied from {len(templates)} real ones (mean {mean_kb:.1f} KiB each) with fresh ids; "
            "first paint is measured from the process start to the first row drawn in headless Chromium.")  # fmt: skip
    if browser is None:
        note += f" No Chromium at {CHROMIUM}: first paint not measured."
    record("toolshift view and toolshift report at 10k and 100k episodes", rows, note=note)


if __name__ == "__main__":
    main()
