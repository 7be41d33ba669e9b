"""The viewer's flow marks on τ-bench's real airline runs: saved turns, lookups, and calls the catalog lacks."""

from __future__ import annotations

import pytest

from toolshift.report.view.marks import FlowMarker
from toolshift.traces.episode import Message, ToolCall
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def marker_and_episodes(tau_runs):
    marker = FlowMarker(tau_runs / "flow.json", tau_runs / "taubench-v1-airline.catalog.json")
    return marker, list(iter_episodes(tau_runs / "taubench-v1-airline.episodes.jsonl"))


def test_marks_point_at_assistant_messages(marker_and_episodes):
    marker, episodes = marker_and_episodes
    marked = [marker.marks(e) for e in episodes]
    assert all(m["available"] for m in marked)
    assert sum(len(m["saved_messages"]) for m in marked) > 0  # the flow learned on them saves turns
    for episode, m in zip(episodes, marked, strict=True):
        assert set(m["saved_messages"]) <= set(m["ceiling_messages"])  # a saved turn is in the ceiling
        for index in m["saved_messages"] + m["ceiling_messages"]:
            assert episode.messages[index].role == "assistant"
        assert m["detours"] == sum(lookup["detour"] for lookup in m["lookups"])
        assert m["unlisted"] == {}


def test_a_call_to_a_tool_the_catalog_lacks_is_named_not_a_refusal(marker_and_episodes):
    marker, episodes = marker_and_episodes
    episode = next(e for e in episodes if marker.marks(e)["saved_messages"])
    call = ToolCall(id="made-up-1", name="book_a_unicorn", arguments={"colour": "pink"})
    extra = [
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", name="book_a_unicorn", tool_call_id="made-up-1", content="no such tool"),
    ]
    changed = episode.model_copy(update={"messages": [*episode.messages, *extra]})
    before, after = marker.marks(episode), marker.marks(changed)
    assert after["available"] and after["unlisted"] == {"book_a_unicorn": 1}
    assert after["saved_messages"] == before["saved_messages"]  # the made-up call changes no earlier mark


def test_an_episode_of_another_domain_has_no_marks(marker_and_episodes):
    marker, episodes = marker_and_episodes
    other = episodes[0].model_copy(update={"domain": "email"})
    assert marker.marks(other) == {
        "available": False,
        "reason": "the flow is for taubench-v1-airline, not email",
    }
