"""Hand-built episodes for the report and viewer tests."""

from __future__ import annotations

import json

from toolshift.traces.episode import Episode, Message, Outcome, ToolCall


def make_episode(
    k: int, *, agent: str = "a", success: bool | None = True, version: str | None = None
) -> Episode:
    messages = [
        Message(role="user", content=f"request {k} with ünïcode"),
        Message(role="assistant", tool_calls=[ToolCall(id="1", name="get_thing", arguments={"id": k})]),
        Message(role="tool", name="get_thing", tool_call_id="1", content=json.dumps({"id": k})),
        Message(role="assistant", content="done"),
    ]
    return Episode(id=f"ep-{k}", task_id=f"task-{k % 7}", trial=k % 2, domain="d" if k % 3 else "e", agent=agent,
                   model=f"m-{agent}", ecosystem_version=version, messages=messages,
                   outcome=Outcome(success=success))  # fmt: skip
