"""Steward end to end on a small real build: libraries per version, eval results, SKILL.md round trip, MCP serve."""

from __future__ import annotations

import asyncio
import json

import pytest

from toolshift.errors import BadInputError
from toolshift.steward.experiment import build_libraries, context, follow, library_path
from toolshift.steward.library import Library
from toolshift.steward.quality import supply_quality
from toolshift.steward.report import evaluate_follow, write_report
from toolshift.steward.skillmd import export_skills, import_skills
from toolshift.traces.store import iter_episodes

DOMAINS = ["payroll"]
VERSIONS = 3

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory, evolved_build):
    out = evolved_build(tmp_path_factory.mktemp("build"), DOMAINS, 20, VERSIONS)
    ctx = context(out, out / "steward")
    work = build_libraries(ctx)
    paths = follow(ctx)
    return ctx, work, paths


def test_libraries_per_version_verify_and_incremental_does_less_work(run):
    ctx, work, _ = run
    for v in range(1, VERSIONS + 1):
        for kind in ("incremental", "full"):
            with Library.open(library_path(ctx, kind, v)) as lib:
                assert lib.catalog_version == v
                assert lib.skills("planning")
    # skills written (add, revise): state flips (deactivate, reactivate) write no content
    inc = sum(
        sum(n for op, n in work["incremental"][v]["by_op"].items() if op in ("add", "revise"))
        for v in range(2, VERSIONS + 1)
    )
    full = sum(work["full"][v]["edits"] for v in range(2, VERSIONS + 1))
    assert inc < full
    assert work["incremental"][1]["edits"] == work["full"][1]["edits"]  # both initialise on v1 alike


def test_follower_episodes_are_scored_by_the_benchmark(run, tmp_path):
    ctx, work, paths = run
    scores = evaluate_follow(ctx, paths, resamples=50)
    assert set(scores) == {"steward-frozen", "steward-full", "steward-incremental"}
    v1 = scores["steward-incremental"]["v1"]
    assert v1["SR"]["n"] > 0 and v1["SR"]["mean"] > 0  # the instrument solves tasks it has skills for
    quality = supply_quality(ctx, resamples=50)
    assert quality["oracle"]["v1"]["F1"]["mean"] == 1.0
    assert quality["full catalog"]["v1"]["R"]["mean"] == 1.0
    md = tmp_path / "steward.md"
    results = write_report(
        ctx, quality, scores, work, "toolshift steward eval X", md, train_sample=None, sample=None
    )
    body = json.loads(results.read_text())
    assert body["format"] == "toolshift.steward-results/1"
    text = md.read_text()
    assert "## 1. Supply quality" in text and "### steward-incremental" in text
    assert (tmp_path / "steward_sr.png").stat().st_size > 1000
    from toolshift.provenance import code_revision

    n = sum(1 for _ in iter_episodes(paths[0]))  # each episode keeps the commit that made it
    assert f"Recorded at {code_revision()} ({n} episodes)." in text
    write_report(
        ctx, quality, scores, work, "toolshift steward eval X", md, train_sample=None, sample=None,
        models={"steward-plan-m": scores["steward-incremental"]}, model_sample=1, note="Noted here.",
    )  # fmt: skip
    text = md.read_text()
    assert f"- steward-plan-m: recorded at {code_revision()}" in text and "\nNoted here.\n" in text


def test_model_rows_are_compared_with_the_domain_tools_row_paired_over_the_same_tasks(run, tmp_path):
    """Part 3's SR minus the `[domain-tools]` row's: per instance, so on the same instances it is the
    difference of the rows' SRs, with a paired interval around it; only part 3 asks for it."""
    from toolshift.steward.report import VS_DOMAIN, frozen_v1

    ctx, work, paths = run
    base = frozen_v1(ctx, None)  # a `[domain-tools]` row: the benchmark's frozen-v1 baseline
    scores = evaluate_follow(ctx, [*paths, base], resamples=200, paired=True)
    (label,) = [a for a in scores if a.endswith("[domain-tools]")]
    assert VS_DOMAIN not in scores[label]["all"]
    differs = 0
    for agent in ("steward-frozen", "steward-full", "steward-incremental"):
        for v in [*(f"v{k}" for k in range(1, VERSIONS + 1)), "all"]:
            row, b = scores[agent][v], scores[label][v]
            assert row["SR"]["n"] == b["SR"]["n"]  # the same tasks on both sides
            d = row[VS_DOMAIN]
            assert d["mean"] == pytest.approx(row["SR"]["mean"] - b["SR"]["mean"])
            assert d["low"] <= d["mean"] <= d["high"] and d["n"] == row["SR"]["n"]
            differs += d["mean"] != 0
    assert differs  # the instrument and the replayed v1 path do not solve the same tasks
    assert all(VS_DOMAIN not in by_v for by_v in evaluate_follow(ctx, paths, resamples=50)["steward-full"].values()
               if isinstance(by_v, dict))  # fmt: skip
    md = tmp_path / "steward.md"
    quality = supply_quality(ctx, resamples=20)
    write_report(ctx, quality, scores, work, "toolshift steward eval X", md, train_sample=None, sample=None,
                 models=scores, model_sample=None)  # fmt: skip
    text = md.read_text()
    assert "SR minus the `[domain-tools]` row's on the same tasks and versions" in text
    inc = scores["steward-incremental"]["all"][VS_DOMAIN]
    assert (
        f"| steward-incremental | {100 * scores['steward-incremental']['v1'][VS_DOMAIN]['mean']:+.1f} ["
        in text
    )
    assert f"{100 * inc['mean']:+.1f} [{100 * inc['low']:+.1f}, {100 * inc['high']:+.1f}] |" in text
    assert "| agent | version | Cost-SPE | Step-IDR | Step-DAR | Cost-IDR | Cost-DAR |" in text


def test_real_library_round_trips_through_skill_md(run, tmp_path):
    ctx, *_ = run
    with Library.open(library_path(ctx, "incremental", VERSIONS)) as lib:
        skills = lib.skills()
    export_skills(skills, tmp_path / "skills")
    assert sorted(import_skills(tmp_path / "skills"), key=lambda s: s.id) == skills
    assert any(not s.active for s in skills) or all(s.active for s in skills)


def test_served_supply_exposes_the_view_and_refuses_unsupplied_tools(run):
    from mcp import Client

    from toolshift.steward.serve import StewardServer, domain_supply

    ctx, *_ = run
    task = next(t for t in ctx.tasks.values() if t.split == "test")
    world, supply = domain_supply(ctx.build, task.domain, 1, library_path(ctx, "incremental", 1))
    server = StewardServer(world, supply)

    async def go():
        async with Client(server.server, mode="legacy") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == {"steward_plan", "retrieve_tools", "explore_capabilities"}
            refused = await client.call_tool(task.gold_path[0].tool, task.gold_path[0].arguments)
            assert refused.is_error and "not been supplied" in refused.content[0].text
            asked = json.loads(
                (await client.call_tool("steward_plan", {"request": task.public_request})).content[0].text
            )
            assert isinstance(asked["ask_user_for"], list)
            found = json.loads(
                (await client.call_tool("retrieve_tools", {"query": task.public_request})).content[0].text
            )
            names = [t["name"] for t in found["tools"]]
            assert 0 < len(names) <= 5
            assert set(names) <= {t.name for t in world.tools}
            listed = {t.name for t in (await client.list_tools()).tools}
            assert set(names) <= listed
            ok = await client.call_tool(names[0], {})
            assert "not been supplied" not in ok.content[0].text
            for _ in range(3):
                await client.call_tool("explore_capabilities", {"query": "approve"})
            capped = json.loads(
                (await client.call_tool("explore_capabilities", {"query": "approve"})).content[0].text
            )
            assert "3 times" in capped["error"]

    asyncio.run(go())


def test_serve_refuses_an_unknown_domain_and_a_corrupted_library(run, tmp_path):
    import sqlite3

    from toolshift.steward.serve import domain_supply

    ctx, *_ = run
    with pytest.raises(BadInputError, match="not in ecosystem"):
        domain_supply(ctx.build, "nowhere", 1, library_path(ctx, "incremental", 1))
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(library_path(ctx, "incremental", 1).read_bytes())
    conn = sqlite3.connect(broken)
    conn.execute("UPDATE edits SET op = 'retire' WHERE seq = 1")
    conn.commit()
    conn.close()
    with pytest.raises(BadInputError, match="checksum"):
        domain_supply(ctx.build, DOMAINS[0], 1, broken)


def test_strict_sr_beside_sr_counts_a_collateral_write_as_a_failure(run, tmp_path):
    from toolshift.models import RowChange
    from toolshift.traces.store import iter_episodes, write_episodes

    ctx, _, paths = run
    scores = evaluate_follow(ctx, paths, resamples=50)
    for agent, by_v in scores.items():
        for v in ("v1", "v2", "v3", "all"):
            assert by_v[v]["strict SR"]["n"] == by_v[v]["SR"]["n"]
            assert by_v[v]["strict SR"]["mean"] <= by_v[v]["SR"]["mean"] + 1e-9, agent
    inc = next(p for p in paths if p.name == "steward-incremental.episodes.jsonl")
    solved = [e for e in iter_episodes(inc) if e.outcome and e.outcome.success]
    assert solved
    # the same episodes, each with one more write no task asked for: SR unchanged, strict SR 0
    for e in solved:
        e.world_diff = [*(e.world_diff or []), RowChange(table="zz_notes", key="N-1", field="text",
                                                         op="insert", after="stray")]  # fmt: skip
    stray = tmp_path / "stray.episodes.jsonl"
    write_episodes(stray, solved, meta={"ecosystem": ctx.eco_id})
    both = evaluate_follow(ctx, [stray], resamples=50)["steward-incremental"]["all"]
    assert both["SR"]["mean"] == 1.0 and both["strict SR"]["mean"] == 0.0
    md = tmp_path / "steward.md"
    quality = supply_quality(ctx, resamples=20)
    write_report(ctx, quality, scores, run[1], "toolshift steward eval X", md, train_sample=None, sample=None)
    assert "| SR | strict SR |" in md.read_text()


def test_the_follower_solves_test_workflows_no_training_episode_had(run):
    """Composition on the real build: instances whose reference call sequence no stored plan has."""
    from itertools import groupby

    from toolshift.steward.supply import Supply
    from toolshift.traces.store import iter_episodes

    ctx, _, paths = run
    refs = {(r.task_id, r.version): r for r in ctx.records}
    inc = next(p for p in paths if p.name == "steward-incremental.episodes.jsonl")
    solved_unseen = []
    for ep in iter_episodes(inc):
        v = int(ep.ecosystem_version.rsplit("/v", 1)[1])
        ref = refs[(ep.task_id, v)]
        if not ref.valid or ref.step is None:
            continue
        with Library.open(library_path(ctx, "incremental", v)) as lib:
            plans = Supply(lib, ctx.catalog(v)).plans
        known = {tuple(k for k, _ in groupby(p.body.get("steps_tools", p.tools))) for p in plans}
        seq = tuple(k for k, _ in groupby(n for n, _ in ref.step.calls))
        if seq not in known and ctx.tasks[ep.task_id].verdict(ep.world_diff or []).strict_success:
            solved_unseen.append(str(ep.source.get("plan")))
    # by plans composed for the request (`composed-…` from an atomic skill, `…^` grounded, `a+b` for the
    # parts its clauses name), not stored ones
    marks = ("~", "^", "+")
    assert [p for p in solved_unseen if p.startswith("composed-") or any(m in p for m in marks)], (
        solved_unseen
    )


def test_build_refuses_test_split_episodes_naming_file_and_episode(run, tmp_path):
    """`steward build --episodes` learns from the train split only: a test task's episode is refused (D141)."""
    import subprocess
    import sys

    from toolshift.steward.experiment import train_path
    from toolshift.traces.store import iter_episodes

    ctx, _, paths = run
    follow_file = paths[0]
    first = next(iter(iter_episodes(follow_file)))
    assert ctx.tasks[first.task_id].split == "test"

    def build(episodes, out):
        return subprocess.run(
            [sys.executable, "-m", "toolshift", "steward", "build", str(ctx.build), "--out", str(out),
             "--runs", str(ctx.run), "--episodes", str(episodes)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    done = build(follow_file, tmp_path / "leaked.sqlite")
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(follow_file) in err and f"episode {first.id}" in err and "test-split task" in err
    assert not (tmp_path / "leaked.sqlite").exists() and not (tmp_path / "leaked.sqlite.build").exists()
    done = build(train_path(ctx, 1), tmp_path / "train.sqlite")
    assert done.returncode == 0, done.stderr
    with Library.open(tmp_path / "train.sqlite") as lib:
        assert lib.skills("planning")


def test_dev_runs_the_instrument_on_training_tasks_the_library_was_not_built_from(run):
    """`--dev N` (D190): N train tasks outside the training sample, episodes in RUN/dev/, scored per kind."""
    from toolshift.steward.dev import CAUSES, dev_summary, dev_table
    from toolshift.steward.experiment import held_out
    from toolshift.traces.store import iter_episodes

    ctx, *_ = run
    sample = {r.task_id for r in ctx.refs("train", 8)}
    tasks = held_out(ctx, 8, 5)
    assert len(tasks) == 5 and not tasks & sample
    assert all(ctx.tasks[t].split == "train" for t in tasks)
    assert held_out(ctx, 8, 5) == tasks  # seeded: the same tasks on every run
    with pytest.raises(BadInputError, match="held out"):
        held_out(ctx, None, 5)  # every training task built the library: none is held out
    paths = follow(ctx, ("incremental",), dev=tasks)
    assert paths == [ctx.run / "dev" / "steward-incremental.episodes.jsonl"]
    eps = list(iter_episodes(paths[0]))
    assert eps and {e.task_id for e in eps} <= tasks and all(e.id.startswith("dev-") for e in eps)
    summary = dev_summary(ctx, paths)["steward-incremental"]
    assert sum(row["tasks"] for row in summary.values()) == len(eps)
    for row in summary.values():
        failed = sum(len(ids) for ids in row["failures"].values())
        assert row["strict"] + failed == row["tasks"] and set(row["failures"]) <= set(CAUSES)
    assert "steward-incremental: strict SR" in dev_table(dev_summary(ctx, paths))


def test_the_handoff_leads_the_policy_with_the_plan_the_request_chooses(run):
    """D196: the harness asks Steward for the plan and hands its steps to the model, its tools supplied."""
    from toolshift.steward.catalog import Catalog
    from toolshift.steward.model_agent import _opener, model_label
    from toolshift.steward.supply import Supply

    ctx, *_ = run
    task = next(t for t in ctx.tasks.values() if t.split == "test")
    with Library.open(library_path(ctx, "incremental", 1)) as lib:
        cat = ctx.catalog(1)
        supply = Supply(
            lib.skills(), Catalog(1, {n: t for n, t in cat.tools.items() if t.domain == task.domain})
        )
    plan = supply.episode(task.public_request).choose(task.public_request).plan
    assert plan is not None

    async def session(handoff: bool, with_supply: bool = True) -> tuple[str, set[str], set[str]]:
        exposed: set[str] = set()
        opener = _opener(
            ctx, task.domain, 1, supply if with_supply else None, task.public_request, exposed, handoff
        )
        async with opener() as s:
            listed = {t.name for t in (await s.client.list_tools()).tools}
            policy = s.policy
        return policy, listed, exposed

    policy, listed, exposed = asyncio.run(session(True))
    from toolshift.steward.supply import plan_facts

    facts = plan_facts(plan.body["steps"])
    asked = f"Ask the customer for: {', '.join(facts)}. " if facts else ""
    assert policy.startswith(asked + "Steps for this request: 1. " + plan.body["steps"][0]["tool"] + "(")
    assert set(plan.tools) <= listed and set(plan.tools) <= exposed
    assert not {"steward_plan", "retrieve_tools", "explore_capabilities"} & listed  # the supply is fixed
    assert listed == exposed
    policy, listed, _ = asyncio.run(session(False))
    assert "Steps for this request" not in policy and "steward_plan" in listed
    policy, listed, exposed = asyncio.run(session(False, with_supply=False))  # the domain's tools as served
    assert "steward_plan" not in listed and listed == exposed
    assert [model_label("openai:a/b", s, h) for s, h in ((True, True), (True, False), (False, True))] == [
        "steward-plan-openai_a_b", "steward-openai_a_b", "domain-openai_a_b",
    ]  # fmt: skip


def test_model_rows_run_on_held_out_training_tasks_for_choosing_the_handoff(run):
    """`--dev N --model M`: part 3's three rows on held-out training tasks, in RUN/dev/model (never test)."""
    from toolshift.steward.dev import dev_summary
    from toolshift.steward.experiment import held_out
    from toolshift.steward.model_agent import model_dev
    from toolshift.traces.store import iter_episodes

    ctx, *_ = run
    tasks = set(sorted(held_out(ctx, 8, 5))[:1])
    paths = model_dev(ctx, "embedded", tasks, max_turns=1)  # the real model, one turn an episode
    assert [p.parent for p in paths] == [ctx.run / "dev" / "model"] * 3
    for path in paths:
        eps = list(iter_episodes(path))
        assert len(eps) == VERSIONS and {e.task_id for e in eps} == tasks
    summary = dev_summary(ctx, paths)
    assert set(summary) == {"domain-embedded", "steward-embedded", "steward-plan-embedded"}
    assert model_dev(ctx, "embedded", tasks, max_turns=1) == paths  # resumed: nothing is run twice
    assert sum(1 for _ in iter_episodes(paths[0])) == VERSIONS

    # in two worker processes: the same episodes (the model is seeded by the episode), written by this one
    def what_happened(path):
        return {
            e.id: ([(c.name, c.arguments) for m in e.messages for c in m.tool_calls or []], e.world_diff)
            for e in iter_episodes(path)
        }

    alone = [what_happened(p) for p in paths]
    for p in paths:
        p.unlink()
    assert model_dev(ctx, "embedded", tasks, max_turns=1, workers=2) == paths
    assert [what_happened(p) for p in paths] == alone


def test_model_rows_name_the_seed_conditions_and_refuse_unknown_ones(run):
    """`--model-rows plan-frozen`: the handoff with the v1 library on every version, in its own file."""
    from toolshift.steward.model_agent import model_label, model_rows
    from toolshift.steward.report import _model_condition
    from toolshift.traces.store import iter_episodes, read_header

    ctx, *_ = run
    command = f"toolshift steward eval {ctx.build} --run {ctx.run} --model embedded --model-rows plan-frozen"
    (path,) = model_rows(ctx, "embedded", ["plan-frozen"], sample=1, max_turns=1, command=command)
    assert path.name == "steward-plan-frozen-embedded.episodes.jsonl"
    assert read_header(path).meta["command"] == command  # how to resume it, once kept (D265)
    eps = list(iter_episodes(path))
    assert len(eps) == VERSIONS and all(e.id.startswith("steward-plan-frozen-embedded:") for e in eps)
    labels = [model_label("embedded", True, True, kind) for kind in ("incremental", "full", "frozen")]
    assert [_model_condition(x) for x in [*labels, "embedded [domain-tools]"]] == [
        "Steward", "full rebuild", "frozen", "No Skill",
    ]  # fmt: skip
    from typer.testing import CliRunner

    from toolshift.cli import app

    args = [
        "steward",
        "eval",
        str(ctx.build),
        "--run",
        str(ctx.run),
        "--model",
        "embedded",
        "--model-rows",
        "plan,x",
    ]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, BadInputError) and result.exception.exit_code == 2
    assert "unknown --model-rows x" in str(result.exception)
