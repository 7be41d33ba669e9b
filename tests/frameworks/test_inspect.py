"""toolshift's tasks in inspect_ai, through the real `inspect eval` CLI: Δτ-Bench and τ²-bench airline.

The oracle as inspect's model (`-T agent=oracle`: inspect's own `react()` loop, the oracle served over the OpenAI
API per episode) must score every task, and the episode inspect records — read back by `toolshift traces
convert inspect` — must be the one toolshift's own command writes for the same task with the same scripted agent
(`toolshift bench baseline --agent oracle`, `toolshift run --model oracle`): the same calls, the same world
changes, the same verdict. With the embedded model served over the OpenAI API (`toolshift model serve`), every
sample must carry toolshift's verdict of an episode whose calls are the ones inspect's log shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolshift.bench.metrics import world_tool_calls
from toolshift.traces.episode import Episode
from toolshift.traces.store import iter_episodes

from .conftest import inspect_eval, toolshift

pytestmark = pytest.mark.slow


def converted(log: Path, out: Path) -> list[Episode]:
    """`toolshift traces convert inspect LOG`: the log's samples as episodes."""
    toolshift("traces", "convert", "inspect", str(log), "--out", str(out))
    return [e for f in sorted(out.glob("*.episodes.jsonl")) for e in iter_episodes(f)]


def calls(ep: Episode) -> list[tuple[str, str]]:
    return [
        (c.name, json.dumps(c.arguments, sort_keys=True))
        for m in ep.messages
        if m.role == "assistant"
        for c in m.tool_calls or []
        if c.name != "end_conversation"
    ]


def verdict(ep: Episode) -> tuple:
    o = ep.outcome
    assert o is not None
    return (o.success, o.info.get("strict_success"), o.info.get("collateral_changes"), o.reward, o.judged_by)


def test_delta_tau_oracle_in_inspect_is_toolshifts_episode(inspect_cli, small_build, tmp_path):
    log = inspect_eval(
        inspect_cli, "toolshift/delta_tau",
        ["-T", f"build={small_build}", "-T", "version=2", "-T", "sample=3", "-T", "agent=oracle"], tmp_path / "logs",
    )  # fmt: skip
    scores = json.loads(log.read_text())["results"]["scores"][0]["metrics"]
    assert scores["SR"]["value"] == 1.0 and scores["strict_SR"]["value"] == 1.0
    mine = {e.task_id: e for e in converted(log, tmp_path / "conv")}
    assert len(mine) == 3
    toolshift(
        "bench",
        "baseline",
        str(small_build),
        "--agent",
        "oracle",
        "--sample",
        "3",
        "--out",
        str(tmp_path / "runs"),
    )
    theirs = {
        e.task_id: e
        for e in iter_episodes(tmp_path / "runs" / "oracle.episodes.jsonl")
        if e.ecosystem_version
        and e.ecosystem_version.endswith("/v2")
        and e.source["criterion"] in ("both", "step")
    }
    assert set(mine) == set(theirs)
    for task_id, ep in mine.items():
        other = theirs[task_id]
        assert ep.ecosystem_version == other.ecosystem_version and ep.source["setting"] == "standard"
        assert world_tool_calls(ep) == world_tool_calls(other)
        assert calls(ep) == calls(other)
        assert [c.model_dump() for c in ep.world_diff or []] == [
            c.model_dump() for c in other.world_diff or []
        ]
        assert verdict(ep) == verdict(other)
        assert ep.outcome.success is other.outcome.success is True
        assert ep.source["inspect"]["sample"] == f"{task_id}:v2"
        metadata = next(
            s["scores"]["toolshift_verdict"]["metadata"]
            for s in json.loads(log.read_text())["samples"]
            if s["id"] == f"{task_id}:v2"
        )
        assert metadata["F1"] > 0 and metadata["Step-SPE"] == 1.0


@pytest.mark.shared
def test_tau2_airline_oracle_in_inspect_is_toolshift_runs_episode(inspect_cli, shared_data, tmp_path):
    from toolshift.taskfile import write_tasks
    from toolshift.world.tau2.tasks import import_tasks

    log = inspect_eval(
        inspect_cli,
        "toolshift/tau2",
        ["-T", "domain=airline", "-T", "limit=3", "-T", "agent=oracle"],
        tmp_path / "logs",
    )
    mine = {e.task_id: e for e in converted(log, tmp_path / "conv")}
    tasks = import_tasks("tau2-airline").tasks[:3]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    toolshift(
        "run", "--world", "tau2-airline", "--tasks", str(tmp_path / "tasks.jsonl"), "--model", "oracle",
        "--out", str(tmp_path / "runs"),
    )  # fmt: skip
    theirs = {e.task_id: e for f in (tmp_path / "runs").glob("*.episodes.jsonl") for e in iter_episodes(f)}
    assert set(mine) == set(theirs) == {t.id for t in tasks}
    for task_id, ep in mine.items():
        other = theirs[task_id]
        assert calls(ep) == calls(other)
        assert verdict(ep) == verdict(other)
        assert ep.outcome.reward == 1.0 and ep.outcome.judged_by == other.outcome.judged_by
    scores = json.loads(log.read_text())["results"]["scores"][0]["metrics"]
    assert scores["SR"]["value"] == 1.0


def _agrees_with_log(log: Path, episodes: list[Episode], max_turns: int) -> None:
    """Each sample's score is toolshift's verdict of its episode, and the episode's calls are those inspect's
    messages show reaching a tool (a call inspect refused against the schema never reaches the world). react()
    is held to the episode's `max_turns` model calls, as toolshift's own loop is: one that wanted more ends the
    episode with `max_turns`."""
    samples = {s["id"]: s for s in json.loads(log.read_text())["samples"]}
    assert len(samples) == len(episodes) == 3
    for ep in episodes:
        sample = samples[ep.source["inspect"]["sample"]]
        value = sample["scores"]["toolshift_verdict"]["value"]
        assert ep.outcome is not None and ep.outcome.success is not None, ep.termination_reason
        assert value["judged"] == 1.0 and value["success"] == float(ep.outcome.success)
        parsed = {
            m["tool_call_id"] for m in sample["messages"]
            if m["role"] == "tool" and (m.get("error") or {}).get("type") == "parsing"
        }  # fmt: skip
        shown = [
            (c["function"], json.dumps(c["arguments"], sort_keys=True))
            for m in sample["messages"]
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
            if c["id"] not in parsed and c["function"] != "end_conversation"
        ]
        assert calls(ep) == shown
        assert ep.harness == "inspect_ai" and ep.model == "openai/embedded"
        generated = sum(1 for m in sample["messages"] if m["role"] == "assistant")
        assert generated <= max_turns, (generated, ep.termination_reason)


def test_embedded_model_through_inspects_react(inspect_cli, small_build, embedded_url, tmp_path, shared_data):
    env = {"OPENAI_API_KEY": "toolshift-local"}
    model = ["--model-base-url", f"{embedded_url}/v1"]
    log = inspect_eval(
        inspect_cli, "toolshift/delta_tau",
        ["-T", f"build={small_build}", "-T", "version=2", "-T", "sample=3", "-T", "max_turns=4", *model],
        tmp_path / "dt", model="openai/embedded", env=env,
    )  # fmt: skip
    _agrees_with_log(log, converted(log, tmp_path / "dt-conv"), 4)
    log = inspect_eval(
        inspect_cli, "toolshift/tau2", ["-T", "domain=airline", "-T", "limit=3", "-T", "max_turns=4", *model],
        tmp_path / "t2", model="openai/embedded", env=env,
    )  # fmt: skip
    _agrees_with_log(log, converted(log, tmp_path / "t2-conv"), 4)


def test_export_opens_in_inspect_and_converts_back(inspect_cli, tmp_path):
    """`traces export-inspect` writes a log inspect's own reader takes; converting it gives the episodes back."""
    from inspect_ai.log import read_eval_log

    from toolshift.agents.demo import demo_tasks
    from toolshift.taskfile import write_tasks

    write_tasks(tmp_path / "tasks.jsonl", demo_tasks()[:2])
    toolshift(
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--model",
        "oracle",
        "--out",
        str(tmp_path / "runs"),
    )
    (episodes_file,) = (tmp_path / "runs").glob("*.episodes.jsonl")
    toolshift("traces", "export-inspect", str(episodes_file), "--out", str(tmp_path / "export" / "run.eval"))
    log = read_eval_log(str(tmp_path / "export" / "run.eval"))
    assert [s.scores["toolshift_verdict"].value["success"] for s in log.samples] == [1.0, 1.0]
    back = sorted(converted(tmp_path / "export" / "run.eval", tmp_path / "back"), key=lambda e: e.id)
    original = sorted(iter_episodes(episodes_file), key=lambda e: e.id)
    strip = {"source"}
    assert [e.model_dump(exclude=strip) for e in back] == [e.model_dump(exclude=strip) for e in original]
