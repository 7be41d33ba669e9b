"""Converters keep every failure: a call that is not a call is kept, flagged; only BFCL's inference errors drop.

The BFCL fixtures (tests/traces/data/bfcl/, written by BFCL's own harness from scripted replies: see
tests/traces/bfcl_fixtures.py for the real shapes each copies) are two "models" on the same entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolshift.traces import benchmark_catalogs
from toolshift.traces.bfcl import convert_bfcl
from toolshift.traces.conversion import read_call
from toolshift.traces.episode import Episode

DATA = Path(__file__).parent / "data" / "bfcl"
A = DATA / "fixture-a-FC" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
B = DATA / "fixture-b-FC" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"


def _calls(episode: Episode) -> list[tuple[str, dict, bool, str | None, bool]]:
    """(name, arguments, malformed, result text, result error) of every call, in order."""
    out = []
    messages = episode.messages
    for i, m in enumerate(messages):
        for k, c in enumerate(m.tool_calls or []):
            result = messages[i + 1 + k]
            assert result.role == "tool" and result.tool_call_id == c.id
            out.append((c.name, c.arguments, bool(c.malformed), result.content, result.error))
    return out


def test_read_call_keeps_what_it_cannot_read():
    assert read_call("c", "ls", '{"a": true}') == read_call("c", "ls", {"a": True})
    assert not read_call("c", "ls", "{}").malformed
    for text in ('{"a": true}<|call|>', '"{\\"a\\": true}"', "", "[1, 2]", "null"):
        call = read_call("c", "ls", text)
        assert (call.name, call.arguments, call.malformed) == ("ls", {"_raw": text}, True)
    assert read_call("c", "ls", [1]).arguments == {"_raw": "[1]"}
    nameless = read_call("c", None, {"a": 1})
    assert (nameless.name, nameless.malformed, nameless.arguments) == ("", True, {"_raw": '{"a": 1}'})
    assert "malformed" not in json.loads(read_call("c", "ls", "{}").model_dump_json(exclude_none=True))


def test_the_fixtures_are_what_bfcls_own_harness_writes(tmp_path):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from bfcl_fixtures import without_latency, write_fixtures

    written = write_fixtures(tmp_path)
    assert [p.relative_to(tmp_path) for p in written] == [A.relative_to(DATA), B.relative_to(DATA)]
    for path in written:
        assert without_latency(path) == without_latency(DATA / path.relative_to(tmp_path))


def test_bfcl_keeps_every_failure_and_drops_only_inference_errors():
    """Before: model B's file was refused (arguments not JSON), and with --skip-bad 0 of its 3 records kept."""
    a, b = convert_bfcl(A), convert_bfcl(B)
    assert (a.records, a.kept, dict(a.skipped)) == (2, 2, {})
    assert (b.records, b.kept, dict(b.skipped)) == (
        3,
        2,
        {"BFCL: Error during inference (no turns were recorded)": 1},
    )
    assert (a.malformed_calls, b.malformed_calls) == (0, 2)
    b1, b4 = b.episodes
    assert [m.role for m in b1.messages if m.role == "user"] == ["user"] * 4
    first = _calls(b1)[0]  # gpt-oss's channel token in the argument text: BFCL never ran the step
    assert first == ("ls", {"_raw": '{"a": true}<|call|>'}, True,
                     "Error decoding the model response: Extra data: line 1 column 12 (char 11)", True)  # fmt: skip
    assert [c[0] for c in _calls(b1)] == ["ls", "pwd", "cd", "mv", "tail"]
    empty = [m for m in b1.messages if m.role == "assistant" and not m.tool_calls and m.content == ""]
    assert len(empty) == 1  # the `[]` step
    twice = _calls(b4)[0]  # arguments encoded twice: a JSON string, not an object
    assert twice[:3] == ("ls", {"_raw": '"{\\"a\\": true}"'}, True) and twice[4]
    leaked = _calls(a.episodes[1])[0]  # a name BFCL does not define: executed, and failed, by BFCL
    assert leaked == ("ls<|channel|>commentary", {"a": True}, False,
                      "Error during execution: invalid syntax (<string>, line 1)", True)  # fmt: skip


def test_bfcl_catalog_is_the_benchmarks_function_docs_the_same_for_both_models():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.flows.timeline import Catalog

    a, b = convert_bfcl(A).catalogs["bfcl"], convert_bfcl(B).catalogs["bfcl"]
    assert len([t for t in a.tools if t.exists]) == len([t for t in b.tools if t.exists]) == 128
    made_up = a.get("ls<|channel|>commentary")
    assert made_up is not None and (made_up.exists, made_up.effect) == (False, "neither")
    assert b.get("ls<|channel|>commentary") is None and a.source.startswith("bfcl-eval ")
    assert Catalog.of(a).fingerprint() == Catalog.of(b).fingerprint()


def test_bfcl_catalog_effects_are_the_worlds():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from toolshift.world.external import bfcl

    world = {
        doc["name"]: bfcl.effect_of(doc["name"], c)
        for c in bfcl._class_modules()
        for doc in bfcl.func_docs(c)
    }
    assert {n: e for n, e, _ in benchmark_catalogs.bfcl_functions()} == world


def test_agentdojo_catalog_effects_are_the_worlds():
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.world.external import agentdojo

    for suite in agentdojo.SUITES:
        catalog = benchmark_catalogs.agentdojo_catalog(f"agentdojo-{suite}", suite, "v1.2.2", [])
        assert catalog is not None
        domain = agentdojo.load_domain(f"{suite}.{agentdojo.task_ids(suite)[0]}")
        assert catalog.effects() == {t.name: t.effect for t in domain.tools}, suite


def test_without_bfcl_eval_the_catalog_falls_back_to_the_calls_seen_and_says_so(monkeypatch):
    monkeypatch.setattr(benchmark_catalogs, "bfcl_available", lambda: False)
    conv = convert_bfcl(A)
    catalog = conv.catalogs["bfcl"]
    assert "not installed" in catalog.source and conv.notes and "toolshift[bfcl]" in conv.notes[0]
    assert sorted(t.name for t in catalog.tools) == sorted(
        {c.name for e in conv.episodes for m in e.messages for c in m.tool_calls or []}
    )
    assert conv.kept == 2


def test_converted_failures_get_bfcls_own_verdict():
    """BFCL's eval runner on the result file (its loop, copied: undecodable and empty steps skipped) and
    `judge_task` on the converted episodes agree entry by entry."""
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.model_handler.utils import convert_to_function_call

    from toolshift.agents.external_judge import transcript
    from toolshift.world.external import bfcl, export_tasks, judge_task
    from toolshift.world.external.bfcl_harness import _forget_instances

    tasks = {t.id: t for t in export_tasks("bfcl", subsets=["base"], limit=5).tasks}
    verdicts = {}
    for n, path in enumerate((A, B)):
        episodes = {e.task_id: e for e in convert_bfcl(path).episodes}
        for line in path.read_text().splitlines():
            raw = json.loads(line)
            if not isinstance(raw["result"], list):
                continue
            decoded = []
            for turn in raw["result"]:
                steps = []
                for step in turn:
                    try:
                        calls = convert_to_function_call(step)
                    except Exception:  # BFCL's runner: "Ignore any failed decoding"
                        continue
                    if calls:
                        steps.append(calls)
                decoded.append(steps)
            e = bfcl.entry(raw["id"])
            model = f"toolshift_fixture_{n}"
            truth = [[c for c in turn] for turn in e.ground_truth]
            theirs = multi_turn_checker(decoded, truth, e.test_entry(), e.category, model)["valid"]
            _forget_instances(f"{model}_{e.id}_")
            ours = judge_task(tasks[raw["id"]], transcript(episodes[raw["id"]].messages))["success"]
            verdicts[(path.parent.parent.name, raw["id"])] = (theirs, ours)
    assert all(theirs == ours for theirs, ours in verdicts.values()), verdicts
    assert {k: v[0] for k, v in verdicts.items()} == {
        ("fixture-a-FC", "multi_turn_base_1"): True, ("fixture-a-FC", "multi_turn_base_4"): True,
        ("fixture-b-FC", "multi_turn_base_1"): False, ("fixture-b-FC", "multi_turn_base_4"): False,
    }  # fmt: skip


def test_agentdojo_keeps_a_call_it_cannot_read(tmp_path):
    from toolshift.traces.agentdojo import convert_agentdojo

    log = tmp_path / "none.json"
    calls = [{"function": "get_channels", "args": "{not an object", "id": "c0"}, {"args": {}, "id": "c1"}]
    log.write_text(json.dumps({
        "suite_name": "slack", "pipeline_name": "p", "user_task_id": "user_task_0", "utility": False,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": calls}],
    }))  # fmt: skip
    conv = convert_agentdojo(log)
    (episode,) = conv.episodes
    got = [(c.name, c.arguments, c.malformed) for c in episode.messages[1].tool_calls or []]
    assert got == [("get_channels", {"_raw": "{not an object"}, True), ("", {"_raw": "{}"}, True)]
    assert conv.malformed_calls == 2 and not conv.skipped


def test_without_agentdojo_the_catalog_falls_back_to_the_calls_seen_and_says_so(tmp_path, monkeypatch):
    from toolshift.traces.agentdojo import convert_agentdojo

    monkeypatch.setattr(benchmark_catalogs, "agentdojo_available", lambda: False)
    log = tmp_path / "none.json"
    calls = [{"function": "get_channels", "args": {}, "id": "c0"}]
    log.write_text(json.dumps({
        "suite_name": "slack", "pipeline_name": "p", "user_task_id": "user_task_0", "utility": True,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": calls}],
    }))  # fmt: skip
    conv = convert_agentdojo(log)
    catalog = conv.catalogs["agentdojo-slack"]
    assert [t.name for t in catalog.tools] == ["get_channels"] and "not installed" in catalog.source
    assert conv.notes and "toolshift[agentdojo]" in conv.notes[0] and conv.kept == 1
