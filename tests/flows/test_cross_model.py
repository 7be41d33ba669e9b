"""Learn on one model's run, replay on another's: BFCL result files and AgentDojo logs, each converted on its own.

The catalogs' identity is the benchmark's own function documentation (toolshift.traces.benchmark_catalogs),
so two models' conversions — which call different tools and make up different names — share one fingerprint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.flows.timeline import Catalog
from toolshift.traces import benchmark_catalogs
from toolshift.traces.catalog import load_catalog
from toolshift.traces.store import iter_episodes

BFCL_DATA = Path(__file__).parent.parent / "traces" / "data" / "bfcl"
runner = CliRunner()


def _ok(*args: str) -> str:
    done = runner.invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return done.output


def _learn_and_replay(tmp_path: Path, learn: Path, replay: Path, domain: str) -> dict:
    """Learn a flow on `learn`'s conversion, replay `replay`'s with each conversion's own catalog."""
    flow = tmp_path / f"{domain}.flow.json"
    _ok("flows", "learn", str(learn / f"{domain}.episodes.jsonl"), "--catalog", str(learn / f"{domain}.catalog.json"),
        "--out", str(flow), "--learn-from-all")  # fmt: skip
    summaries = {}
    for catalog in (replay / f"{domain}.catalog.json", learn / f"{domain}.catalog.json"):
        out = tmp_path / "replay.json"
        _ok("flows", "replay", str(replay / f"{domain}.episodes.jsonl"), "--catalog", str(catalog),
            "--flow", str(flow), "--json-out", str(out))  # fmt: skip
        summaries[catalog.parent.name] = json.loads(out.read_text())
    return summaries


def test_a_flow_learned_on_one_models_bfcl_results_replays_on_anothers(tmp_path, monkeypatch):
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    for model in ("fixture-a-FC", "fixture-b-FC"):
        _ok("traces", "convert", "bfcl", str(BFCL_DATA / model), "--out", str(tmp_path / model))
    a, b = tmp_path / "fixture-a-FC", tmp_path / "fixture-b-FC"
    cat_a, cat_b = load_catalog(a / "bfcl.catalog.json"), load_catalog(b / "bfcl.catalog.json")
    assert {t.name for t in cat_a.tools if not t.exists} == {"ls<|channel|>commentary"}
    assert cat_a.tools != cat_b.tools and Catalog.of(cat_a).fingerprint() == Catalog.of(cat_b).fingerprint()
    b_episodes = sum(1 for _ in iter_episodes(b / "bfcl.episodes.jsonl"))
    assert b_episodes == 2
    for summary in _learn_and_replay(tmp_path, a, b, "bfcl").values():
        assert (summary["reach"]["episodes"], summary["next-step"]["episodes"]) == (b_episodes, b_episodes)
    # The catalogs of the calls seen (no bfcl-eval) differ between the two models: the refusal this fixes.
    monkeypatch.setattr(benchmark_catalogs, "bfcl_available", lambda: False)
    for model in ("fixture-a-FC", "fixture-b-FC"):
        _ok("traces", "convert", "bfcl", str(BFCL_DATA / model), "--out", str(tmp_path / "seen" / model))
    seen_a, seen_b = tmp_path / "seen" / "fixture-a-FC", tmp_path / "seen" / "fixture-b-FC"
    flow = tmp_path / "seen.flow.json"
    _ok("flows", "learn", str(seen_a / "bfcl.episodes.jsonl"), "--catalog", str(seen_a / "bfcl.catalog.json"),
        "--out", str(flow), "--learn-from-all")  # fmt: skip
    refused = runner.invoke(app, ["flows", "replay", str(seen_b / "bfcl.episodes.jsonl"), "--catalog",
                                  str(seen_b / "bfcl.catalog.json"), "--flow", str(flow)])  # fmt: skip
    assert isinstance(refused.exception, BadInputError) and "learned against catalog" in str(
        refused.exception
    )


def _scripted_run(suite_name: str, task_ids: list[str], logdir: Path, name: str) -> dict[str, bool]:
    """AgentDojo's own benchmark loop with a pipeline that first calls a made-up tool and an extra read
    (executed by AgentDojo's `ToolsExecutor`), then plays the task's ground truth."""
    from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
    from agentdojo.benchmark import benchmark_suite_without_injections
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.logging import OutputLogger
    from agentdojo.types import ChatAssistantMessage, text_content_block_from_string

    from toolshift.world.external import agentdojo

    suite = agentdojo.suite(suite_name)
    by_prompt = {t.PROMPT: t for t in suite.user_tasks.values()}

    class DetourFirst(BasePipelineElement):  # type: ignore[misc]
        def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
            calls = [FunctionCall(function="get_channels<|channel|>commentary", args={}, id="c0"),
                     FunctionCall(function="get_channels", args={}, id="c1")]  # fmt: skip
            message = ChatAssistantMessage(role="assistant", content=[text_content_block_from_string("")],
                                           tool_calls=calls)  # fmt: skip
            return query, runtime, env, [*messages, message], extra_args or {}

    class Truth(BasePipelineElement):  # type: ignore[misc]
        def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
            return GroundTruthPipeline(by_prompt[query]).query(
                query, runtime, env, messages, extra_args or {}
            )

    pipeline = AgentPipeline(
        [SystemMessage(agentdojo.system_message()), InitQuery(), DetourFirst(), ToolsExecutor(), Truth()]
    )
    pipeline.name = name
    with OutputLogger(str(logdir), live=None):
        results = benchmark_suite_without_injections(
            pipeline, suite, logdir=logdir, force_rerun=True, user_tasks=task_ids,
            benchmark_version=agentdojo.BENCHMARK_VERSION,
        )  # fmt: skip
    return {task: bool(ok) for (task, _), ok in results["utility_results"].items()}


def test_a_flow_learned_on_one_pipelines_agentdojo_logs_replays_on_anothers(tmp_path):
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    from toolshift.world.external import agentdojo_harness

    tasks = ["user_task_0", "user_task_1", "user_task_2"]
    agentdojo_harness.run_oracle("slack", tasks, tmp_path / "logs-a")
    utility = _scripted_run("slack", tasks, tmp_path / "logs-b", "scripted-detour")
    assert utility == dict.fromkeys(tasks, True)
    _ok("traces", "convert", "agentdojo", str(tmp_path / "logs-a"), "--out", str(tmp_path / "a"))
    _ok("traces", "convert", "agentdojo", str(tmp_path / "logs-b"), "--out", str(tmp_path / "b"))
    a, b = tmp_path / "a", tmp_path / "b"
    domain = "agentdojo-slack"
    cat_a, cat_b = load_catalog(a / f"{domain}.catalog.json"), load_catalog(b / f"{domain}.catalog.json")
    assert {t.name for t in cat_b.tools if not t.exists} == {"get_channels<|channel|>commentary"}
    assert len([t for t in cat_a.tools if t.exists]) == 11 and cat_a.source.startswith("agentdojo ")
    assert Catalog.of(cat_a).fingerprint() == Catalog.of(cat_b).fingerprint()
    episodes = list(iter_episodes(b / f"{domain}.episodes.jsonl"))
    made_up = [m for e in episodes for m in e.messages if m.role == "tool" and m.name and "<|" in m.name]
    assert len(made_up) == 3 and all(m.error and "Invalid tool" in (m.content or "") for m in made_up)
    for summary in _learn_and_replay(tmp_path, a, b, domain).values():
        assert summary["reach"]["episodes"] == summary["next-step"]["episodes"] == len(episodes) == 3


def test_the_bfcl_section_names_the_missing_checkout(tmp_path):
    from toolshift import terminal
    from toolshift.flows.results_bfcl import bfcl_section

    with pytest.raises(BadInputError, match="bfcl-vllm-results") as err:
        bfcl_section(tmp_path / "no-checkout", terminal.console())
    assert "BFCL_v4_multi_turn_base_result.json" in str(err.value)
