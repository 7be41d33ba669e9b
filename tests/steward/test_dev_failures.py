"""Failure kinds of held-out training episodes (`steward eval --dev`, D190), read from the episode alone."""

from __future__ import annotations

from toolshift.agents.users import END_CONVERSATION
from toolshift.steward.dev import failure_kind
from toolshift.traces.episode import Episode, Message, ToolCall


def _episode(calls: list[str], failure: str = "") -> Episode:
    messages = [Message(role="user", content="hi")]
    for k, name in enumerate(calls):
        messages.append(Message(role="assistant", tool_calls=[ToolCall(id=f"c{k}", name=name, arguments={})]))
        messages.append(Message(role="tool", tool_call_id=f"c{k}", content="{}"))
    return Episode(id="e", task_id="t", domain="d", messages=messages, source={"failure": failure})


def test_failure_kinds_from_calls_and_the_instruments_reason():
    ref = ["po_search", "po_approve"]
    assert failure_kind(_episode(ref), ref, strict=True, solved=True) == ""
    assert failure_kind(_episode(ref), ref, strict=False, solved=True) == "collateral write"
    assert failure_kind(_episode([], "no planning skill retrieved"), ref, False, False) == "no call"
    assert failure_kind(_episode(["po_search"], "call failed: no such order"), ref, False, False) == (
        "refused call"
    )
    assert failure_kind(_episode(["po_search"], "no result item matches"), ref, False, False) == (
        "binding error"
    )
    assert failure_kind(_episode(["po_search"]), ref, False, False) == "shorter run"
    assert failure_kind(_episode(["po_search", "po_cancel"]), ref, False, False) == "other tools"
    assert failure_kind(_episode(ref), ref, False, False) == "other arguments"
    # the instrument's closing call is no tool of the task's
    assert failure_kind(_episode([*ref, END_CONVERSATION]), ref, False, False) == "other arguments"
    assert failure_kind(_episode(["po_search", END_CONVERSATION]), ref, False, False) == "shorter run"
