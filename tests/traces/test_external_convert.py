"""Converters for BFCL result files and AgentDojo logs, tested on files their own harnesses wrote."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.traces.agentdojo import convert_agentdojo
from toolshift.traces.bfcl import convert_bfcl
from toolshift.traces.store import iter_episodes


def test_bfcl_result_files_from_bfcls_own_harness_convert_and_regrade_to_full_marks(tmp_path):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.agents.external_judge import transcript
    from toolshift.world.external import bfcl_harness, export_tasks, judge_task

    tasks = {
        t.id: t for t in export_tasks("bfcl", subsets=["base", "miss_func", "miss_param"], limit=3).tasks
    }
    run = bfcl_harness.run_oracle(sorted(tasks), tmp_path / "result")
    assert run["entries"] == 9 and len(run["files"]) == 3
    conv = convert_bfcl(
        tmp_path / "result" / "toolshift-oracle-FC" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    )
    assert conv.kept == 3 and not conv.skipped
    from toolshift.traces.bfcl import bfcl_files

    episodes = [e for f in bfcl_files(tmp_path / "result") for e in convert_bfcl(f).episodes]
    assert sorted(e.task_id for e in episodes) == sorted(tasks)
    for episode in episodes:
        task = tasks[episode.task_id]
        assert episode.agent == "toolshift-oracle-FC" and episode.domain == "bfcl"
        users = [m.content for m in episode.messages if m.role == "user"]
        assert users == [t.text for t in task.turns]  # BFCL's holdout turn carries its own prompt
        calls = [(c.name, c.arguments) for m in episode.messages for c in m.tool_calls or []]
        assert calls == [(g.tool, g.arguments) for g in task.gold_path]
        results = [m.content for m in episode.messages if m.role == "tool"]
        assert len(results) == len(calls) and all(r is not None for r in results)
        verdict = judge_task(task, transcript(episode.messages))
        assert verdict["success"], (episode.task_id, verdict)
    conv.write(tmp_path / "out")
    assert len(list(iter_episodes(tmp_path / "out" / "bfcl.episodes.jsonl"))) == 3


def test_agentdojo_logs_from_agentdojos_own_benchmark_convert_with_their_utility(tmp_path):
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.agents.external_judge import transcript
    from toolshift.traces.agentdojo import agentdojo_files
    from toolshift.world.external import agentdojo_harness, export_tasks, judge_task

    run = agentdojo_harness.run_oracle(
        "slack", ["user_task_0", "user_task_1", "user_task_2"], tmp_path / "logs"
    )
    assert run["utility"] == {"user_task_0": True, "user_task_1": True, "user_task_2": True}
    files = agentdojo_files(tmp_path / "logs")
    assert len(files) == 3
    tasks = {t.id: t for t in export_tasks("agentdojo", subsets=["slack"], limit=3).tasks}
    for f in files:
        conv = convert_agentdojo(f)
        (episode,) = conv.episodes
        assert episode.outcome.success is True and episode.outcome.judged_by == "agentdojo-utility"
        assert episode.domain == "agentdojo-slack" and episode.agent == "toolshift-oracle"
        assert [m.role for m in episode.messages][:2] == ["system", "user"]
        task = tasks[episode.task_id]
        assert episode.messages[1].content == task.public_request
        calls = [(c.name, c.arguments) for m in episode.messages for c in m.tool_calls or []]
        assert calls == [(g.tool, g.arguments) for g in task.gold_path]
        assert judge_task(task, transcript(episode.messages))["success"]


def test_bad_bfcl_and_agentdojo_records_are_one_line_errors_or_counted(tmp_path):
    path = tmp_path / "BFCL_v4_multi_turn_base_result.json"
    good = {"id": "multi_turn_base_0", "result": [[[{"ls": "{}"}], "done"]]}
    path.write_text("\n".join([json.dumps(good), "not json", json.dumps({"id": "x", "result": [[[{"ls": "{bad"}]]]}),
                               json.dumps({"id": "y", "result": "Error during inference: boom"})]) + "\n")  # fmt: skip
    with pytest.raises(BadInputError, match="record 1"):
        convert_bfcl(path)
    conv = convert_bfcl(path, skip_bad=True)
    assert conv.kept == 2 and conv.records == 4 and conv.malformed_calls == 1  # `{bad`: kept, malformed
    assert sum(conv.skipped.values()) == 2
    assert any("Error during inference" in r for r in conv.skipped)
    path.write_text(json.dumps({"id": "z", "result": {"not": "turns"}}) + "\n")
    with pytest.raises(BadInputError, match=r"record z.*result"):
        convert_bfcl(path)
    log = tmp_path / "none.json"
    log.write_text(
        json.dumps(
            {
                "suite_name": "slack",
                "pipeline_name": "p",
                "user_task_id": "user_task_0",
                "messages": [],
                "utility": "yes",
            }
        )
    )
    with pytest.raises(BadInputError, match="utility"):
        convert_agentdojo(log)
    log.write_text(
        json.dumps(
            {"suite_name": "slack", "injection_task_id": "injection_task_1", "attack_type": "tool_knowledge"}
        )
    )
    assert convert_agentdojo(log).skipped
    # Bytes that are not UTF-8, or not JSON, are one line naming the file (toolshift.fileio), never a crash.
    log.write_bytes(b"\xff\xfe{")
    with pytest.raises(BadInputError, match=r"none\.json.*not UTF-8"):
        convert_agentdojo(log)
    path.write_bytes(json.dumps(good).encode() + b"\n\xff{\n")
    with pytest.raises(BadInputError, match=r"record 1.*not UTF-8"):
        convert_bfcl(path)
    assert convert_bfcl(path, skip_bad=True).kept == 1
