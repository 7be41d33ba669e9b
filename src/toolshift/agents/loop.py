"""The agent loop: one episode of an agent model, a user simulator and a world reached over MCP or directly.

The agent lists the world's tools and calls them through an MCP client session, or, for a world in this
process, through a `DirectToolbox` that gives the same listing, texts and errors (D149); its text goes to the
user simulator; the episode ends when either side ends it, at the turn limit, on a timeout or on an
error, and the reason is recorded. The world diff since the session began judges success.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from toolshift.agents.chat import ChatModel, ModelConfigError, ToolDef
from toolshift.agents.conversation import Conversation, _now
from toolshift.agents.outside import owns_loop
from toolshift.agents.skills import SkillShelf
from toolshift.agents.toolbox import McpToolbox
from toolshift.agents.users import END_CONVERSATION, END_TOOL, UserSimulator, UserSimulatorError
from toolshift.agents.worlds import toolbox_for
from toolshift.models import RowChange, Task
from toolshift.provenance import code_revision
from toolshift.traces.episode import Episode, Outcome

TERMINATIONS = (
    "agent_stop",
    "user_stop",
    "max_turns",
    "timeout",
    "agent_error",
    "user_error",
    "world_error",
)
"""Why an episode ended. `timeout` carries `outcome.info["timeout"]`: episode, model_call or user_call."""

TASK_META = "toolshift/task"
"""The request `_meta` key naming the episode's task on every call (the gateway's `TASK_META_KEY`)."""


class WorldSession(Protocol):
    """One episode's private view of a world: an entered MCP client plus the diff since it opened.

    `client` None means an in-process world called directly: the session then carries it as `world`.

    A session may also carry `served`: what the server declared it serves (an ecosystem version and
    setting, `toolshift.bench`'s experimental capability `toolshift/ecosystem`), recorded in the episode.
    """

    client: Any
    policy: str
    title: str

    async def diff(self, reported: list[RowChange] | None) -> list[RowChange] | None:
        """The episode's net changes. `reported`: what the world reported per call, None if incomplete."""
        ...


WorldOpener = Callable[..., AbstractAsyncContextManager[WorldSession]]
"""Opens an episode's world: `opener()`, or `opener(task)` when it has `per_task = True` (each task its own world)."""


def open_for(open_world: WorldOpener, task: Task) -> AbstractAsyncContextManager[WorldSession]:
    return open_world(task) if getattr(open_world, "per_task", False) else open_world()


@dataclass(frozen=True)
class EpisodeLimits:
    """Turn limit and hard timeouts (seconds). A turn is one agent model call."""

    max_turns: int = 30
    model_timeout: float = 120.0
    tool_timeout: float = 30.0
    user_timeout: float = 120.0
    episode_timeout: float = 900.0
    result_chars: int = 2000
    """Tool results are cut to this many characters before the model reads them."""
    agent_can_end: bool = True
    """Offer the agent the harness tool `end_conversation` (it never reaches the world)."""


def system_prompt(title: str, policy: str) -> str:
    return (
        f"You are a customer-service agent for {title}. Help the user with their request by calling the tools "
        "you are given; ask the user for any information you need. Follow the policy below.\n\n"
        f"# Policy\n{policy.strip() or '(no policy)'}\n\n"
        "Tell the user when their request is done. "
        f"Call {END_CONVERSATION} only when the conversation is over."
    )


async def _converse(
    conv: Conversation,
    agent: ChatModel,
    user: UserSimulator,
    toolbox: McpToolbox,
    limits: EpisodeLimits,
    arrivals: dict[str, int] | None = None,
) -> None:
    """`arrivals`: tools first offered at a later user turn (tool name → 0-based turn), as BFCL's miss-func
    category holds functions out until its holdout turn; until then the agent is not shown them."""
    tools = await toolbox.list_tools()
    every = [*tools, END_TOOL] if limits.agent_can_end else tools

    def offered_now() -> list[ToolDef]:
        if not arrivals:
            return every
        turn = sum(1 for m in conv.wire if m.get("role") == "user") - 1
        return [t for t in every if arrivals.get(t.name, 0) <= turn]

    try:
        conv.user(await asyncio.wait_for(user.opening(), limits.user_timeout))
    except (TimeoutError, UserSimulatorError) as exc:
        conv.reason, conv.info["user_failure"] = "user_error", str(exc) or "opening timed out"
        return
    while True:
        if conv.turns >= limits.max_turns:
            conv.reason = "max_turns"
            return
        conv.turns += 1
        try:
            reply = await asyncio.wait_for(agent.complete(conv.wire, offered_now()), limits.model_timeout)
        except TimeoutError:
            conv.reason, conv.info["timeout"] = "timeout", "model_call"
            return
        except ModelConfigError:
            raise
        except Exception as exc:  # a model or policy failure after its own retries: charged to the agent
            conv.reason, conv.info["agent_failure"] = "agent_error", f"{type(exc).__name__}: {exc}"
            return
        conv.assistant(reply)
        ended = False
        for call in reply.calls:
            if call.name == END_CONVERSATION and limits.agent_can_end:
                ended = True
                continue
            conv.tool(call, await toolbox.call(call), limits.result_chars)
        if ended:
            conv.reason = "agent_stop"
            return
        if toolbox.stale:  # a call exposed new tools (a tool search): offer them from the next turn
            tools = await toolbox.list_tools()
            every = [*tools, END_TOOL] if limits.agent_can_end else tools
        if reply.calls:
            continue
        try:
            answer = await asyncio.wait_for(user.respond(reply.text or ""), limits.user_timeout)
        except TimeoutError:
            conv.reason, conv.info["timeout"] = "user_error", "user_call"
            conv.info["user_failure"] = f"user simulator timed out after {limits.user_timeout:g} s"
            return
        except UserSimulatorError as exc:
            conv.reason, conv.info["user_failure"] = "user_error", str(exc)
            return
        conv.user(answer)
        if answer.ends:
            conv.reason = "user_stop"
            return


async def run_episode(
    task: Task,
    agent: ChatModel,
    user: UserSimulator,
    open_world: WorldOpener,
    *,
    episode_id: str,
    trial: int = 0,
    limits: EpisodeLimits | None = None,
    agent_name: str | None = None,
    harness: str = "toolshift.agents/1",
    source: dict[str, Any] | None = None,
    skills: SkillShelf | None = None,
) -> Episode:
    """Run one episode to its end and return it judged: success = Δgold ⊆ Δagent. `skills`: Agent Skills offered
    by name and description and opened through `read_skill` (`toolshift.agents.skills`), recorded in `source.skills`."""
    limits = limits or EpisodeLimits()
    shelf = skills.session() if skills is not None else None
    conv = Conversation()
    started, clock = _now(), time.perf_counter()
    diff: list[RowChange] | None = None
    config_error: ModelConfigError | None = None
    served: dict[str, Any] | None = None
    exposed: list[str] | None = None
    judged: Outcome | None = None
    try:
        async with open_for(open_world, task) as world:
            served = getattr(world, "served", None)
            # A task judged by its own benchmark gets that benchmark's harness: arguments go to the world as written.
            toolbox = toolbox_for(world, tool_timeout=limits.tool_timeout, check_schemas=task.judge is None)
            toolbox.meta = {TASK_META: task.id}  # a gateway in between records whose calls these are
            prompt = system_prompt(world.title, world.policy)
            native = owns_loop(agent) and getattr(agent, "native_skills", False)
            if shelf is not None and shelf.shelf.skills and not native:
                toolbox, prompt = shelf.wrap(toolbox), f"{prompt}\n\n{shelf.shelf.section()}"  # type: ignore[assignment]
            elif shelf is not None and native:  # the harness reads them from its own skills folder
                agent.skills = list(shelf.shelf.skills.values())
            conv.system(prompt)
            try:
                async with asyncio.timeout(limits.episode_timeout):
                    arrivals = {name: i for i, turn in enumerate(task.turns) for name in turn.new_tools}
                    if owns_loop(agent):  # an agent that owns its loop: hosted behind the episode's MCP door
                        from toolshift.agents.hosted import host_conversation

                        await host_conversation(
                            conv, agent, user, toolbox, limits, arrivals,
                            task=task, episode_id=episode_id, title=world.title, policy=world.policy,
                        )  # fmt: skip
                    else:
                        await _converse(conv, agent, user, toolbox, limits, arrivals)
            except TimeoutError:
                conv.reason, conv.info["timeout"] = "timeout", "episode"
            except ModelConfigError as exc:  # kept out of the MCP client's task group, raised below
                config_error = exc
            exposed = list(toolbox.listed)
            diff = await world.diff(None if toolbox.unreported else toolbox.reported)
            if task.judge is not None and conv.reason not in ("user_error", "world_error"):
                judged = _judge_external(task, conv, world, user, diff)
    except Exception as exc:  # the world could not be opened, listed or diffed: the harness's failure
        leaf = leaf_error(exc)
        conv.reason = "world_error"
        conv.info["world_failure"] = f"{type(leaf).__name__}: {leaf}"
    if config_error is not None:
        raise config_error
    recorded = dict(source or {})
    recorded.setdefault("code", code_revision())  # which commit made it (resumed files span several)
    if exposed is not None:  # the tools whose definitions the agent was given (tool retrieval's exposed set)
        recorded["exposed_tools"] = exposed
    if shelf is not None:
        recorded["skills"] = shelf.record()
        if owns_loop(agent) and getattr(agent, "native_skills", False):
            recorded["skills"]["opened"] = None  # a harness opens its own folder's files: not seen from here
            recorded["skills"]["native"] = True
    if served:
        recorded["setting"] = served.get("setting")
        if served.get("task") is not None:
            recorded["served_task"] = served["task"]
    episode = _judge(
        task,
        conv,
        diff,
        episode_id,
        trial,
        agent,
        user,
        agent_name,
        harness,
        recorded,
        started,
        clock,
        judged,
    )
    if served and served.get("ecosystem_version"):
        episode.ecosystem_version = str(served["ecosystem_version"])
    return episode


def _judge_external(
    task: Task, conv: Conversation, world: Any, user: UserSimulator, diff: list[RowChange] | None
) -> Outcome:
    """The task's own benchmark's check (BFCL, AgentDojo, τ²-bench's reward) instead of Δgold ⊆ Δagent."""
    from toolshift.agents.external_judge import external_outcome

    base = {
        "turns": conv.turns,
        "tool_calls": conv.tool_calls,
        "failed_calls": conv.failed_calls,
        "user": user.name,
    }
    return external_outcome(
        task, conv.messages, world, {**conv.info, **base}, termination=conv.reason, diff=diff
    )


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as task groups wrap them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _judge(
    task: Task,
    conv: Conversation,
    diff: list[RowChange] | None,
    episode_id: str,
    trial: int,
    agent: ChatModel,
    user: UserSimulator,
    agent_name: str | None,
    harness: str,
    source: dict[str, Any] | None,
    started: str,
    clock: float,
    judged: Outcome | None = None,
) -> Episode:
    info: dict[str, Any] = {
        **conv.info,
        "turns": conv.turns,
        "tool_calls": conv.tool_calls,
        "failed_calls": conv.failed_calls,
        "user": user.name,
    }
    if judged is not None:
        if diff is not None:
            verdict = task.verdict(diff)
            judged.info.update(verdict.info())
            judged.info["changes_made"] = len(diff)
            judged.info["delta_cover"] = verdict.success
            # strict: the benchmark's own success, and no write outside the renamed Δgold
            judged.info["strict_success"] = bool(judged.success) and not verdict.collateral
        outcome = judged
    elif conv.reason in ("user_error", "world_error") or diff is None:
        info["charged_to"] = "user" if conv.reason == "user_error" else "harness"
        outcome = Outcome(reward=None, success=None, judged_by="delta-cover", info=info)
    else:
        verdict = task.verdict(diff)
        info.update(verdict.info())
        info["changes_made"] = len(diff)
        outcome = Outcome(
            reward=float(verdict.success), success=verdict.success, judged_by="delta-cover", info=info
        )
    return Episode(
        id=episode_id,
        task_id=task.id,
        trial=trial,
        domain=task.domain,
        agent=agent_name or agent.name,
        model=getattr(agent, "model_name", None) or agent.name,
        harness=(getattr(agent, "harness", None) or harness) if owns_loop(agent) else harness,
        messages=conv.messages,
        termination_reason=conv.reason,
        outcome=outcome,
        world_diff=diff,
        start_time=started,
        end_time=_now(),
        duration=round(time.perf_counter() - clock, 4),
        agent_cost=conv.agent_cost,
        user_cost=conv.user_cost,
        source={"task_fingerprint": task.fingerprint(), **(source or {})},
    )


class EpisodeHung(Exception):
    """An episode's own event loop stopped answering (a blocking tool or model): it is abandoned."""


async def run_isolated(make: Callable[[], Any], *, deadline: float) -> Any:
    """Run the coroutine `make()` on its own event loop in a daemon thread and wait at most `deadline` s.

    In-process worlds run tool handlers on the episode's loop, where a handler that blocks can only be
    timed out once it returns. Isolating each episode keeps the run's loop free: a hung episode is
    abandoned (its thread left to finish or die with the process) and the run goes on.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            if ok:
                done.set_result(value)
            else:
                done.set_exception(value)

    def hand_over(ok: bool, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the waiting loop is gone: the episode was abandoned
            loop.call_soon_threadsafe(settle, ok, value)

    def work() -> None:
        try:
            result = asyncio.run(make())
        except BaseException as exc:  # handed to the waiting loop, raised there
            hand_over(False, exc)
        else:
            hand_over(True, result)

    import threading

    threading.Thread(target=work, name="toolshift-episode", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(done), deadline)
    except TimeoutError:
        raise EpisodeHung(f"the episode did not finish within {deadline:g} s") from None


def hung_episode(
    task: Task, *, episode_id: str, trial: int, agent_name: str, reason: str, seconds: float
) -> Episode:
    """The record of an abandoned episode: a timeout not charged to the agent (its world or model blocked)."""
    now = _now()
    return Episode(
        id=episode_id,
        task_id=task.id,
        trial=trial,
        domain=task.domain,
        agent=agent_name,
        model=agent_name,
        harness="toolshift.agents/1",
        termination_reason="timeout",
        outcome=Outcome(
            success=None,
            judged_by="delta-cover",
            info={"timeout": "episode", "hung": reason, "charged_to": "harness", "turns": 0, "tool_calls": 0},
        ),
        start_time=now,
        end_time=now,
        duration=round(seconds, 4),
        source={"task_fingerprint": task.fingerprint()},
    )
