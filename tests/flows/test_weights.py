"""Learning from many agents: each agent's habits weighed, an agent's trials of one task counted as one (format 8)."""

from __future__ import annotations

import json

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import load_flow, save_flow
from toolshift.flows.timeline import timelines
from toolshift.flows.weights import episode_weights

from .builders import AIRLINE, call, episode, user_walk


def _reader(eid: str, task: str, agent: str) -> object:
    """An agent that reads the user and stops there (never walks the reservations)."""
    return episode(eid, task, [
        ("user", "hi"),
        ("turn", [call("get_user_details", {"user_id": "u1"}, {"user_id": "u1", "reservations": ["R1", "R2"]})]),
        ("reply", "ok"),
    ], agent=agent)  # fmt: skip


def _runs() -> list:
    # agent "walker" ran one task four times; agent "reader" ran two tasks once each
    walks = [user_walk(f"w{k}", "t1", "u1", ["R1", "R2"], agent="walker") for k in range(4)]
    return [*walks, _reader("r1", "t2", "reader"), _reader("r2", "t3", "reader")]


def test_weights_count_an_agents_trials_of_a_task_once_and_agents_alike() -> None:
    tl = timelines(_runs(), AIRLINE)
    assert set(episode_weights(tl, "episodes").values()) == {1}
    tasks = episode_weights(tl, "tasks")
    assert [tasks[f"w{k}"] for k in range(4)] == [0.25] * 4 and tasks["r1"] == tasks["r2"] == 1
    agents = episode_weights(tl, "agents")  # the walker has 1 task, the reader 2: mean 1.5
    assert sum(agents[f"w{k}"] for k in range(4)) == pytest.approx(1.5)
    assert agents["r1"] + agents["r2"] == pytest.approx(1.5)
    with pytest.raises(BadInputError, match="weighting"):
        episode_weights(tl, "people")  # type: ignore[arg-type]


def test_a_flow_weighs_the_agents_habits_and_names_them(tmp_path) -> None:
    tl = timelines(_runs(), AIRLINE)
    pooled = learn_flow(tl, AIRLINE)
    weighed = learn_flow(tl, AIRLINE, weighting="tasks")
    site = "get_user_details"
    # pooled, the walker's four trials outvote the reader: 4 of 6 episodes walked on from the user's record
    assert (pooled.sites[site].occurrences, pooled.sites[site].next["get_reservation_details"]) == (6, 4)
    # weighed, the walker's one task counts once: 1 of 3
    assert (weighed.sites[site].occurrences, weighed.sites[site].next["get_reservation_details"]) == (3, 1)
    assert pooled.format < 8 and weighed.format == 8
    shares = weighed.learned_from.by_agent
    assert {a: (s.episodes, s.tasks, s.weight) for a, s in shares.items()} == {
        "walker": (4, 1, 1),
        "reader": (2, 2, 2),
    }
    assert weighed.learned_from.agents == ["reader", "walker"] and weighed.learned_from.weighting == "tasks"
    path = save_flow(weighed, tmp_path / "w.json")
    assert load_flow(path, AIRLINE) == weighed
    assert "weighting" not in save_flow(pooled, tmp_path / "p.json").read_text()


def test_fractional_counts_need_format_8(tmp_path) -> None:
    tl = timelines(_runs(), AIRLINE)
    flow = learn_flow(tl, AIRLINE, weighting="agents")
    raw = json.loads(save_flow(flow, tmp_path / "a.json").read_text())
    assert raw["format"] == 8 and raw["sites"]["get_user_details"]["occurrences"] == 3
    assert raw["sites"]["<start>"]["occurrences"] == 3  # 4 × 0.375 + 2 × 0.75
    raw["format"] = 7
    (tmp_path / "b.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="format 8"):
        load_flow(tmp_path / "b.json")
    raw["learned_from"].pop("weighting")
    raw["learned_from"].pop("by_agent")
    raw["tools"]["get_reservation_details"]["bindings"]["reservation_id"]["agree"] = 1.5
    (tmp_path / "c.json").write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="format 8"):
        load_flow(tmp_path / "c.json")
    with pytest.raises(BadInputError, match="format 8"):
        learn_flow(tl, AIRLINE, weighting="tasks", flow_format=7)
