"""Our τ²-bench results against τ²-bench itself: its `Results.load`, its metrics, its orchestrator and evaluator.

τ²-bench runs in its own Python 3.12 environment (tests/peers.py, fixture `tau2_python`); each test
hands it files through `tau2_probe.py` and reads back what τ² made of them. Skipped where no
Python 3.12 or no snapshot exists.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from peers import run_tau2
from toolshift.agents.demo import demo_tasks
from toolshift.cli import app
from toolshift.taskfile import write_tasks
from toolshift.traces.store import iter_episodes, write_episodes
from toolshift.traces.tau2 import read_results
from toolshift.traces.tau2_write import write_results

pytestmark = pytest.mark.slow

PROBE = Path(__file__).parent / "tau2_probe.py"
WORLD_PROBE = Path(__file__).parent.parent / "world" / "tau2_reward_probe.py"
runner = CliRunner()


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def probe(python: Path, *commands: list[str]) -> list:
    """Run the commands in one τ²-bench process; their JSON results, in order."""
    done = run_tau2(python, PROBE, "batch", json.dumps([[str(a) for a in c] for c in commands]))
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def pass_hat(successes: dict[str, list[bool]], k: int) -> float:
    """pass^k over tasks, computed here from the episodes (C(successes, k) / C(trials, k), averaged)."""
    return sum(math.comb(sum(s), k) / math.comb(len(s), k) for s in successes.values()) / len(successes)


@pytest.mark.shared
def test_taubench_airline_export_loads_and_scores_in_tau2(tmp_path, shared_data, tau2_python):
    source = shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    _ok("traces", "convert", "taubench-v1", str(source), "--out", str(tmp_path / "conv"))
    episodes_file = tmp_path / "conv" / "taubench-v1-airline.episodes.jsonl"
    json_out, dir_out = tmp_path / "airline.json", tmp_path / "airline-dir"
    _ok("traces", "export-tau2", str(episodes_file), "--out", str(json_out))
    _ok("traces", "export-tau2", str(episodes_file), "--out", str(dir_out), "--layout", "dir")
    resaved = tmp_path / "resaved"
    loaded, _ = probe(tau2_python, ["load", json_out, dir_out], ["resave", json_out, resaved, "dir"])

    episodes = list(iter_episodes(episodes_file))
    successes: dict[str, list[bool]] = {}
    for e in episodes:
        successes.setdefault(e.task_id, []).append(bool(e.outcome.success))
    gold = {e.task_id: len(e.outcome.info["gold_actions"]) for e in episodes}
    for path in (json_out, dir_out):
        seen = loaded[str(path)]
        assert seen["errors"] == 0, seen
        assert seen["domain"] == "taubench-v1-airline" and seen["simulations"] == 100
        assert sorted(seen["tasks"], key=int) == [str(i) for i in range(50)]
        assert seen["task_actions"] == gold  # gold actions reach τ² as the tasks' expected actions
        assert seen["terminations"] == dict(Counter(e.termination_reason for e in episodes))
        assert (seen["max_steps"], seen["max_errors"]) == (30, 30)
        metrics = seen["metrics"]
        assert metrics["total_tasks"] == 50 and metrics["total_simulations"] == 100
        assert metrics["avg_reward"] == pytest.approx(sum(e.outcome.reward for e in episodes) / 100)
        assert metrics["pass_hat_1"] == pytest.approx(pass_hat(successes, 1))
        assert metrics["pass_hat_2"] == pytest.approx(pass_hat(successes, 2))
    assert loaded[str(json_out)]["metrics"] == loaded[str(dir_out)]["metrics"]

    # τ²'s own re-save of our export reads back as the episodes we exported: unrecorded times stay null.
    back = {e.id: e for e in read_results(resaved).episodes}
    assert sorted(back) == sorted(e.id for e in episodes)
    for e in episodes:
        b = back[e.id]
        assert (b.task_id, b.trial, b.termination_reason) == (e.task_id, e.trial, e.termination_reason)
        assert (b.start_time, b.end_time, b.duration) == (None, None, None)
        assert b.outcome.reward == e.outcome.reward and len(b.messages) == len(e.messages)
        assert [(m.role, m.content) for m in b.messages] == [(m.role, m.content) for m in e.messages]
        actions = b.source["tau2_task"]["evaluation_criteria"]["actions"]
        assert [(a["name"], a["arguments"]) for a in actions] == [
            (a["name"], a["kwargs"]) for a in e.outcome.info["gold_actions"]
        ]


def test_our_run_export_loads_and_scores_in_tau2(tmp_path, tau2_python):
    tasks = write_tasks(tmp_path / "tasks.jsonl", demo_tasks())
    _ok("run", "--world", "clinic", "--tasks", str(tasks), "--model", "oracle", "--trials", "2",
        "--max-turns", "2", "--out", str(tmp_path / "runs"))  # fmt: skip
    (run_file,) = (tmp_path / "runs").glob("run-*.episodes.jsonl")
    episodes = list(iter_episodes(run_file))
    assert {e.termination_reason for e in episodes} == {"max_turns"}  # the oracle stops at the turn limit

    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolshift",
            "traces",
            "export-tau2",
            str(run_file),
            "--out",
            str(tmp_path / "x.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--tasks" in refused.stderr
    assert str(run_file) in refused.stderr and not (tmp_path / "x.json").exists()

    json_out, dir_out = tmp_path / "ours.json", tmp_path / "ours-dir"
    _ok("traces", "export-tau2", str(run_file), "--tasks", str(tasks), "--out", str(json_out))
    _ok(
        "traces",
        "export-tau2",
        str(run_file),
        "--tasks",
        str(tasks),
        "--out",
        str(dir_out),
        "--layout",
        "dir",
    )
    (loaded,) = probe(tau2_python, ["load", json_out, dir_out])
    for path in (json_out, dir_out):
        seen = loaded[str(path)]
        assert seen["errors"] == 0, seen
        assert seen["domain"] == "clinic" and seen["tasks"] == [t.id for t in demo_tasks()]
        assert seen["task_actions"] == {t.id: len(t.gold_path) for t in demo_tasks()}
        assert seen["terminations"] == {"max_steps": 6} and seen["max_steps"] == 2
        assert seen["metrics"]["avg_reward"] == 1.0
        assert seen["metrics"]["pass_hat_1"] == seen["metrics"]["pass_hat_2"] == 1.0
        assert seen["db_match"] == 6

    back = {e.id: e for e in read_results(json_out).episodes}
    for e in episodes:
        assert back[e.id].termination_reason == "max_turns"  # the translation is taken back
        assert (back[e.id].start_time, back[e.id].duration) == (e.start_time, e.duration)


def test_a_tau2_written_run_round_trips_through_toolshift(tmp_path, tau2_python):
    made = {layout: tmp_path / f"tau2-{layout}" for layout in ("json", "dir")}
    made["json"] = made["json"].with_suffix(".json")
    runs = probe(tau2_python, *(["make-run", path, layout] for layout, path in made.items()))
    assert runs[0]["rewards"] == [
        1.0,
        1.0,
        0.0,
        0.0,
    ]  # τ²'s evaluator: gold agent, then one that only replies
    policy = tmp_path / "policy.md"
    policy.write_text(runs[0]["policy"], encoding="utf-8")

    checks: list[list] = []
    for layout, path in made.items():
        run = read_results(path)
        assert run.layout == layout and len(run.tasks) == 2 and len(run.episodes) == 4
        direct = write_results(run, tmp_path / f"ours-{layout}", layout=layout)
        conv = tmp_path / f"conv-{layout}"
        _ok("traces", "convert", "tau2", str(path), "--out", str(conv))
        via_store = tmp_path / f"store-{layout}"
        _ok("traces", "export-tau2", str(conv / "mock.episodes.jsonl"), "--policy", str(policy),
            "--out", str(via_store), "--layout", layout)  # fmt: skip
        checks += [["same", path, direct], ["same", path, via_store], ["load", path, direct, via_store]]
        checks += [["reeval", direct], ["reeval", via_store]]
    results = probe(tau2_python, *checks)
    for same in results[0::5] + results[1::5]:
        assert same == {"same": True, "first_difference": None}
    for loads in results[2::5]:
        metrics = [v["metrics"] for v in loads.values()]
        assert metrics[0] == metrics[1] == metrics[2] and metrics[0]["pass_hat_1"] == 0.5
    for k in range(len(made)):  # τ²'s evaluate-trajs on our files gives τ²'s own rewards
        assert results[5 * k + 3] == results[5 * k + 4] == runs[k]["reward_by_id"]


@pytest.mark.shared
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_tau2_judged_episodes_export_and_score_in_tau2_as_we_scored_them(tmp_path, tau2_python, domain):
    """Episodes judged by τ²'s reward here (tests/tau2_cases.py, a mutation of each kind), exported with
    `export-tau2`, load in τ²-bench with the RewardInfo we wrote, and τ²'s `evaluate-trajs` scoring of
    the exported trajectories gives the same RewardInfo (NL assertions left out where τ² asks an LLM)."""
    from peers import SHARED
    from tau2_cases import imported, play
    from tau2_mutations import all_cases, sample
    from toolshift.world.tau2.domains import tau2_world

    why = tau2_world(f"tau2-{domain}").unavailable()
    if why is not None:
        pytest.skip(why)
    cases = [c for c in sample(all_cases(SHARED), 1) if c["domain"] == domain]
    tasks = imported({domain})
    episodes = play(cases, tasks)
    episodes_file = tmp_path / f"{domain}.episodes.jsonl"
    write_episodes(episodes_file, episodes.values())
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", list(tasks.values()))
    out = tmp_path / f"{domain}-results.json"
    _ok("traces", "export-tau2", str(episodes_file), "--tasks", str(tasks_file), "--out", str(out))
    done = run_tau2(tau2_python, WORLD_PROBE, "reeval", str(SHARED), str(out), str(tmp_path / "tau2.json"))
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads((tmp_path / "tau2.json").read_text())

    assert sorted(seen["reeval"]) == sorted(episodes) and len(episodes) >= 10
    for sim_id, episode in episodes.items():
        mine = episode.outcome.info["reward_info"]
        dropped = seen["nl_dropped"][episode.task_id]
        written, rescored = seen["as_written"][sim_id], seen["reeval"][sim_id]
        assert written["reward"] == rescored["reward"] == episode.outcome.reward, sim_id
        assert (written.get("db_check") or {}).get("db_match") == (rescored.get("db_check") or {}).get(
            "db_match"
        ), sim_id
        assert _comparable(written, dropped) == _comparable(rescored, dropped), sim_id
        assert _comparable(written, dropped) == _comparable(mine, dropped), sim_id
    rewards = [e.outcome.reward for e in episodes.values()]
    assert seen["metrics"]["avg_reward"] == pytest.approx(sum(rewards) / len(rewards))
    assert 0 < sum(rewards) < len(rewards)  # some cases pass and some fail

    back = {e.id: e for e in read_results(out).episodes}  # the harness's end calls come back
    for sim_id, episode in episodes.items():
        assert [m.tool_calls for m in back[sim_id].messages] == [m.tool_calls for m in episode.messages]


def _comparable(reward_info: dict, nl_dropped: bool) -> dict:
    """A RewardInfo without NL_ASSERTION's part where τ² would ask an LLM (as tests/world/test_tau2_reward.py)."""
    out = json.loads(json.dumps(reward_info))
    info = out.get("info") or {}
    if nl_dropped:
        info.pop("nl", None)
        info.pop("unjudged", None)
        out["reward_basis"] = [b for b in out.get("reward_basis") or [] if b != "NL_ASSERTION"]
    out["info"] = info or None
    return out
