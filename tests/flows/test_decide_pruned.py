"""The decider indexes only the output paths its lookups bind from (D150): the same lookups as indexing all."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolshift.flows.decide import Decider, DecisionSession
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, TurnEvent, timelines
from toolshift.flows.values import decode_output, path_plan, string_paths, string_paths_within

keys = st.sampled_from(["a", "b", "a.b", "c[", "", "id", "x.y.z", "reservations"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)


@settings(deadline=None, max_examples=300)
@given(json_values, st.data())
def test_within_is_string_paths_restricted_to_the_wanted_paths(data, draw):
    every = string_paths(data)
    wanted = frozenset(draw.draw(st.sets(st.sampled_from([*every, "$.nope", "$.a.b", "$[*].a"]), max_size=5)))
    got = string_paths_within(data, path_plan(wanted))
    assert got == {p: v for p, v in every.items() if p in wanted}


def test_a_key_holding_a_dot_is_found_as_a_nested_path_would_be():
    data = {"a.b": ["x"], "a": {"b": ["y"]}}
    wanted = frozenset({"$.a.b[*]"})
    assert string_paths_within(data, path_plan(wanted)) == {"$.a.b[*]": ["x", "y"]}


class FullIndexSession(DecisionSession):
    """The decider before D150: every output decoded and every path indexed."""

    def _index(self, tool: str, output: Any) -> None:
        self.index.observe(tool, output, track_holders=False)

    def after_call(self, tool, arguments, output_text):  # type: ignore[no-untyped-def]
        effect = self.decider.effects.get(tool) or ("read" if tool in self.decider.flow.tools else "write")
        self.observe_call(tool, arguments, decode_output(output_text), effect=effect)
        return self.propose(tool)

    def after_lookup(self, lookup, output_text):  # type: ignore[no-untyped-def]
        self.observe_lookup(lookup, decode_output(output_text))
        return self.propose(lookup.tool, prior=lookup.model_score, depth=lookup.depth + 1)


@pytest.fixture
def airline(shared_data):
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    conv = convert_taubench_v1(shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json")
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    return catalog, timelines(conv.episodes, catalog)


@pytest.mark.shared
@pytest.mark.parametrize("walk_ranks", [0, 3])
@pytest.mark.parametrize("kind", ["reach", "next-step"])
def test_live_decisions_equal_the_full_index_on_real_airline_runs(airline, walk_ranks, kind):
    catalog, tl = airline
    flow = learn_flow(tl, catalog, learn_from_all=True, walk_ranks=walk_ranks)
    decider = Decider(flow, kind, 0.1, catalog)
    proposed = 0
    for t in tl:
        pruned, full, given = decider.session(), FullIndexSession(decider), decider.session()
        for event in t.events:
            if not isinstance(event, TurnEvent):
                continue
            for i in t.turns[event.turn]:
                c = t.calls[i]
                got = pruned.after_call(c.tool, c.arguments, c.output_text)
                assert got == full.after_call(c.tool, c.arguments, c.output_text)
                assert got == given.after_call_value(c.tool, c.arguments, decode_output(c.output_text))
                proposed += len(got)
                for lookup in got:  # a chain, fed the call's own output as the lookup's result
                    chained = pruned.after_lookup(lookup, c.output_text)
                    assert chained == full.after_lookup(lookup, c.output_text)
                    assert chained == given.after_lookup(lookup, c.output_text)
    assert proposed > 100


@pytest.mark.shared
@pytest.mark.parametrize("walk_ranks", [0, 3])
def test_replay_equals_the_full_index_on_real_airline_runs(airline, walk_ranks, monkeypatch):
    catalog, tl = airline
    flow = learn_flow(tl, catalog, learn_from_all=True, walk_ranks=walk_ranks)
    pruned = replay(tl, Decider(flow, "reach", 0.1, catalog))
    monkeypatch.setattr(DecisionSession, "_index", FullIndexSession._index)
    full = replay(tl, Decider(flow, "reach", 0.1, catalog))
    assert pruned == full and pruned.made > 0
