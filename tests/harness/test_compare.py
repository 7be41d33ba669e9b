"""`toolshift harness compare` on a small build: every agent on the same tasks, the page from the episodes alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_comparison_runs_resumes_and_writes_its_page(evolved_build, tmp_path):
    build = evolved_build(tmp_path / "build", ["payroll"], per_domain=6, versions=2)
    out, page = tmp_path / "runs", tmp_path / "harnesses.md"
    command = [
        sys.executable, "-m", "toolshift", "harness", "compare", str(build), "--agents", "embedded,python:chat-loop",
        "--model", "oracle", "--sample", "2", "--versions", "1,2", "--max-turns", "12", "--out", str(out),
        "--page", str(page),
    ]  # fmt: skip
    first = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stderr
    text = page.read_text()
    assert "toolshift harness compare" in text and "--agents embedded,python:chat-loop" in text
    assert "## Δτ-Bench test tasks (standard setting)" in text
    # toolshift's own loop and the example agent, both driven by the oracle: every instance solved, no difference
    assert "| `oracle` | 4 | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] | — |" in text
    assert (
        "| `python:chat-loop@oracle` | 4 | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] | +0.0 [+0.0, +0.0] |"
        in text
    )
    assert "## The instrument: each harness driven by the oracle" in text
    assert "| `python:chat-loop@oracle` | domain-tools | 4 | 100.0 [100.0, 100.0]" in text
    episodes = sorted(p.name for p in (out / "delta").glob("*.episodes.jsonl"))
    assert episodes == [
        "oracle.episodes.jsonl", "python_chat-loop@oracle.domain-tools.episodes.jsonl",
        "python_chat-loop@oracle.episodes.jsonl",
    ]  # fmt: skip

    again = subprocess.run(command, capture_output=True, text=True, timeout=1200)  # resumed: nothing to run
    assert again.returncode == 0, again.stderr
    strip = lambda t: [line for line in t.splitlines() if not line.startswith("Load during")]  # noqa: E731
    assert strip(page.read_text()) == strip(text)
    for path in (out / "delta").glob("*.episodes.jsonl"):
        ids = [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]]
        assert (
            len(ids) == len(set(ids)) >= 4
        )  # none run twice (the scripted oracle also runs cost-optimal paths)
