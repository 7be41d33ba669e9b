"""The loop of an agent that owns its own: the user's turns to it, its replies to the user, its calls recorded.

Where toolshift's own loop (`toolshift.agents.loop._converse`) asks a model for one step at a time, here the
agent runs its tool loop itself: it is given the episode's MCP door (`toolshift.agents.door`), sent the simulated
user's messages one at a time, and answers each with a reply once it has made what calls it wanted. Every call
reaches the world through the episode's toolbox — the same listing, schema checks, results and change reports
toolshift's agent gets — and is recorded as it is answered; the replies go to the same user simulator, and the
episode is judged on the same world diff. So an outside agent's episode is an ordinary episode.

The turn limit bounds the agent's tool calls: past `max_turns` of them the door refuses further calls, and the
episode ends with `max_turns` once the agent's turn returns. A harness whose model toolshift serves is also held to
`max_turns` model calls there (`toolshift.modelserver`), so its own tools cannot run it past the limit either.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from toolshift.agents.chat import ModelConfigError, ProposedCall, ToolDef
from toolshift.agents.conversation import Conversation
from toolshift.agents.door import EpisodeDoor, opened
from toolshift.agents.outside import EpisodeContext, as_turn
from toolshift.agents.toolbox import McpToolbox, ToolOutcome
from toolshift.agents.users import END_CONVERSATION, END_TOOL, UserSimulator, UserSimulatorError
from toolshift.models import Task

LIMIT_TEXT = "error: this episode's turn limit is reached: no more tool calls; reply to the user"


class _Desk:
    """The episode's side of the door: the tools on offer now, and each call answered and recorded."""

    def __init__(
        self, conv: Conversation, toolbox: McpToolbox, limits: Any, arrivals: dict[str, int] | None
    ) -> None:
        self.conv, self.toolbox, self.limits, self.arrivals = conv, toolbox, limits, arrivals or {}
        self.tools: list[ToolDef] = []
        self.ended = False
        self.refused = 0
        """Calls refused because the turn limit was reached."""
        self.seconds = 0.0
        """Time spent answering the agent's calls (the world's work and toolshift's, waiting included)."""
        self._lock = asyncio.Lock()

    async def listing(self) -> list[ToolDef]:
        async with self._lock:
            if not self.tools or self.toolbox.stale:
                self.tools = await self.toolbox.list_tools()
            every = [*self.tools, END_TOOL] if self.limits.agent_can_end else list(self.tools)
            turn = self._user_turn()
            return [t for t in every if self.arrivals.get(t.name, 0) <= turn]

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[ToolOutcome, bool]:
        clock = time.perf_counter()
        try:
            return await self._call(name, arguments)
        finally:
            self.seconds += time.perf_counter() - clock

    async def _call(self, name: str, arguments: dict[str, Any]) -> tuple[ToolOutcome, bool]:
        async with self._lock:
            call = ProposedCall(id=f"call_{uuid.uuid4().hex[:16]}", name=name, arguments=arguments)
            self.conv.agent_call(call)
            if name == END_CONVERSATION and self.limits.agent_can_end:
                self.ended = True
                return ToolOutcome("ok: the conversation is over; say goodbye if you like", False), False
            if self.conv.tool_calls >= self.limits.max_turns:
                self.refused += 1
                outcome = ToolOutcome(LIMIT_TEXT, True, "turn_limit")
            elif (
                self.arrivals.get(name, 0) > self._user_turn()
            ):  # not offered yet (BFCL's held-out functions)
                outcome = ToolOutcome(f"error: unknown tool {name!r}", True, "unknown_tool")
            else:
                outcome = await self.toolbox.call(call)
            self.conv.tool(call, outcome, self.limits.result_chars)
            return outcome, self.toolbox.stale

    def _user_turn(self) -> int:
        return sum(1 for m in self.conv.messages if m.role == "user") - 1

    async def in_process(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        outcome, _ = await self.call(name, arguments)
        return outcome.text, outcome.error


async def host_conversation(
    conv: Conversation,
    agent: Any,
    user: UserSimulator,
    toolbox: McpToolbox,
    limits: Any,
    arrivals: dict[str, int] | None,
    *,
    task: Task,
    episode_id: str,
    title: str,
    policy: str,
) -> None:
    """Run the conversation between the user simulator and an outside agent; the reason it ended goes in `conv`."""
    desk = _Desk(conv, toolbox, limits, arrivals)
    instructions = conv.messages[0].content if conv.messages and conv.messages[0].role == "system" else policy
    door = EpisodeDoor(title, instructions or "", desk.listing, desk.call)
    workdir = Path(tempfile.mkdtemp(prefix="toolshift-episode-"))
    model_calls = 0
    try:
        async with opened(door) as url:
            context = EpisodeContext(
                episode_id=episode_id, task_id=task.id, mcp_url=url, tools=await desk.listing(), title=title,
                policy=policy, workdir=workdir, max_turns=limits.max_turns, call_tool=desk.in_process,
                list_tools=desk.listing, extra={"instructions": instructions},
            )  # fmt: skip
            start = getattr(agent, "start", None)
            try:
                if callable(start):
                    await start(context)
            except ModelConfigError:
                raise
            except Exception as exc:  # the agent could not start (its SDK, its model server): charged to it
                conv.reason = "agent_error"
                conv.info["agent_failure"] = f"could not start: {type(exc).__name__}: {exc}"[:2000]
                with contextlib.suppress(Exception):
                    close = getattr(agent, "close", None)
                    if callable(close):
                        await close()
                return
            try:
                try:
                    opening = await asyncio.wait_for(user.opening(), limits.user_timeout)
                except (TimeoutError, UserSimulatorError) as exc:
                    conv.reason, conv.info["user_failure"] = "user_error", str(exc) or "opening timed out"
                    return
                conv.user(opening)
                message = opening.text
                while True:
                    clock = time.perf_counter()
                    try:
                        turn = as_turn(await agent.turn(message))
                    except Exception as exc:  # the agent (its process, its SDK) failed: charged to the agent
                        conv.reason = "agent_error"
                        conv.info["agent_failure"] = f"{type(exc).__name__}: {exc}"[:2000]
                        return
                    model_calls += turn.model_calls or 0
                    turn.info.setdefault("turn_seconds", round(time.perf_counter() - clock, 4))
                    conv.agent_reply(turn, time.perf_counter() - clock)
                    # a turn is a model call where the agent reports them, else an action (a call or a reply)
                    conv.turns = model_calls or conv.tool_calls + sum(
                        1 for m in conv.messages if _is_reply(m)
                    )
                    if turn.info:
                        conv.info.setdefault("agent_turns", []).append(turn.info)
                    if desk.ended or turn.ended:
                        conv.reason = "agent_stop"
                        return
                    if desk.refused or (turn.info.get("model_budget_reached")):
                        conv.reason = "max_turns"
                        return
                    try:
                        answer = await asyncio.wait_for(user.respond(turn.text), limits.user_timeout)
                    except TimeoutError:
                        conv.reason, conv.info["timeout"] = "user_error", "user_call"
                        conv.info["user_failure"] = (
                            f"user simulator timed out after {limits.user_timeout:g} s"
                        )
                        return
                    except UserSimulatorError as exc:
                        conv.reason, conv.info["user_failure"] = "user_error", str(exc)
                        return
                    conv.user(answer)
                    if answer.ends:
                        conv.reason = "user_stop"
                        return
                    message = answer.text
            finally:
                close = getattr(agent, "close", None)
                if callable(
                    close
                ):  # in this task: an SDK's cancel scopes entered in `start` must be left here
                    with contextlib.suppress(Exception):
                        await close()
                if model_calls:
                    conv.turns = model_calls
                conv.info["door_seconds"] = round(desk.seconds, 4)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _is_reply(message: Any) -> bool:
    return message.role == "assistant" and not message.tool_calls
