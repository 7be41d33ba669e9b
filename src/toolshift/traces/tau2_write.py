"""Write episodes as a τ²-bench `Results` (one JSON file or the `dir` layout) that τ²-bench itself loads and scores.

Choices (also in docs/formats.md):

- Episodes read from τ²-bench are written back as they were read (`source.tau2_sim`, `tau2_info`,
  `tau2_task`, `reward_info` verbatim): a round trip reproduces every field the reader keeps.
- Every value τ²'s models require is written. Times an episode did not record (converted τ-bench v1
  runs logged none) are filled the way τ²-bench fills a simulation that never ran: start and end at
  the Results timestamp, duration 0.0; the simulation's `info.toolshift.unrecorded` lists them, and
  our reader restores them as null.
- `termination_reason` in τ²'s vocabulary (`TAU2_TERMINATIONS`): `max_turns` → `max_steps`,
  `world_error` → `infrastructure_error`, and a `timeout` charged to the harness (an abandoned
  episode) → `infrastructure_error`: τ²'s metrics leave infrastructure errors out, as toolshift's
  leave out episodes not charged to the agent. The original reason goes to
  `info.toolshift.termination_reason`. A reason τ² has no word for is refused.
- The agent loop's harness call `end_conversation` (the agent's or the user's way to end; no tool
  answers it) is not written as a tool call: τ²'s evaluator replays every call of a conversation and
  requires a tool message after each. `info.toolshift.end_calls` keeps where each was, and our reader
  puts them back.
- `reward_info`: τ²'s own verbatim (and for episodes judged by `tau2-reward` here, the RewardInfo
  toolshift computed, `toolshift.world.tau2.evaluator`); τ-bench v1's as a τ² RewardInfo (`db_check` from `r_actions`,
  `reward_breakdown` DB/COMMUNICATE, τ-bench's `info` kept under `info.tau_bench_v1`; its `actions`
  list is the task's, written to `Results.tasks`); any other judge's as `{reward, db_check,
  reward_basis: ["DB"], info: {judged_by, ...outcome.info}}`; null when the episode was not judged.
- `Results.tasks`: see `toolshift.traces.tau2_tasks`. `info.max_steps` is the run's step limit
  (`max_steps` given, else the episodes' `source.max_steps`); `info.max_errors` the error limit,
  else `max_steps` (toolshift and τ-bench v1 stop on no error count).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from toolshift.errors import BadInputError
from toolshift.traces.episode import Episode, Message
from toolshift.traces.store import write_text_atomic
from toolshift.traces.tau2 import OUR_MARKS, RECORDED_TIMES, Layout, Tau2Run
from toolshift.traces.tau2_tasks import TAUBENCH_JUDGE, tau2_tasks

TAU2_TERMINATIONS: Final = (
    "user_stop", "agent_stop", "max_steps", "timeout", "too_many_errors", "agent_error", "user_error",
    "infrastructure_error", "context_window_exceeded", "unexpected_error",
)  # fmt: skip
"""τ²-bench's `TerminationReason` values (tau2.data_model.simulation, 1.0.1)."""
TERMINATION_TO_TAU2: Final = {"max_turns": "max_steps", "world_error": "infrastructure_error"}
HARNESS_END: Final = "end_conversation"
"""The agent loop's harness tool (`toolshift.agents.users.END_CONVERSATION`): never reaches a world."""


def tau2_termination(episode: Episode) -> str:
    """The episode's termination reason in τ²-bench's vocabulary (see the module docstring)."""
    reason = episode.termination_reason
    charged = (episode.outcome.info.get("charged_to") if episode.outcome else None) == "harness"
    if reason == "timeout" and charged:
        return "infrastructure_error"
    mapped = TERMINATION_TO_TAU2.get(reason or "", reason)
    if mapped not in TAU2_TERMINATIONS:
        raise BadInputError(
            f"termination_reason {reason!r} has no τ²-bench equivalent ({', '.join(TAU2_TERMINATIONS)})",
            record=episode.id,
            field="termination_reason",
        )
    return mapped


def _message_out(message: Message, turn_idx: int) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "id": message.tool_call_id or "",
            "role": "tool",
            "content": message.content,
            "requestor": message.requestor or "assistant",
            "error": message.error,
            "turn_idx": turn_idx,
            "timestamp": message.timestamp,
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role != "system":
        calls = message.tool_calls
        out["tool_calls"] = [c.model_dump(exclude={"malformed"}) for c in calls] if calls else None
    out["turn_idx"] = turn_idx
    out["timestamp"] = message.timestamp
    if message.role != "system":
        out["cost"] = message.cost
        # τ²'s usage carries prompt and completion tokens; ours adds the cached share only where it was reported
        # (D170), so a τ²-written file round-trips unchanged.
        out["usage"] = (
            message.usage.model_dump(
                exclude={"cached_prompt_tokens"} if message.usage.cached_prompt_tokens is None else set()
            )
            if message.usage
            else None
        )
        out["generation_time_seconds"] = message.generation_time_seconds
    return out


def _taubench_reward_info(reward: float, logged: Any) -> dict[str, Any]:
    logged = logged if isinstance(logged, dict) else {}
    info = logged.get("info") if isinstance(logged.get("info"), dict) else {}
    breakdown = {
        k: float(info[r]) for k, r in (("DB", "r_actions"), ("COMMUNICATE", "r_outputs")) if r in info
    }
    out: dict[str, Any] = {"reward": reward, "reward_basis": ["DB", "COMMUNICATE"]}
    if "DB" in breakdown:
        out["db_check"] = {"db_match": breakdown["DB"] == 1.0, "db_reward": breakdown["DB"]}
    out["reward_breakdown"] = breakdown or None
    out["info"] = {"tau_bench_v1": {k: v for k, v in logged.items() if k != "actions"}}
    return out


def tau2_reward_info(episode: Episode) -> dict[str, Any] | None:
    """The episode's outcome as a τ²-bench `RewardInfo` dict (see the module docstring), or None."""
    outcome = episode.outcome
    if outcome is None:
        return None
    if outcome.judged_by == "tau2-reward":
        return outcome.info.get("reward_info")
    if outcome.reward is None:
        return None
    if outcome.judged_by == TAUBENCH_JUDGE:
        return _taubench_reward_info(outcome.reward, outcome.info.get("reward_info"))
    success = outcome.success if outcome.success is not None else outcome.reward == 1.0
    return {
        "reward": outcome.reward,
        "db_check": {"db_match": success, "db_reward": outcome.reward},
        "reward_basis": ["DB"],
        "info": {"judged_by": outcome.judged_by, **outcome.info},
    }


def _without_harness_ends(messages: list[Message]) -> tuple[list[Message], list[dict[str, Any]]]:
    """The messages without unanswered `end_conversation` calls, and where each was (message, position, call)."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    out, ends = [], []
    for i, m in enumerate(messages):
        calls = m.tool_calls or []
        if not any(c.name == HARNESS_END and c.id not in answered for c in calls):
            out.append(m)
            continue
        keep = []
        for position, c in enumerate(calls):
            if c.name == HARNESS_END and c.id not in answered:
                ends.append({"message": i, "position": position, "call": c.model_dump()})
            else:
                keep.append(c)
        out.append(m.model_copy(update={"tool_calls": keep or None}))
    return out, ends


def episode_to_simulation(episode: Episode, *, fill_time: str | None = None) -> dict[str, Any]:
    """One Episode as a τ²-bench `SimulationRun` dict (the inverse of the reader, for what we model).

    `fill_time` stands in for times the episode did not record (τ² requires them); without it
    they stay null, as read.
    """
    extra = dict(episode.source.get("tau2_sim") or {})
    marks: dict[str, Any] = {}
    times: dict[str, Any] = {k: getattr(episode, k) for k in RECORDED_TIMES}
    if fill_time is not None:
        unrecorded = [k for k, v in times.items() if v is None]
        times |= {k: 0.0 if k == "duration" else fill_time for k in unrecorded}
        if unrecorded:
            marks["unrecorded"] = unrecorded
    reason = tau2_termination(episode)
    if reason != episode.termination_reason:
        marks["termination_reason"] = episode.termination_reason
    messages, ends = _without_harness_ends(episode.messages)
    if ends:
        marks["end_calls"] = ends
    timestamp = extra.pop("timestamp", None) or times["start_time"]
    sim: dict[str, Any] = {
        "id": episode.id,
        "task_id": episode.task_id,
        "trial": episode.trial,
        "timestamp": timestamp,
        **times,
        "termination_reason": reason,
        "agent_cost": episode.agent_cost,
        "user_cost": episode.user_cost,
        "reward_info": tau2_reward_info(episode),
        "messages": [_message_out(m, i) for i, m in enumerate(messages)],
    }
    sim.update(extra)
    if marks:
        sim["info"] = {**(sim.get("info") or {}), OUR_MARKS: marks}
    return sim


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_from_episodes(
    episodes: list[Episode],
    *,
    policy: str = "",
    tasks: list[Any] | None = None,
    max_steps: int | None = None,
    max_errors: int | None = None,
) -> Tau2Run:
    """A `Tau2Run` of episodes, ready for τ²-bench: info, tasks (given, else `tau2_tasks`), timestamp.

    Info comes from the first episode's `source["tau2_info"]` when present (it was read from τ²),
    else is built from the episodes' domain / agent / model and the step limit.
    """
    if not episodes:
        raise BadInputError("no episodes to write")
    first = episodes[0]
    info = dict(first.source.get("tau2_info") or {})
    if not info:
        steps = max_steps or next(
            (e.source["max_steps"] for e in episodes if e.source.get("max_steps")), None
        )
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise BadInputError(
                "the run's step limit is unknown, and τ²-bench's Results record it (info.max_steps); "
                "pass --max-steps",
                record=first.id,
                field="source.max_steps",
            )
        user = first.outcome.info.get("user") if first.outcome else None
        info = {
            "git_commit": "",
            "num_trials": 1 + max(e.trial for e in episodes),
            "max_steps": steps,
            "max_errors": max_errors or steps,
            "user_info": {"implementation": str(user or "unknown")},
            "agent_info": {"implementation": first.agent or "unknown", "llm": first.model},
            "environment_info": {"domain_name": first.domain, "tool_defs": None},
        }
    env = dict(info.get("environment_info") or {})
    env["policy"] = policy
    info["environment_info"] = env
    timestamp = first.source.get("results_timestamp") or min(
        (e.start_time for e in episodes if e.start_time), default=None
    )
    return Tau2Run(
        info=info,
        tasks=tau2_tasks(episodes) if tasks is None else tasks,
        timestamp=timestamp or _now(),
        episodes=episodes,
    )


def write_results(run: Tau2Run, path: Path, *, layout: Layout | None = None) -> Path:
    """Write a τ²-bench Results: one JSON file (`json`) or a folder with results.json + simulations/ (`dir`).

    The write goes to a temporary sibling first and is renamed into place, so a failure leaves nothing half-written.
    """
    path = Path(path)
    layout = layout or run.layout
    fill = run.timestamp or _now()
    sims = [episode_to_simulation(e, fill_time=fill) for e in run.episodes]
    doc: dict[str, Any] = {"timestamp": run.timestamp or fill, "info": run.info, "tasks": run.tasks}
    path.parent.mkdir(parents=True, exist_ok=True)
    if layout == "json":
        if (path.parent / "simulations").is_dir():
            raise BadInputError(
                "τ²-bench would read this file as the dir layout, for the simulations/ folder beside it; "
                "write it elsewhere",
                source=str(path),
            )
        doc |= {"simulations": sims, "simulation_index": None}
        return write_text_atomic(path, json.dumps(doc, ensure_ascii=False, indent=1))
    for index, sim in enumerate(sims):
        # τ²'s loader requires each `simulations/<id>.json` stem to equal its id, so the id must be a file name.
        sim_id = str(sim["id"])
        if not sim_id or sim_id in (".", "..") or any(ch in sim_id for ch in "/\\\0"):
            raise BadInputError(
                f"id {sim_id!r} cannot name a file, and the dir layout names each simulation file by its id; "
                "write --layout json instead",
                source=str(path),
                record=index,
                field="id",
            )
    tmp_dir = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        (tmp_dir / "simulations").mkdir()
        doc["simulation_index"] = [
            {k: s.get(k) for k in ("id", "task_id", "trial")}
            | {"reward": (s.get("reward_info") or {}).get("reward")}
            | {k: s.get(k) for k in ("termination_reason", "agent_cost", "duration")}
            for s in sims
        ]
        (tmp_dir / "results.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        for sim in sims:
            (tmp_dir / "simulations" / f"{sim['id']}.json").write_text(
                json.dumps(sim, ensure_ascii=False, indent=1), encoding="utf-8"
            )
        os.chmod(tmp_dir, 0o777 & ~_umask())
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp_dir, path)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
