"""`inspect view` opens the log of a toolshift task: the sample's messages and toolshift's score on the page.

The log is made by the real `inspect eval toolshift/world` (the oracle through inspect's `react()` on two clinic
tasks). inspect's own viewer serves it, and Debian's headless Chromium (driven by Playwright, as the report's
browser tests are) opens the sample: the user's request, the world's tool calls, the agent's reply and the
verdict's keys must be on the page. Converting the same log gives the episodes `toolshift run --model oracle`
writes for those tasks.
"""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest

from report.pages import launch_chromium
from toolshift.agents.demo import demo_tasks
from toolshift.taskfile import write_tasks
from toolshift.traces.store import iter_episodes

from .conftest import BIN, free_port, inspect_eval, toolshift
from .test_inspect import calls, converted, verdict

pytestmark = pytest.mark.slow


def test_inspect_view_shows_a_toolshift_sample(inspect_cli, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, demo_tasks()[:2])
    log = inspect_eval(
        inspect_cli,
        "toolshift/world",
        ["-T", "world=clinic", "-T", f"tasks={tasks}", "-T", "agent=oracle"],
        tmp_path / "logs",
    )
    mine = {e.task_id: e for e in converted(log, tmp_path / "conv")}
    toolshift(
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tasks),
        "--model",
        "oracle",
        "--out",
        str(tmp_path / "runs"),
    )
    theirs = {e.task_id: e for f in (tmp_path / "runs").glob("*.episodes.jsonl") for e in iter_episodes(f)}
    assert set(mine) == set(theirs) == {t.id for t in demo_tasks()[:2]}
    for task_id, ep in mine.items():
        assert calls(ep) == calls(theirs[task_id]) and verdict(ep) == verdict(theirs[task_id])
        assert ep.world_diff == theirs[task_id].world_diff

    port = free_port()
    view = subprocess.Popen(
        [str(BIN / "inspect"), "view", "--log-dir", str(log.parent), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    p, browser = launch_chromium()
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(600):
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(url)
        task = demo_tasks()[0]
        page.get_by_text(task.public_request).first.click()
        page.wait_for_url("**/samples/sample/**")
        episode = mine[task.id]
        reply = next(
            m.content for m in episode.messages if m.role == "assistant" and m.content and not m.tool_calls
        )
        calls_made = [
            c.name for m in episode.messages for c in m.tool_calls or [] if c.name != "end_conversation"
        ]
        wanted = [
            task.public_request,
            "SCORES",
            "judged",
            "success",
            "strict_success",
            "collateral",
            *calls_made,
            reply,
        ]
        # the viewer renders the sample after its URL changes: read the page until it shows everything, or the
        # hang guard (120 s) is spent, then say what is missing
        for _ in range(600):
            body = page.inner_text("body")
            if all(text in body for text in wanted):
                break
            time.sleep(0.2)
        missing = [text for text in wanted if text not in body]
        assert not missing, (missing, body[-500:])
        shot = page.screenshot()
        assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        browser.close()
        p.stop()
        view.terminate()
        view.wait(30)
