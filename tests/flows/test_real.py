"""Flows on the real published runs in ../shared/data: τ-bench airline (GPT-4o) and WorkBench."""

from __future__ import annotations

import pytest

from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay
from toolshift.flows.results import split
from toolshift.flows.timeline import Catalog, Excluded, timelines

pytestmark = pytest.mark.shared


@pytest.fixture
def airline(shared_data):
    from toolshift.traces.taubench import convert_taubench_v1

    path = shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json"
    conv = convert_taubench_v1(path)
    catalog = Catalog.of(conv.catalogs["taubench-v1-airline"])
    excluded = Excluded()
    tl = timelines(conv.episodes, catalog, excluded)
    return catalog, tl, excluded


def test_airline_learn_and_replay(airline):
    catalog, tl, excluded = airline
    assert len(tl) == 100 and excluded.episodes == 0
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
