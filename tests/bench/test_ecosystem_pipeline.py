"""End to end on a small real build: evolve, rebuild versions from files, reference paths, baselines over MCP, eval."""

from __future__ import annotations

import json

import pytest

from toolshift.bench.build import build_domain, write_manifest
from toolshift.bench.ecosystem.baselines import run_baseline
from toolshift.bench.ecosystem.evaluate import evaluate, results_markdown
from toolshift.bench.ecosystem.evolve import EvolveConfig
from toolshift.bench.ecosystem.paths import compute_references, drift, load_references, plot_drift
from toolshift.bench.ecosystem.pipeline import evolve_build
from toolshift.bench.ecosystem.store import load_ecosystem, load_history, version_world
from toolshift.errors import BadInputError
from toolshift.provenance import code_revision
from toolshift.traces.store import iter_episodes, read_header, write_episodes

DOMAINS = ["procurement", "it_assets"]
VERSIONS = 3

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    for name in DOMAINS:
        build_domain(out, name, seed=0, per_domain=16)
    write_manifest(out, DOMAINS, 0, 16)
    eco = evolve_build(out, EvolveConfig(versions=VERSIONS, seed=1))
    header, records = compute_references(out)
    runs = out / "runs"
    for agent in ("oracle", "frozen-v1"):
        run_baseline(out, agent, runs, split=None)
    return out, eco, header, records, runs


def test_versions_are_written_and_rebuild_from_their_records(build):
    out, eco, *_ = build
    assert [s.version for s in eco.stats] == list(range(1, VERSIONS + 1))
    assert sum(s.accepted for s in eco.stats) > 0
    assert eco.stats[1].added + eco.stats[1].retired + eco.stats[1].modified > 0
    for name in DOMAINS:
        history = load_history(out, name)
        for v in range(1, VERSIONS + 1):
            world, cat = version_world(out, name, v)
            assert sorted(t.name for t in world.tools) == history.versions[v - 1].tools
            assert not cat.unreachable()


def test_every_reference_path_replays_to_delta_gold(build):
    out, eco, header, records, _ = build
    assert header.instances == len(records) == VERSIONS * sum(1 for r in records if r.version == 1)
    assert header.valid == header.instances, [r.step.replay_error for r in records if not r.valid]
    for r in records:
        assert r.step.steps <= r.cost.steps  # the step path is step-optimal
        assert r.cost.cost <= r.step.cost + 1e-9  # the cost path is cost-optimal
    rows = drift(records, VERSIONS)
    assert rows[0]["version"] == 1 and "step_fell" in rows[1]
    png = plot_drift(rows, out / "drift.png")
    assert png.stat().st_size > 10_000
    h2, again = load_references(out)
    assert h2.ecosystem == eco.id and len(again) == len(records)


def test_oracle_scores_full_marks_and_frozen_v1_does_not(build):
    out, eco, _, _, runs = build
    _, evals = evaluate(out, [runs], resamples=200)
    by = {e.agent: e for e in evals}
    oracle = by["oracle"].summary
    for v in range(1, VERSIONS + 1):
        for m in ("SR", "P", "R", "F1", "Step-SPE", "Cost-SPE"):
            assert oracle.by_version[v][m].mean == 1.0, (v, m)
        for m in ("Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR"):
            iv = oracle.by_version[v][m]
            assert iv.n == 0 or iv.mean == 1.0
    moved = [oracle.by_version[v][m].n for v in range(2, VERSIONS + 1) for m in ("Step-IDR", "Cost-DAR")]
    assert sum(moved) > 0  # the frontier moved, so the IDR/DAR checks above are not vacuous
    frozen = by["frozen-v1"].summary
    assert frozen.by_version[1]["SR"].mean == 1.0
    assert frozen.by_version[1]["Step-SPE"].mean == 1.0
    later = [frozen.by_version[v]["Step-SPE"].mean for v in range(2, VERSIONS + 1)]
    assert min(later) < 1.0  # the frozen path loses success or efficiency once the ecosystem moves
    text = results_markdown(eco, evals, "toolshift bench eval")
    assert "## oracle" in text and "| v1 |" in text


def test_eval_refuses_runs_of_another_ecosystem_or_version(build, tmp_path):
    out, eco, _, _, runs = build
    episodes = list(iter_episodes(runs / "oracle.episodes.jsonl"))
    bad = [episodes[0].model_copy(update={"ecosystem_version": "eco-0000000000/v1"})]
    write_episodes(tmp_path / "foreign.episodes.jsonl", bad)
    with pytest.raises(BadInputError) as err:
        evaluate(out, [tmp_path / "foreign.episodes.jsonl"])
    assert "eco-0000000000" in str(err.value) and "record 0" in str(err.value)
    bad = [episodes[0].model_copy(update={"ecosystem_version": f"{eco.id}/v9"})]
    write_episodes(tmp_path / "late.episodes.jsonl", bad)
    with pytest.raises(BadInputError, match=r"versions 1\.\.3"):
        evaluate(out, [tmp_path / "late.episodes.jsonl"])


def test_failed_reference_paths_are_excluded_and_counted(build, tmp_path):
    out, _eco, _, _, runs = build
    path = out / "ecosystem" / "references.jsonl"
    original = path.read_text()
    lines = original.splitlines()
    first = json.loads(lines[1])
    first["step"]["replay_ok"] = False
    lines[1] = json.dumps(first)
    try:
        path.write_text("\n".join(lines) + "\n")
        _, evals = evaluate(out, [runs], resamples=50)
        excluded = {e.agent: e.excluded for e in evals}
        assert excluded["oracle"]["reference path failed replay"] >= 1
    finally:
        path.write_text(original)


def test_eval_says_which_commit_made_each_agents_episodes(build, tmp_path):
    """Each episode keeps the commit that made it; the page counts them, and episodes older than the
    field are named by their file's creation date, never credited to today's commit."""
    out, eco, _, _, runs = build
    oracle = runs / "oracle.episodes.jsonl"
    episodes = list(iter_episodes(oracle))
    assert episodes and {ep.source["code"] for ep in episodes} == {code_revision()}
    older = tmp_path / "frozen-v1.episodes.jsonl"
    header = read_header(runs / "frozen-v1.episodes.jsonl")
    stripped = []
    for ep in iter_episodes(runs / "frozen-v1.episodes.jsonl"):
        ep.source.pop("code")
        stripped.append(ep)
    write_episodes(older, stripped, meta=header.meta)
    _, evals = evaluate(out, [oracle, older], resamples=20)
    by = {e.agent: e for e in evals}
    assert by["oracle"].codes == {code_revision(): len(episodes)}
    assert by["frozen-v1"].codes == {"unrecorded": len(stripped)}
    text = results_markdown(eco, evals, "toolshift bench eval")
    assert f"Recorded at {code_revision()} ({len(episodes)} episodes)." in text
    day = read_header(older).created[:10]
    assert f"{len(stripped)} episodes before episodes recorded their commit (files created {day})" in text


def test_an_ecosystem_of_other_tasks_is_refused(build):
    out, *_ = build
    tasks = out / "domains" / DOMAINS[0] / "tasks.jsonl"
    original = tasks.read_text()
    try:
        tasks.write_text(original.splitlines()[0] + "\n")
        # the build itself is refused first: its tasks no longer match its manifest (D73)
        with pytest.raises(BadInputError, match=r"evolved from build|differs from the manifest"):
            load_ecosystem(out)
    finally:
        tasks.write_text(original)


def test_a_domain_of_a_version_is_served_over_mcp_stdio(build):
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from toolshift.world.mcp.serve import parse_tool_result

    out, _, _, records, _ = build
    rec = next(r for r in records if r.version == VERSIONS and r.domain == DOMAINS[0])
    want = load_history(out, DOMAINS[0]).versions[VERSIONS - 1].tools
    serve = ["bench", "serve", str(out), DOMAINS[0], "--version", str(VERSIONS), "--setting", "domain-tools"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolshift", *serve])

    async def run():
        # errlog given explicitly: the client's default is whatever sys.stderr was when mcp was imported
        async with (
            stdio_client(params, errlog=sys.__stderr__) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert sorted(t.name for t in tools) == want
            for name, args in rec.step.calls:
                ok, payload = parse_tool_result(await session.call_tool(name, args))
                assert ok, payload

    anyio.run(run)


def test_baseline_runs_resume_and_refuse_foreign_files(build, tmp_path):
    out, _, _, _, runs = build
    path = runs / "frozen-v1.episodes.jsonl"
    before = path.read_text().count("\n")
    run_baseline(out, "frozen-v1", runs, split=None)  # everything is already there: nothing runs again
    assert path.read_text().count("\n") == before
    with pytest.raises(BadInputError, match="max_turns 40, not 5"):  # another setting is never mixed in
        run_baseline(out, "frozen-v1", runs, split=None, max_turns=5)
    assert path.read_text().count("\n") == before
    with pytest.raises(BadInputError, match="--sample"):
        run_baseline(out, "oracle", tmp_path / "sampled", sample=0)
    with pytest.raises(BadInputError, match="folder"):
        run_baseline(out, "oracle", path)
    write_episodes(tmp_path / "oracle.episodes.jsonl", [], meta={"ecosystem": "eco-elsewhere"})
    with pytest.raises(BadInputError, match="eco-elsewhere"):
        run_baseline(out, "oracle", tmp_path, split=None)


def test_evolve_resumes_from_finished_domains(build):
    out, eco, *_ = build
    path = out / "ecosystem" / "domains" / f"{DOMAINS[0]}.json"
    stamp = path.stat().st_mtime_ns
    again = evolve_build(out, EvolveConfig(versions=VERSIONS, seed=1))
    assert again.id == eco.id and again.stats == eco.stats
    assert again.rejected_by_reason == eco.rejected_by_reason
    assert path.stat().st_mtime_ns == stamp  # reused, not rewritten


def test_metrics_come_from_what_the_episode_did(build, tmp_path):
    """Off the reference path the same scoring drops: a repeated call costs Step-SPE, a missing write SR."""
    import asyncio

    from toolshift.agents.loop import run_episode
    from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
    from toolshift.agents.users import ScriptedUser
    from toolshift.bench.ecosystem.server import Served, opener
    from toolshift.bench.ecosystem.settings import VersionWorlds, exposure_for

    out, eco, _, records, _ = build
    rec = next(r for r in records if r.version == 2 and r.valid and r.step.calls == r.cost.calls)
    worlds = VersionWorlds(out)
    task = next(t for t in worlds.tasks(rec.domain) if t.id == rec.task_id)
    calls = [ScriptedCall(name, args) for name, args in rec.step.calls]
    # greedy: the task's path, then another task's gold path, which changes rows this task does not touch
    mine = {(c.table, c.key) for c in task.expected_changes}
    other = next(
        t
        for t in worlds.tasks(rec.domain)
        if t.expected_changes and not mine & {(c.table, c.key) for c in t.expected_changes}
    )
    extra = [ScriptedCall(g.tool, g.arguments) for g in other.gold_path]
    variants = {"padded": [calls[0], *calls], "short": calls[:-1], "greedy": [*calls, *extra]}
    episodes = []
    for name, script in variants.items():
        ep = asyncio.run(
            run_episode(
                task,
                ScriptedPolicy(name, script),
                ScriptedUser(task.public_request, task.instruction),
                opener(
                    worlds,
                    Served(eco.id, 2, "domain-tools", rec.domain),
                    exposure_for("domain-tools", catalog=worlds.catalog(rec.domain, 2), task=task),
                ),
                episode_id=f"{name}:{task.id}",
                source={"baseline": name, "criterion": "both"},
            )
        )
        assert ep.ecosystem_version == f"{eco.id}/v2"  # the session declared it; the loop recorded it
        episodes.append(ep)
    write_episodes(tmp_path / "variants.episodes.jsonl", episodes)
    _, evals = evaluate(out, [tmp_path / "variants.episodes.jsonl"], resamples=50)
    by = {e.agent: e.scores for e in evals}
    (padded,) = by["padded [domain-tools]"]
    (short,) = by["short [domain-tools]"]
    assert padded.success and padded.step_spe == pytest.approx(rec.step.steps / (rec.step.steps + 1))
    assert padded.cost_spe < 1.0
    assert not short.success and short.step_spe == 0.0 and short.cost_spe == 0.0
    assert padded.strict_success and padded.collateral_changes == 0
    (greedy,) = by["greedy [domain-tools]"]
    other_rows = sorted({f"{c.table}/{c.key}" for c in other.expected_changes})
    assert greedy.success and not greedy.strict_success  # SR 1, Strict-SR 0
    assert set(other_rows) <= set(greedy.collateral_rows)
    summary = {e.agent: e.summary.by_version[2] for e in evals}["greedy [domain-tools]"]
    assert summary["SR"].mean == 1.0 and summary["Strict-SR"].mean == 0.0
    assert summary["SR-collateral"].mean == 1.0 and summary["Collateral"].mean == greedy.collateral_changes
    text = results_markdown(eco, evals, "toolshift bench eval")
    assert "Strict-SR" in text and f"{task.id} v2 (solved): {greedy.collateral_changes} change(s)" in text


def test_frozen_v1_sends_the_v1_calls_on_every_version(build):
    _, _, _, records, runs = build
    v1 = {r.task_id: r.step.calls for r in records if r.version == 1}
    later = {r.task_id: r.step.calls for r in records if r.version == VERSIONS}
    seen = stopped = 0
    for ep in iter_episodes(runs / "frozen-v1.episodes.jsonl"):
        sent = [
            [c.name, c.arguments]
            for m in ep.messages
            if m.role == "assistant"
            for c in m.tool_calls or []
            if c.requestor == "assistant" and c.name != "search_tools"  # it fetches each tool by name first
        ]
        planned = [list(c) for c in v1[ep.task_id]]
        assert sent and sent == planned[: len(sent)], ep.id
        results = [m for m in ep.messages if m.role == "tool" and m.name != "search_tools"]
        failed = [k for k, m in enumerate(results) if m.error]
        if failed:  # it stops at its first failing call: its procedure has no step for that
            assert failed[0] == len(results) - 1, ep.id
            stopped += len(sent) < len(planned)
        else:
            assert sent == planned, ep.id
        seen += ep.ecosystem_version.endswith(f"/v{VERSIONS}")
    assert seen == len(later)
    assert any(later[t] != v1[t] for t in later)  # the frozen path is really stale somewhere
    assert stopped > 0  # and somewhere it broke before its end
