"""The viewer's grader panel on verdicts the benchmarks' own checkers gave: BFCL's, AgentDojo's and Δgold's."""

from __future__ import annotations

import pytest

from toolshift.report.inputs import discover
from toolshift.report.view.server import Viewer
from toolshift.traces.store import write_episodes


def answers(paths) -> list[dict]:
    viewer = Viewer(discover(paths))
    return [viewer.episode({"row": str(r)}) for r in range(viewer.runs.size)]


def test_bfcl_checker_verdicts_show_valid_and_the_error_it_named(tmp_path):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.agents.external_judge import external_outcome
    from toolshift.traces.bfcl import bfcl_files, convert_bfcl
    from toolshift.world.external import bfcl_harness, export_tasks

    tasks = {t.id: t for t in export_tasks("bfcl", subsets=["base"], limit=1).tasks}
    bfcl_harness.run_oracle(sorted(tasks), tmp_path / "result")
    (episode,) = [e for f in bfcl_files(tmp_path / "result") for e in convert_bfcl(f).episodes]
    task = tasks[episode.task_id]
    good = episode.model_copy(
        update={"id": "good", "outcome": external_outcome(task, episode.messages, None, {})}
    )
    # The same conversation with its last call taken back: BFCL's checker finds the state differs.
    cut = [m.model_copy(deep=True) for m in episode.messages]
    last = max(i for i, m in enumerate(cut) if m.role == "assistant" and m.tool_calls)
    cut[last].tool_calls = None
    bad_outcome = external_outcome(task, cut, None, {})
    bad = episode.model_copy(update={"id": "bad", "messages": cut, "outcome": bad_outcome})
    write_episodes(tmp_path / "bfcl.episodes.jsonl", [good, bad])
    by_id = {a["summary"]["id"]: a["grader"] for a in answers([tmp_path / "bfcl.episodes.jsonl"])}
    (ok,) = by_id["good"]["checks"]
    assert (
        ok["kind"] == "bfcl"
        and ok["valid"] is True
        and by_id["good"]["judged_by"] == "bfcl-multi-turn-checker"
    )
    (wrong,) = by_id["bad"]["checks"]
    assert wrong["valid"] is False and wrong["error_type"] == bad_outcome.info["error_type"]
    assert wrong["error_type"].startswith("multi_turn:") and wrong["error_message"]


def test_agentdojo_utility_and_security_show_as_its_benchmark_recorded_them(tmp_path):
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.traces.agentdojo import agentdojo_files, convert_agentdojo
    from toolshift.world.external import agentdojo_harness

    agentdojo_harness.run_oracle("slack", ["user_task_0"], tmp_path / "logs")
    (log,) = agentdojo_files(tmp_path / "logs")
    convert_agentdojo(log).write(tmp_path / "out")
    (answer,) = answers([tmp_path / "out"])
    (check,) = answer["grader"]["checks"]
    assert answer["grader"]["judged_by"] == "agentdojo-utility"
    assert check["kind"] == "agentdojo" and check["utility"] is True
    assert check["security"] == answer["episode"]["outcome"]["info"].get("security")


def test_delta_rows_are_named_as_recorded_without_a_build(eco_runs, tmp_path):
    """Without the task, the panel names what the episode recorded: the rows, or the count alone."""
    _, runs = eco_runs
    for a in answers([runs]):
        info = a["episode"]["outcome"]["info"]
        (check,) = [c for c in a["grader"]["checks"] if c["kind"] == "delta"]
        assert check["from"] == "as the episode recorded it"
        assert (
            check["missing_rows"] == info["missing_rows"]
            and check["missing_changes"] == info["missing_changes"]
        )
        assert check["collateral_rows"] == info["collateral_rows"]
        assert a["task"]["found"] is False and a["task"]["recorded"]["from"].startswith("the episode itself")
        assert a["task"]["recorded"]["request"] == next(
            m["content"] for m in a["episode"]["messages"] if m["role"] == "user"
        )
        assert "no benchmark build among the inputs" in a["task"]["reason"]


def test_tau_bench_reward_and_its_recorded_task_show_without_a_build(tau_runs):
    """τ-bench's published runs: r_actions as the check, and the task as the episode carries it."""
    found = answers([tau_runs])
    kinds = set()
    for a in found:
        info = a["episode"]["outcome"]["info"]
        if not isinstance(info.get("reward_info"), dict):
            assert a["grader"]["checks"] == []  # nothing recorded, nothing made up
            continue
        (check,) = a["grader"]["checks"]
        assert check["kind"] == "taubench" and check["reward"] == info["reward_info"]["reward"]
        logged = info["reward_info"].get("info") or {}
        assert (check["r_actions"], check["r_outputs"]) == (logged.get("r_actions"), logged.get("r_outputs"))
        kinds.add(tuple(sorted(logged)))
        recorded = a["task"]["recorded"]
        assert recorded["instruction"] == info["instruction"]
        assert [x["name"] for x in recorded["expected_actions"]] == [g["name"] for g in info["gold_actions"]]
    assert len(found) == 100 and {("gt_data_hash", "r_actions"), ("outputs", "r_outputs")} <= kinds


def test_tau2_task_comes_from_its_results_file(tau2_results):
    (first, *_) = answers([tau2_results])
    recorded = first["task"]["recorded"]
    assert recorded["from"] == "τ²-bench Results.tasks"
    assert [a["name"] for a in recorded["expected_actions"]] == ["get_user_details", "cancel_reservation"]
