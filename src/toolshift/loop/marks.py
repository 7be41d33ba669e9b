"""The viewer's marks for what the loop changed in an episode: a plan Steward supplied, tools it supplied, and
the lookups the flows middleware served (and the calls a lookup answered).

Read from the episode alone: an agent-side episode of `toolshift loop` carries the gateway's per-call record
(`source.loop.gateway_calls`, copied from the recording when the episode ended); a gateway recording carries
it as `source.gateway.calls`, one per assistant message. The agent's calls are matched to the gateway's in
order by tool and arguments (a call the agent's toolbox refused never reached the gateway).
"""

from __future__ import annotations

import json
from typing import Any

STEWARD_TOOLS = ("steward_plan", "retrieve_tools", "explore_capabilities")


def gateway_calls(recording: Any) -> list[dict[str, Any]]:
    """The recording's calls with what the gateway did at each: tool, arguments, answered by, lookups made."""
    calls = recording.source.get("gateway", {}).get("calls", [])
    out = []
    assistant = [m for m in recording.messages if m.role == "assistant" and m.tool_calls]
    for m, info in zip(assistant, calls, strict=False):
        c = m.tool_calls[0]
        out.append({"tool": c.name, "arguments": c.arguments, "answered_by": info.get("answered_by"),
                    "lookups": [lk.get("tool") for lk in info.get("lookups", [])]})  # fmt: skip
    return out


def _key(name: str, arguments: Any) -> str:
    return name + json.dumps(arguments, sort_keys=True, default=str)


def loop_marks(episode: Any) -> dict[str, Any] | None:
    """{available, plan, followed, supplied: [message index, what], calls: [[message, call, lookups, answered]]},
    or None for an episode the loop did not record."""
    loop = episode.source.get("loop")
    if isinstance(loop, dict):
        record = loop.get("gateway_calls")
    elif "gateway" in episode.source:
        record = gateway_calls(episode)
    else:
        return None
    if not isinstance(record, list):
        return {"available": False, "reason": "no gateway record kept with this episode"}
    supplied: list[list[Any]] = []
    calls: list[list[Any]] = []
    k = 0
    for i, m in enumerate(episode.messages):
        if m.role == "tool" and m.name in STEWARD_TOOLS:
            try:
                body = json.loads(m.content or "")
            except json.JSONDecodeError:
                body = None
            if m.name == "steward_plan" and isinstance(body, dict) and body.get("plan"):
                supplied.append([i, f"Steward supplied a plan: {str(body['plan'])[:160]}"])
            elif isinstance(body, dict) and body.get("tools"):
                names_ = [t.get("name") for t in body["tools"] if isinstance(t, dict)]
                supplied.append(
                    [i, f"Steward supplied {len(names_)} tool(s): {', '.join(map(str, names_[:6]))}"]
                )
        if m.role != "assistant":
            continue
        for j, c in enumerate(m.tool_calls or []):
            if k < len(record) and _key(c.name, c.arguments) == _key(
                record[k]["tool"], record[k]["arguments"]
            ):
                r = record[k]
                if r.get("lookups") or r.get("answered_by") == "lookup":
                    calls.append([i, j, list(r.get("lookups") or []), r.get("answered_by") == "lookup"])
                k += 1
    plan = loop.get("plan") if isinstance(loop, dict) else None
    followed = loop.get("followed") if isinstance(loop, dict) else None
    return {"available": True, "plan": plan, "followed": followed, "supplied": supplied, "calls": calls}
