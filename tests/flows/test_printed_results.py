"""Values inside text results: read as the catalog says the tools print them, they are in the ceiling and bind."""

from __future__ import annotations

import json
from dataclasses import replace

from toolshift.flows.ceiling import anatomy
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import parse_flow, save_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import timelines

from .builders import AIRLINE, call, episode

NAMES = ["Le Marais Boutique", "Good Night", "Luxury Palace"]
LISTING = "Hotel Names: " + "\n".join(NAMES) + "\n"
PRICES = "{" + ", ".join(f"'{n}': 'Price range: {100 + i}.0'" for i, n in enumerate(NAMES)) + "}"


def _travel(eid: str, task: str) -> object:
    return episode(eid, task, [
        ("user", "a hotel in Paris please"),
        ("turn", [call("list_hotels", {"city": "Paris"}, LISTING)]),
        ("turn", [call("price_hotels", {"hotel_names": NAMES}, PRICES)]),
        ("reply", "Good Night it is"),
    ])  # fmt: skip


def test_a_list_argument_drawn_from_a_text_listing_is_in_the_ceiling_and_bound(tmp_path) -> None:
    episodes = [_travel(f"e{i}", f"t{i}") for i in range(4)]
    printed = replace(AIRLINE, results="yaml")
    as_json = anatomy(timelines(episodes, AIRLINE))[0]
    as_printed = anatomy(timelines(episodes, printed))[0]
    assert (as_json.ceiling, as_printed.ceiling) == (0, 4)

    flow = learn_flow(timelines(episodes[:3], printed), printed)
    binding = flow.tools["price_hotels"].lists["hotel_names"]
    assert (binding.source, binding.path, binding.agree, binding.n) == (
        "list_hotels",
        "$.Hotel Names[*]",
        3,
        3,
    )
    assert flow.results == "yaml"
    result = replay(timelines(episodes[3:], printed), Decider(flow, "reach", 0.3))
    assert (result.saved, result.detours) == (1, 0)
    # the flow file says how its results are read, so a live decider reads them the same way
    again = parse_flow(json.loads(save_flow(flow, tmp_path / "f.json").read_text()))
    assert again.results == "yaml"
    session = Decider(again, "reach", 0.3).session()
    made = session.after_call("list_hotels", {"city": "Paris"}, LISTING)
    assert [(lk.tool, lk.arguments) for lk in made] == [("price_hotels", {"hotel_names": NAMES})]


def test_a_json_flow_file_is_unchanged(tmp_path) -> None:
    episodes = [_travel(f"e{i}", f"t{i}") for i in range(2)]
    flow = learn_flow(timelines(episodes, AIRLINE), AIRLINE)
    assert "results" not in save_flow(flow, tmp_path / "f.json").read_text()
