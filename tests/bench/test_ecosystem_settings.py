"""The standard setting is the whole ecosystem, the diagnostics are named settings, and any user and any
model run on any version and are scored — in process, and through `bench serve` + `toolshift run`."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from toolshift.bench.build import build_domain, write_manifest
from toolshift.bench.ecosystem.baselines import baseline_file, run_baseline
from toolshift.bench.ecosystem.evaluate import evaluate
from toolshift.bench.ecosystem.evolve import EvolveConfig
from toolshift.bench.ecosystem.paths import compute_references
from toolshift.bench.ecosystem.pipeline import evolve_build
from toolshift.bench.ecosystem.server import EcosystemServer, Served, opener
from toolshift.bench.ecosystem.settings import (
    SEARCH_TOOL,
    EcosystemVersion,
    VersionWorlds,
    exposure_for,
    task_tools,
)
from toolshift.bench.ecosystem.store import load_history
from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.traces.store import iter_episodes
from toolshift.world.mcp.serve import http_server_thread, parse_tool_result

DOMAINS = ["procurement", "it_assets"]
VERSIONS = 3

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("settings")
    for name in DOMAINS:
        build_domain(out, name, seed=0, per_domain=12)
    write_manifest(out, DOMAINS, 0, 12)
    eco = evolve_build(out, EvolveConfig(versions=VERSIONS, seed=1))
    _, records = compute_references(out)
    runs = out / "runs"
    for agent in ("oracle", "frozen-v1"):
        run_baseline(out, agent, runs, split=None)
    run_baseline(out, "oracle", runs, split=None, setting="domain-tools")
    return out, eco, records, runs


def test_one_version_is_one_catalog_of_every_domain_with_a_search(build):
    out, _, _, _ = build
    worlds = VersionWorlds(out)
    whole = EcosystemVersion(worlds, DOMAINS, 2)
    per_domain = [set(load_history(out, d).versions[1].tools) for d in DOMAINS]
    assert set(whole.tools) == set.union(*per_domain)
    name = sorted(per_domain[1])[0]
    assert whole.search.search(name, 1) == [name]  # an exact name comes first
    found = whole.search.search("cancel a purchase order", 5)
    assert 1 <= len(found) <= 5 and any("purchase_order" in n for n in found)


def test_the_standard_setting_exposes_only_what_a_search_returned(build):
    out, eco, records, _ = build
    from mcp import Client

    worlds = VersionWorlds(out)
    whole = EcosystemVersion(worlds, DOMAINS, 2)
    exposure = exposure_for("standard", version=whole)
    server = EcosystemServer(worlds, Served(eco.id, 2, "standard"), exposure, eco=whole, shared_state=True)
    rec = next(r for r in records if r.version == 2 and r.domain == DOMAINS[1])
    first, args = rec.step.calls[0]

    async def run():
        async with Client(server.server, mode="legacy") as client:
            served = client.server_capabilities.experimental["toolshift/ecosystem"]
            assert served == {
                "ecosystem_version": f"{eco.id}/v2",
                "setting": "standard",
                "domain": None,
                "task": None,
            }
            assert [t.name for t in (await client.list_tools()).tools] == [SEARCH_TOOL]
            ok, payload = parse_tool_result(await client.call_tool(first, args))
            assert not ok and payload["code"] == "unknown_tool"  # not exposed yet
            result = await client.call_tool(SEARCH_TOOL, {"query": first, "k": 3})
            ok, payload = parse_tool_result(result)
            assert ok and payload["tools"][0]["name"] == first and len(payload["tools"]) == 3
            assert result.meta["toolshift/tools_changed"] is True and payload["policies"]
            listed = [t.name for t in (await client.list_tools()).tools]
            assert listed[0] == SEARCH_TOOL and set(listed[1:]) == {t["name"] for t in payload["tools"]}
            ok, payload = parse_tool_result(await client.call_tool(first, args))
            assert ok, payload

    asyncio.run(run())
    server.shared.close()


def test_the_diagnostic_settings_hand_over_more(build):
    out, eco, records, _ = build
    worlds = VersionWorlds(out)
    rec = next(r for r in records if r.version == 3 and r.step.steps > 1)
    task = next(t for t in worlds.tasks(rec.domain) if t.id == rec.task_id)
    cat = worlds.catalog(rec.domain, 3)
    domain = exposure_for("domain-tools", catalog=cat, task=task)
    tools = exposure_for("task-tools", catalog=cat, task=task)
    oracle = exposure_for("oracle-tools", catalog=cat, task=task, reference=rec)
    path = exposure_for("oracle-path", catalog=cat, task=task, reference=rec)
    assert set(domain.listed) == set(cat.tools) and not domain.searchable
    assert set(oracle.listed) <= set(tools.listed) <= set(domain.listed)
    assert set(tools.listed) == set(task_tools(cat, task))
    assert set(oracle.listed) == set(rec.step.tools) | set(rec.cost.tools)
    server = EcosystemServer(worlds, Served(eco.id, 3, "oracle-path", rec.domain, task.id), path)
    assert "# Plan" in server.policy and ", ".join(rec.step.tools) in server.policy
    with pytest.raises(BadInputError, match="needs a task"):
        exposure_for("task-tools", catalog=cat, domain=rec.domain)


def test_episodes_record_setting_version_and_the_exposed_set(build):
    out, _eco, records, runs = build
    eps = list(iter_episodes(runs / "oracle.episodes.jsonl"))
    assert eps and all(e.source["setting"] == "standard" for e in eps)
    by = {(r.task_id, r.version): r for r in records}
    for ep in eps:
        version = int(ep.ecosystem_version.rsplit("/v", 1)[1])
        ref = by[(ep.task_id, version)]
        path = ref.step if ep.source["criterion"] in ("step", "both") else ref.cost
        assert set(ep.source["exposed_tools"]) - {SEARCH_TOOL} == set(path.tools)
    _, evals = evaluate(out, [runs], resamples=50)
    by_agent = {e.agent: e.summary.overall for e in evals}
    assert by_agent["oracle"]["P"].mean == by_agent["oracle"]["R"].mean == 1.0
    domain = by_agent["oracle [domain-tools]"]
    assert domain["R"].mean == 1.0 and domain["P"].mean < 0.5  # the whole domain listed: low precision
    assert domain["SR"].mean == 1.0


def test_frozen_v1_pays_the_same_and_never_finds_a_cheaper_path(build):
    out, _, records, runs = build
    costs = {(d, e.version): e.costs for d in DOMAINS for e in load_history(out, d).versions}
    v1 = {r.task_id: r for r in records if r.version == 1}
    checked = 0
    for r in records:
        tools = [name for name, _ in v1[r.task_id].step.calls]
        table = costs[(r.domain, r.version)]
        if all(t in table for t in tools):
            assert sum(table[t] for t in tools) == v1[r.task_id].step.cost
            checked += 1
    assert checked > len(v1)  # later versions where all its tools exist are checked too
    _, evals = evaluate(out, [runs / "frozen-v1.episodes.jsonl"], resamples=50)
    (frozen,) = evals
    for metric in ("Cost-IDR", "Step-IDR"):  # its path is the v1 path: never better than a previous optimum
        iv = frozen.summary.overall[metric]
        assert iv.n == 0 or iv.mean == 0.0, metric
    assert frozen.summary.overall["Cost-IDR"].n > 0


def test_any_user_simulator_runs_on_any_version_and_is_scored(build, tmp_path):
    out, _, _, _ = build
    path = run_baseline(
        out, "frozen-v1", tmp_path, split=None, sample=1, user="embedded", setting="task-tools"
    )
    assert path.name == baseline_file("frozen-v1", "task-tools", "embedded")
    eps = list(iter_episodes(path))
    assert len(eps) == VERSIONS and {e.outcome.info["user"] for e in eps} == {
        "llm:embedded:smollm2-135m-q4_1"
    }
    _, evals = evaluate(out, [tmp_path], resamples=50)
    assert [e.agent for e in evals] == ["frozen-v1 [task-tools] (user llm:embedded:smollm2-135m-q4_1)"]
    assert len(evals[0].scores) == VERSIONS


def test_bench_serve_and_toolshift_run_with_an_llm_user_are_scored(build, tmp_path):
    """The issue's complaint: `bench eval` refused episodes of `bench serve` + `toolshift run --user …`."""
    out, eco, _records, _ = build
    worlds = VersionWorlds(out)
    whole = EcosystemVersion(worlds, DOMAINS, VERSIONS)
    served = Served(eco.id, VERSIONS, "standard")
    server = EcosystemServer(worlds, served, exposure_for("standard", version=whole), eco=whole)
    tasks = out / "domains" / DOMAINS[0] / "tasks.jsonl"
    runner = CliRunner()
    with http_server_thread(server) as url:
        result = runner.invoke(
            app,
            ["run", "--world", url, "--tasks", str(tasks), "--model", "embedded", "--user", "embedded",
             "--limit", "1", "--max-turns", "4", "--out", str(tmp_path / "run")],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (ep,) = list(iter_episodes(next((tmp_path / "run").glob("run-*.episodes.jsonl"))))
    assert ep.ecosystem_version == f"{eco.id}/v{VERSIONS}" and ep.source["setting"] == "standard"
    assert SEARCH_TOOL in ep.source["exposed_tools"]
    res = runner.invoke(app, ["bench", "eval", str(tmp_path / "run"), "--build", str(out)])
    assert res.exit_code == 0, res.output
    assert "user llm:embedded" in res.output.replace("\n", " ")
    (ev,) = evaluate(out, [tmp_path / "run"], resamples=10)[1]
    serve, run = ev.commands  # what reproduces it: the server's line (with its port), then the run's
    assert serve.startswith(f"toolshift bench serve {out} --version {VERSIONS} --setting standard")
    assert f"--port {url.rsplit(':', 1)[1].split('/')[0]} --transport http" in serve
    assert f"--tasks {tasks} --limit 1 --model embedded --user embedded" in run


def test_in_process_sessions_are_separate_and_diff_exactly(build):
    out, eco, records, _ = build
    worlds = VersionWorlds(out)
    whole = EcosystemVersion(worlds, DOMAINS, 1)
    rec = next(r for r in records if r.version == 1 and r.domain == DOMAINS[0])
    served = Served(eco.id, 1, "standard")

    async def run():
        opened = opener(worlds, served, exposure_for("standard", version=whole), whole)
        async with opened() as a, opened() as b:
            for name, args in rec.step.calls:
                await a.client.call_tool(SEARCH_TOOL, {"query": name, "k": 1})
                ok, payload = parse_tool_result(await a.client.call_tool(name, args))
                assert ok, payload
            task = next(t for t in worlds.tasks(rec.domain) if t.id == rec.task_id)
            from toolshift.models import covers

            assert covers(await a.diff(None), task.expected_changes)
            assert await b.diff(None) == []  # another session saw none of it

    asyncio.run(run())


def test_an_auto_mode_client_over_http_gets_a_session_of_its_own(build):
    """Clients that try the session-less era first are sent to the handshake: exposure is per session."""
    from mcp import Client

    out, eco, records, _ = build
    worlds = VersionWorlds(out)
    whole = EcosystemVersion(worlds, DOMAINS, 1)
    server = EcosystemServer(
        worlds, Served(eco.id, 1, "standard"), exposure_for("standard", version=whole), eco=whole
    )
    name = records[0].step.calls[0][0]

    async def run(url):
        async with Client(url) as a, Client(url) as b:
            await a.call_tool(SEARCH_TOOL, {"query": name, "k": 1})
            assert [t.name for t in (await a.list_tools()).tools] == [SEARCH_TOOL, name]
            assert [t.name for t in (await b.list_tools()).tools] == [SEARCH_TOOL]

    with http_server_thread(server) as url:
        asyncio.run(run(url))


def _what_happened(path):
    """Each episode as what its agent did and what came of it (no clocks: those differ by run)."""
    out = {}
    for ep in iter_episodes(path):
        calls = [(c.name, c.arguments) for m in ep.messages for c in m.tool_calls or []]
        texts = [m.content for m in ep.messages]
        out[ep.id] = (calls, texts, ep.outcome, ep.world_diff, ep.source.get("exposed_tools"))
    return out


def test_a_run_in_worker_processes_writes_the_same_episodes_as_one(build, tmp_path):
    out, _, _, _ = build
    one = run_baseline(out, "frozen-v1", tmp_path / "one", split=None, sample=3)
    two = run_baseline(out, "frozen-v1", tmp_path / "two", split=None, sample=3, workers=2)
    alone, shared = _what_happened(one), _what_happened(two)
    assert len(alone) == 3 * VERSIONS
    assert shared == alone
    again = run_baseline(out, "frozen-v1", tmp_path / "two", split=None, sample=3, workers=2)
    assert len(list(iter_episodes(again))) == len(alone)  # resumed: nothing run twice
    with pytest.raises(BadInputError, match="workers"):
        run_baseline(out, "frozen-v1", tmp_path / "three", split=None, workers=0)
