"""toolshift's side of the τ² mutation cases (tests/tau2_mutations.py): each played through the agent loop, judged by toolshift.

Each case is one episode of `toolshift.agents.loop.run_episode` on a fresh in-process τ² world over
in-memory MCP, with the imported task (`toolshift bench import`'s, judge `tau2-evaluator`): a scripted
agent (a measuring instrument) makes the case's calls one per turn and then says the case's closing
text; a scripted user opens and ends after that text. A `max_turns` case stops at the turn limit.
"""

from __future__ import annotations

import asyncio
from typing import Any

from toolshift.agents.chat import ModelReply, ProposedCall, ToolDef
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.users import UserTurn
from toolshift.agents.worlds import in_process
from toolshift.models import Task
from toolshift.traces.episode import Episode
from toolshift.world.tau2.tasks import import_tasks

OPENING = "Hello, I need help with my request."
MAX_STEPS = 200
"""The step limit the episodes are exported with (τ²'s Results record one)."""


class CaseAgent:
    """Makes the case's calls one per turn, whatever they return, then says its closing text."""

    name = "mutation-case"

    def __init__(self, calls: list[list[Any]], text: str) -> None:
        self.calls, self.text, self.next = calls, text, 0

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        if self.next < len(self.calls):
            name, arguments = self.calls[self.next]
            self.next += 1
            call = ProposedCall(id=f"call_{self.next - 1}", name=name, arguments=dict(arguments))
            return ModelReply(calls=[call], prompt_tokens=0, completion_tokens=0, cost=0.0)
        return ModelReply(text=self.text, prompt_tokens=0, completion_tokens=0, cost=0.0)


class CaseUser:
    """Opens the conversation, and ends it after the agent's first reply."""

    name = "mutation-user"

    async def opening(self) -> UserTurn:
        return UserTurn(OPENING)

    async def respond(self, agent_text: str) -> UserTurn:
        return UserTurn("Thank you, that is all.", ends=True)


def imported(domains: set[str]) -> dict[tuple[str, str], Task]:
    """The imported tasks of τ²'s domains (`airline`, `retail`), by (domain, task id)."""
    out = {}
    for domain in domains:
        for task in import_tasks(f"tau2-{domain}").tasks:
            out[(domain, task.id)] = task
    return out


async def _play(cases: list[dict[str, Any]], tasks: dict[tuple[str, str], Task]) -> dict[str, Episode]:
    openers = {d: in_process(f"tau2-{d}") for d in {c["domain"] for c in cases}}
    out = {}
    for case in cases:
        steps = len(case["calls"]) + (0 if case["termination"] == "max_turns" else 1)
        out[case["id"]] = await run_episode(
            tasks[(case["domain"], case["task_id"])],
            CaseAgent(case["calls"], case["text"]),
            CaseUser(),  # type: ignore[arg-type]
            openers[case["domain"]],
            episode_id=case["id"],
            limits=EpisodeLimits(max_turns=steps),
            source={"max_steps": MAX_STEPS, "mutation": case["kind"]},
        )
    return out


def play(cases: list[dict[str, Any]], tasks: dict[tuple[str, str], Task]) -> dict[str, Episode]:
    """Every case as a judged episode, by case id."""
    return asyncio.run(_play(cases, tasks))
