"""Episodes of other benchmarks' tasks judged by those benchmarks' own checks (BFCL, AgentDojo, τ²-bench)."""

from __future__ import annotations

from typing import Any

from toolshift.agents.users import END_CONVERSATION
from toolshift.models import RowChange, Task
from toolshift.traces.episode import Message, Outcome


def transcript(messages: list[Message]) -> Any:
    """The episode as the benchmark's check reads it: calls by user turn and step, and the last answer.

    A step with a malformed call (a converted run's unreadable arguments) is left out whole, as BFCL's eval
    runner leaves out a step it cannot decode; its harness ran none of it."""
    from toolshift.world.external import Transcript

    turns: list[list[list[tuple[str, Any]]]] = []
    calls: list[tuple[str, Any]] = []
    final = ""
    for m in messages:
        if m.role == "user":
            if not any(c.name == END_CONVERSATION for c in m.tool_calls or []):
                turns.append([])  # a user turn; the user's closing message ends the conversation instead
        elif m.role == "assistant":
            final = m.content or ""
            mine = [
                c for c in m.tool_calls or [] if c.name != END_CONVERSATION and c.requestor == "assistant"
            ]
            if any(c.malformed for c in mine):
                continue  # a step holding a call that is not a call: BFCL's eval skips it undecoded, nothing ran
            step = [(c.name, c.arguments) for c in mine]
            if step:
                if not turns:
                    turns.append([])
                turns[-1].append(step)
                calls += step
    return Transcript(turns=turns, calls=calls, final_text=final)


def tau2_outcome(
    task: Task,
    messages: list[Message],
    termination: str | None,
    base: dict[str, Any],
    *,
    world: Any = None,
    diff: list[RowChange] | None = None,
) -> Outcome:
    """τ²-bench's reward (`toolshift.world.tau2.evaluator`) as an `Outcome` judged by `tau2-reward`.

    Every tool call of the conversation counts (the agent's and the user's, refused ones too), but not the
    harness's `end_conversation`; `world` / `diff` are the episode's own world and net changes, else
    the calls are replayed on a fresh world.
    """
    from toolshift.world.tau2.evaluator import JUDGED_BY, Call, evaluate

    calls = [
        Call(c.name, dict(c.arguments), c.requestor or m.role)
        for m in messages
        if m.role in ("assistant", "user")
        for c in m.tool_calls or []
        if c.name != END_CONVERSATION
    ]
    texts = [m.content for m in messages if m.role == "assistant" and m.content]
    reward_info = evaluate(task, calls, texts, termination, world=world, diff=diff)
    reward = float(reward_info["reward"])
    info: dict[str, Any] = {**base, "reward_info": reward_info}
    unjudged = (reward_info.get("info") or {}).get("unjudged")
    if unjudged:
        info["unjudged"] = sorted(unjudged)
    return Outcome(reward=reward, success=reward == 1.0, judged_by=JUDGED_BY, info=info)


def external_outcome(
    task: Task,
    messages: list[Message],
    session: Any,
    base: dict[str, Any],
    *,
    termination: str | None = None,
    diff: list[RowChange] | None = None,
) -> Outcome:
    """The benchmark's verdict as an `Outcome`; `base` is the episode's own info (turns, calls, user)."""
    from toolshift.world.external import judge_task
    from toolshift.world.tau2.evaluator import TAU2_JUDGE

    if task.judge == TAU2_JUDGE:
        world = getattr(session, "world", None)
        return tau2_outcome(task, messages, termination, base, world=world, diff=diff if world else None)
    from toolshift.world.external.objects import ObjectWorld

    world = getattr(session, "world", None)
    verdict = judge_task(task, transcript(messages), world if isinstance(world, ObjectWorld) else None)
    return Outcome(
        reward=verdict["reward"],
        success=verdict["success"],
        judged_by=verdict["judged_by"],
        info={**base, **verdict["info"]},
    )
