"""Flows on the real published runs in ../shared/data: τ-bench airline (GPT-4o) and WorkBench."""

from __future__ import annotations

import json

import pytest

from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay
from toolshift.flows.results import split
from toolshift.flows.timeline import Catalog, Unlisted, timelines
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.shared


@pytest.fixture
def airline(shared_data):
    from toolshift.traces.taubench import convert_taubench_v1

    path = shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    conv = convert_taubench_v1(path)
    catalog = Catalog.of(conv.catalogs["taubench-v1-airline"])
    unlisted = Unlisted()
    tl = timelines(conv.episodes, catalog, unlisted)
    return catalog, tl, unlisted


def test_airline_learn_and_replay(airline):
    catalog, tl, unlisted = airline
    assert len(tl) == 100 and unlisted.episodes == 0
    sp = split(tl)
    assert (len(sp.train), len(sp.test)) == (60, 40)
    flow = learn_flow(sp.train, catalog)
    assert flow.format == 1 and flow.learned_from.successful_only
    b = flow.tools["get_reservation_details"].bindings["reservation_id"]
    assert (b.source, b.path) == ("get_user_details", "$.reservations[*]") and b.chance > 0.9
    total, per_episode = anatomy(sp.test)
    assert total.turns > 400 and 0.05 < total.share("ceiling") < 0.4
    for kind in DECIDERS:
        result = replay(sp.test, Decider(flow, kind, 0.3, catalog))
        assert 0 < result.saved <= total.ceiling
        for e in result.episodes:
            assert len(e.saved_turns) <= per_episode[e.episode].ceiling
        assert result.used + result.detours == result.made


def test_workbench_never_makes_a_narrowed_search_bare(shared_data):
    from toolshift.traces.workbench import convert_workbench

    conv = convert_workbench(shared_data / "workbench" / "results")
    by_domain: dict[str, list] = {}
    for e in conv.episodes:
        by_domain.setdefault(e.domain, []).append(e)
    narrowed_anywhere = 0
    for domain, eps in by_domain.items():
        catalog = Catalog.of(conv.catalogs[domain])
        sp = split(timelines(eps, catalog))
        flow = learn_flow(sp.train, catalog, learn_from_all=True)
        narrowed = {n for n, t in flow.tools.items() if t.bare is not None and t.bare.bare == 0}
        narrowed_anywhere += len(narrowed)
        result = replay(sp.test, Decider(flow, "reach", 0.1), weigh_all=True)
        assert not [r for r in result.log if r.made and r.tool in narrowed and not r.arguments], domain
    assert narrowed_anywhere >= 3


def test_a_flow_from_one_agents_workbench_runs_replays_another_agents_runs(shared_data, tmp_path):
    """GPT-4's converted analytics runs teach a flow; Claude-2's, converted on their own, replay it.

    Each conversion's catalog lists the made-up tools its own agent called (Claude-2's lists five that
    GPT-4's lacks); the flow's catalog identity is the domain's 27 real tools, and made-up calls are
    neither reads nor writes, so every Claude-2 episode is replayed, with either catalog.
    """
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.traces.catalog import load_catalog

    runner = CliRunner()
    results = shared_data / "workbench" / "results" / "analytics"
    for agent in ("gpt-4", "claude-2"):
        files = sorted(str(p) for p in results.glob(f"{agent}_*.csv"))
        done = runner.invoke(app, ["traces", "convert", "workbench", *files, "--out", str(tmp_path / agent)])
        assert done.exit_code == 0, done.output
    gpt, claude = tmp_path / "gpt-4", tmp_path / "claude-2"
    made_up = {t.name for t in load_catalog(claude / "analytics.catalog.json").tools if not t.exists}
    assert made_up and not [t for t in load_catalog(gpt / "analytics.catalog.json").tools if not t.exists]
    flow = tmp_path / "flow.json"
    learned = runner.invoke(app, ["flows", "learn", str(gpt / "analytics.episodes.jsonl"), "--catalog",
                                  str(gpt / "analytics.catalog.json"), "--out", str(flow), "--learn-from-all"])  # fmt: skip
    assert learned.exit_code == 0, learned.output
    claude_episodes = sum(1 for _ in iter_episodes(claude / "analytics.episodes.jsonl"))
    for catalog in (claude / "analytics.catalog.json", gpt / "analytics.catalog.json"):
        replayed = runner.invoke(app, ["flows", "replay", str(claude / "analytics.episodes.jsonl"), "--catalog",
                                       str(catalog), "--flow", str(flow), "--json-out", str(tmp_path / "r.json")])  # fmt: skip
        assert replayed.exit_code == 0, replayed.output
        summary = json.loads((tmp_path / "r.json").read_text())
        assert {k: s["episodes"] for k, s in summary.items() if k != "ceiling"} == {
            "reach": claude_episodes,
            "next-step": claude_episodes,
        }
    assert "counted as neither" in replayed.output and "excluded" not in replayed.output
