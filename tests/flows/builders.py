"""Hand-built episodes and catalogs for the flows tests."""

from __future__ import annotations

import json
from typing import Any

from toolshift.flows.timeline import Catalog
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

AIRLINE = Catalog(
    domain="mini-airline",
    effects={
        "get_user_details": "read",
        "get_reservation_details": "read",
        "list_all_airports": "read",
        "search_flights": "read",
        "price_hotels": "read",
        "list_hotels": "read",
        "search_tasks": "read",
        "cancel_reservation": "write",
        "toggle_airplane_mode": "write",
        "think": "neither",
    },
)


def call(tool: str, args: dict[str, Any] | None = None, output: Any = "") -> tuple[str, dict[str, Any], Any]:
    return (tool, args or {}, output)


def episode(eid: str, task: str, steps: list[tuple], *, success: bool = True, agent: str = "a") -> Episode:
    """Steps: ("user", text), ("reply", text), ("turn", [call(...), ...]), ("user_calls", [call(...)])."""
    messages = [Message(role="system", content="policy")]
    n = 0
    for step in steps:
        kind = step[0]
        if kind == "user":
            messages.append(Message(role="user", content=step[1]))
        elif kind == "reply":
            messages.append(Message(role="assistant", content=step[1]))
        elif kind in ("turn", "user_calls"):
            calls, results = [], []
            for tool, args, output in step[1]:
                n += 1
                cid = f"c{n}"
                requestor = "assistant" if kind == "turn" else "user"
                calls.append(ToolCall(id=cid, name=tool, arguments=args, requestor=requestor))
                text = output if isinstance(output, str) else json.dumps(output)
                results.append(
                    Message(role="tool", tool_call_id=cid, name=tool, content=text, requestor=requestor)
                )
            role = "assistant" if kind == "turn" else "user"
            messages.append(Message(role=role, tool_calls=calls))
            messages.extend(results)
        else:
            raise ValueError(kind)
    return Episode(id=eid, task_id=task, domain="mini-airline", agent=agent, messages=messages,
                   outcome=Outcome(success=success))  # fmt: skip


def user_walk(eid: str, task: str, user: str, reservations: list[str], *, success: bool = True,
              agent: str = "a") -> Episode:  # fmt: skip
    """The τ-bench walk: the user names themself, the agent reads the user, then each reservation."""
    steps: list[tuple] = [
        ("user", f"hi, I am {user}"),
        (
            "turn",
            [call("get_user_details", {"user_id": user}, {"user_id": user, "reservations": reservations})],
        ),
    ]
    for r in reservations:
        steps.append(("turn", [call("get_reservation_details", {"reservation_id": r},
                                    {"reservation_id": r, "origin": "JFK", "status": "ok"})]))  # fmt: skip
    steps.append(("reply", "here you are"))
    return episode(eid, task, steps, success=success, agent=agent)
