"""Strict success and collateral writes in the episode index, the report's runs section and the viewer,
on episodes of the real clinic world: one careful, one that also cancels APT-00019, the same one recorded
before the strict verdict existed, and one that does nothing."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from collateral import COLLATERAL_ROW, cancel_episode, cancel_task, without_verdict_fields
from toolshift.agents.loop import run_episode
from toolshift.agents.policies import ScriptedPolicy
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.report.build import build_report
from toolshift.report.episode_index import index_file
from toolshift.report.inputs import discover
from toolshift.report.sections import Options
from toolshift.report.view.server import Viewer, serving
from toolshift.traces.store import write_episodes

from .pages import runs_table


@pytest.fixture(scope="module")
def clinic_episodes():
    task = cancel_task()
    idle = asyncio.run(
        run_episode(task, ScriptedPolicy("idle", []), ScriptedUser(task.public_request, task.instruction),
                    world_opener("clinic"), episode_id="idle:demo-cancel:0")
    )  # fmt: skip
    assert idle.outcome.success is False
    return [
        cancel_episode(greedy=False, episode_id="careful"),
        cancel_episode(greedy=True, episode_id="greedy"),
        without_verdict_fields(cancel_episode(greedy=True, episode_id="old-greedy")).model_copy(
            update={"trial": 1}
        ),
        idle,
    ]


@pytest.fixture
def store(tmp_path, clinic_episodes):
    path = tmp_path / "clinic.episodes.jsonl"
    write_episodes(path, clinic_episodes)
    return path


def test_the_index_keeps_the_strict_verdict_and_the_collateral_count(store, tmp_path):
    index = index_file(store, cache=tmp_path / "cache")
    assert [index.value("outcome", r) for r in range(4)] == ["success", "success", "success", "failure"]
    assert [index.value("strict", r) for r in range(4)] == ["strict", "collateral", "unknown", "failure"]
    assert index.columns["collateral"].tolist() == [0, 1, -1, 0]


def test_the_runs_section_shows_strict_success_beside_success(store, tmp_path):
    out = tmp_path / "report.html"
    build_report([store], out, options=Options(resamples=50))
    html = out.read_text(encoding="utf-8")
    assert "strict success % (95% CI)" in html and "strict unknown" in html and "collateral / episode" in html
    # by agent: greedy (its two episodes, one recorded before the verdict) succeeds in both, strict in
    # neither known one, one unknown, one collateral change over the one that records it; careful is clean
    cells = {r["agent"]: r for r in runs_table(html)}
    greedy = cells["greedy"]
    assert greedy["episodes"] == "2" and greedy["success % (95% CI)"] == "100.0 [100.0, 100.0]"
    assert greedy["strict success % (95% CI)"] == "0.0 [0.0, 0.0]" and greedy["strict unknown"] == "1"
    assert greedy["collateral / episode"] == "1.00 (n=1)"
    assert greedy["pass^k % (95% CI)"] == "pass^2 100.0 [100.0, 100.0]"  # its two trials of one task
    careful = cells["careful"]
    assert careful["strict success % (95% CI)"] == "100.0 [100.0, 100.0]"
    assert careful["collateral / episode"] == "0.00 (n=1)"
    idle = cells["idle"]
    assert idle["success % (95% CI)"] == idle["strict success % (95% CI)"] == "0.0 [0.0, 0.0]"


def test_the_viewer_filters_by_strict_verdict_and_names_the_collateral_and_missing_rows(store):
    inputs = discover([store])
    with serving(Viewer(inputs)) as url:
        page = httpx.get(url + "api/episodes", params={"strict": "collateral"}, timeout=60).json()
        assert [r["id"] for r in page["rows"]] == ["greedy"] and page["rows"][0]["collateral"] == 1
        assert dict(page["facets"]["strict"]) == {"strict": 1, "collateral": 1, "unknown": 1, "failure": 1}
        every = {r["id"]: r for r in httpx.get(url + "api/episodes", timeout=60).json()["rows"]}
        assert every["old-greedy"]["strict"] == "unknown" and every["old-greedy"]["collateral"] == -1
        greedy = httpx.get(url + "api/episode", params={"row": every["greedy"]["row"]}, timeout=60).json()
        assert greedy["verdict"]["strict_success"] is False
        assert greedy["verdict"]["collateral_rows"] == [COLLATERAL_ROW]
        assert greedy["verdict"]["missing_rows"] == []
        idle = httpx.get(
            url + "api/episode", params={"row": every["idle:demo-cancel:0"]["row"]}, timeout=60
        ).json()
        assert idle["verdict"]["missing_changes"] == 1 and idle["verdict"]["missing_rows"] == [
            "appointment/APT-00003"
        ]
        old = httpx.get(url + "api/episode", params={"row": every["old-greedy"]["row"]}, timeout=60).json()
        assert old["verdict"]["strict_success"] is None and old["verdict"]["collateral_rows"] is None
        script = "".join(httpx.get(url + name, timeout=60).text for name in ("viewer.js", "episode.js"))
        assert "collateral writes (outside Δgold)" in script and "missing gold changes" in script
