"""Read and write τ²-bench results (`Results` with `simulations`, single file or the `dir` layout) as episodes.

Choices (also in docs/formats.md):

- Layouts, detected like τ²'s loader: a folder holding `results.json` + `simulations/*.json` (dir),
  a `results.json` with a sibling `simulations/` folder (dir), else one JSON file (`Results` with
  `simulations` inline). A `format_version` key is dropped.
- One `SimulationRun` → one Episode: `id`, `task_id` (always a string), `trial`, `termination_reason`,
  `start_time`, `end_time`, `duration`, `agent_cost`, `user_cost` map to the same fields. `domain` is
  `info.environment_info.domain_name`; `agent` = `info.agent_info.implementation`, `model` =
  `info.agent_info.llm`, `harness` = `tau2`. `reward_info` is kept verbatim in `outcome.info`, with
  `reward` copied out and `success = reward == 1`, `judged_by = "tau2-reward"`; the task's gold
  `evaluation_criteria.actions` go to `outcome.info["gold_actions"]` when `Results.tasks` has it.
- The simulation's other keys (`seed`, `timestamp`, `mode`, `info`, `review`, ...) are kept verbatim
  in `source["tau2_sim"]`, and `Results.info` without the policy text in `source["tau2_info"]`,
  so writing the episode back restores them.
- Messages: `role`, `content`, `tool_calls` (id, name, arguments, requestor), `timestamp`, `cost`,
  `usage`, `generation_time_seconds`; a tool message's `id` becomes `tool_call_id`, and it keeps
  `requestor` and `error`; its `name` is taken from the call it answers (paired by order, ids only as
  a check). A `MultiToolMessage` is flattened into its tool messages. Dropped: `raw_data` (the raw
  LLM response) and the voice-only fields; `turn_idx` is renumbered by position when writing.
- Skipped, by reason: full-duplex simulations (`ticks` instead of `messages`) and simulations
  without messages. Malformed simulations raise BadInputError (file, simulation index, field), or
  are counted with `skip_bad`.
- Catalog: τ²'s airline / retail tool tables (`toolshift.traces.tau_tools`, origin `source`); any
  other domain (telecom) is labelled by the verb rule, and names no rule labels are left unknown.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.traces.catalog import ToolCatalog, catalog_by_verb
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall, Usage
from toolshift.traces.store import write_text_atomic
from toolshift.traces.tau_tools import TAU2_TOOLS, tau_catalog

CONVERTER = "tau2"
HARNESS = "tau2"
Layout = Literal["json", "dir"]

SIM_MODELLED = (
    "id", "task_id", "trial", "start_time", "end_time", "duration", "termination_reason",
    "agent_cost", "user_cost", "reward_info", "messages",
)  # fmt: skip
SIM_DROPPED = ("ticks",)
MESSAGE_KEYS = ("role", "content", "tool_calls", "timestamp", "cost", "usage", "generation_time_seconds")


@dataclass
class Tau2Run:
    """One τ²-bench results file (or folder) as toolshift holds it: run info, tasks, episodes."""

    info: dict[str, Any]
    tasks: list[Any] = field(default_factory=list)
    timestamp: str | None = None
    episodes: list[Episode] = field(default_factory=list)
    layout: Layout = "json"


# --- reading ----------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read τ²-bench results: {exc}", source=str(path)) from exc


def _locate(path: Path) -> tuple[Path, Path | None]:
    """(results.json, simulations folder or None) for either layout."""
    if path.is_dir():
        results = path / "results.json"
        if not results.is_file():
            raise BadInputError("no results.json in this folder", source=str(path))
        sims = path / "simulations"
        return results, sims if sims.is_dir() else None
    if not path.is_file():
        raise BadInputError("no such file or folder", source=str(path))
    sims = path.parent / "simulations"
    return path, sims if path.name == "results.json" and sims.is_dir() else None


def _records(path: Path) -> tuple[dict[str, Any], list[tuple[str, int, Any]], Layout]:
    """The Results document and its simulations as (file, index, raw dict)."""
    results_path, sims_dir = _locate(path)
    doc = _load_json(results_path)
    if not isinstance(doc, dict):
        raise BadInputError("a τ²-bench Results document is a JSON object", source=str(results_path))
    doc.pop("format_version", None)
    if sims_dir is not None:
        files = sorted(sims_dir.glob("*.json"))
        index = doc.get("simulation_index")
        if index:
            ids = {str(e.get("id")) for e in index if isinstance(e, dict)}
            stems = {f.stem for f in files}
            if ids != stems:
                raise BadInputError(
                    f"simulation_index ids differ from simulations/*.json ({len(ids ^ stems)} mismatched)",
                    source=str(results_path),
                    field="simulation_index",
                )
        return doc, [(str(f), 0, _load_json(f)) for f in files], "dir"
    sims = doc.get("simulations")
    if not isinstance(sims, list):
        raise BadInputError("missing `simulations` list", source=str(results_path), field="simulations")
    return doc, [(str(results_path), i, s) for i, s in enumerate(sims)], "json"


def _gold_actions(tasks: list[Any]) -> dict[str, list[Any]]:
    out = {}
    for task in tasks or []:
        if isinstance(task, dict) and "id" in task:
            criteria = task.get("evaluation_criteria") or {}
            if isinstance(criteria, dict) and criteria.get("actions") is not None:
                out[str(task["id"])] = criteria["actions"]
    return out


def _bad(msg: str, file: str, index: int | str, fld: str) -> BadInputError:
    return BadInputError(msg, source=file, record=index, field=fld)


def _message(
    raw: Any, file: str, index: int, j: int, pending: list[ToolCall], seen: dict[str, ToolCall]
) -> list[Message]:
    where = f"messages[{j}]"
    if not isinstance(raw, dict):
        raise _bad("a message is an object", file, index, where)
    if raw.get("role") == "tool" and "tool_messages" in raw:
        out = []
        for k, inner in enumerate(raw["tool_messages"] or []):
            out += _message(inner, file, index, j, pending, seen) if isinstance(inner, dict) else []
            if not isinstance(inner, dict):
                raise _bad("a tool message is an object", file, index, f"{where}.tool_messages[{k}]")
        return out
    role = raw.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise _bad(f"unknown role {role!r}", file, index, f"{where}.role")
    usage = raw.get("usage")
    fields: dict[str, Any] = {
        "role": role,
        "content": raw.get("content"),
        "timestamp": raw.get("timestamp"),
        "cost": raw.get("cost"),
        "generation_time_seconds": raw.get("generation_time_seconds"),
        "usage": Usage(**{k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")})
        if isinstance(usage, dict)
        else None,
    }
    if role == "tool":
        call_id = str(raw.get("id") or "")
        call = pending.pop(0) if pending else seen.get(call_id)
        fields |= {
            "tool_call_id": call_id,
            "requestor": raw.get("requestor") or (call.requestor if call else "assistant"),
            "error": bool(raw.get("error", False)),
            "name": call.name if call else None,
        }
    elif role in ("user", "assistant"):
        calls = []
        for k, tc in enumerate(raw.get("tool_calls") or []):
            f = f"{where}.tool_calls[{k}]"
            if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
                raise _bad("a tool call needs a string `name`", file, index, f"{f}.name")
            args = tc.get("arguments") or {}
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError as exc:
                    raise _bad(f"arguments are not JSON: {exc.msg}", file, index, f"{f}.arguments") from exc
            if not isinstance(args, dict):
                raise _bad("arguments are not an object", file, index, f"{f}.arguments")
            calls.append(
                ToolCall(
                    id=str(tc.get("id") or ""),
                    name=tc["name"],
                    arguments=args,
                    requestor=tc.get("requestor") or role,
                )
            )
        fields["tool_calls"] = calls or None
        pending[:] = calls
        seen.update({c.id: c for c in calls if c.id})
    try:
        return [Message(**fields)]
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=file, record=index, prefix=where) from exc


def _episode(
    sim: Any, file: str, index: int, info: dict[str, Any], gold: dict[str, list[Any]], results_ts: str | None
) -> Episode | str:
    if not isinstance(sim, dict):
        raise _bad("a simulation is an object", file, index, "simulation")
    for key in ("id", "task_id"):
        if sim.get(key) is None:
            raise _bad("missing", file, index, key)
    if sim.get("messages") is None:
        return (
            "full-duplex simulation (ticks, no messages)"
            if sim.get("ticks")
            else "simulation without messages"
        )
    if not isinstance(sim["messages"], list):
        raise _bad("not a list", file, index, "messages")
    pending: list[ToolCall] = []
    seen: dict[str, ToolCall] = {}
    messages: list[Message] = []
    for j, raw in enumerate(sim["messages"]):
        messages += _message(raw, file, index, j, pending, seen)
    reward_info = sim.get("reward_info")
    outcome = None
    if reward_info is not None:
        if not isinstance(reward_info, dict):
            raise _bad("not an object", file, index, "reward_info")
        reward = reward_info.get("reward")
        if reward is not None and not isinstance(reward, (int, float)):
            raise _bad("not a number", file, index, "reward_info.reward")
        outcome = Outcome(
            reward=reward,
            success=None if reward is None else abs(float(reward) - 1.0) < 1e-9,
            judged_by="tau2-reward",
            info={"reward_info": reward_info},
        )
    task_id = str(sim["task_id"])
    if task_id in gold:
        outcome = outcome or Outcome()
        outcome.info["gold_actions"] = gold[task_id]
    env = info.get("environment_info") or {}
    agent_info = info.get("agent_info") or {}
    try:
        return Episode(
            id=str(sim["id"]),
            task_id=task_id,
            trial=int(sim.get("trial") or 0),
            domain=str(env.get("domain_name") or "unknown"),
            agent=agent_info.get("implementation"),
            model=agent_info.get("llm"),
            harness=HARNESS,
            messages=messages,
            termination_reason=sim.get("termination_reason"),
            outcome=outcome,
            start_time=sim.get("start_time"),
            end_time=sim.get("end_time"),
            duration=sim.get("duration"),
            agent_cost=sim.get("agent_cost"),
            user_cost=sim.get("user_cost"),
            source={
                "converter": CONVERTER,
                "file": Path(file).name,
                "record": index,
                "results_timestamp": results_ts,
                "tau2_sim": {k: v for k, v in sim.items() if k not in SIM_MODELLED and k not in SIM_DROPPED},
                "tau2_info": _info_without_policy(info),
            },
        )
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=file, record=index) from exc


def _info_without_policy(info: dict[str, Any]) -> dict[str, Any]:
    env = dict(info.get("environment_info") or {})
    env.pop("policy", None)
    return {**info, "environment_info": env}


def read_results(path: Path, *, skip_bad: bool = False, report: Conversion | None = None) -> Tau2Run:
    """Read a τ²-bench results file or folder (either layout) into a `Tau2Run`."""
    path = Path(path)
    doc, records, layout = _records(path)
    info = doc.get("info")
    if not isinstance(info, dict):
        raise BadInputError("missing `info` object", source=str(_locate(path)[0]), field="info")
    tasks = doc.get("tasks") or []
    gold = _gold_actions(tasks)
    report = report if report is not None else Conversion(converter=CONVERTER)
    run = Tau2Run(info=info, tasks=tasks, timestamp=doc.get("timestamp"), layout=layout)
    for file, index, sim in records:
        report.records += 1
        try:
            episode = _episode(sim, file, index, info, gold, run.timestamp)
        except BadInputError as exc:
            report.skip_bad(exc, skip_bad=skip_bad)
            continue
        if isinstance(episode, str):
            report.skip(episode)
            continue
        run.episodes.append(episode)
    return run


def tau2_catalog(domain: str, called: set[str]) -> tuple[ToolCatalog, list[str]]:
    """The domain's catalog: τ²'s table for airline/retail, else the verb rule; and names left unlabelled."""
    source = "verb rule over the tools this run called"
    if domain not in TAU2_TOOLS:
        return catalog_by_verb(domain, called, source=source)
    catalog = tau_catalog(domain, TAU2_TOOLS[domain], "tau2-bench tool implementations")
    extra, unlabelled = catalog_by_verb(domain, called - catalog.effects().keys(), source=source)
    return catalog.merged(extra.tools), unlabelled


def convert_tau2(path: Path, *, skip_bad: bool = False) -> Conversion:
    """Convert a τ²-bench results file or folder into episodes and a catalog per domain."""
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    run = read_results(Path(path), skip_bad=skip_bad, report=conv)
    conv.episodes = run.episodes
    called: dict[str, set[str]] = {}
    for episode in run.episodes:
        names = called.setdefault(episode.domain, set())
        names |= {c.name for m in episode.messages for c in m.tool_calls or []}
    for domain, names in called.items():
        conv.catalogs[domain] = tau2_catalog(domain, names)[0]
    conv.note_unknown_tools()
    return conv


# --- writing ----------------------------------------------------------------------------------


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
        out["tool_calls"] = [c.model_dump() for c in calls] if calls else None
    out["turn_idx"] = turn_idx
    out["timestamp"] = message.timestamp
    if message.role != "system":
        out["cost"] = message.cost
        out["usage"] = message.usage.model_dump() if message.usage else None
        out["generation_time_seconds"] = message.generation_time_seconds
    return out


def episode_to_simulation(episode: Episode) -> dict[str, Any]:
    """One Episode as a τ²-bench `SimulationRun` dict (the inverse of the reader, for what we model)."""
    extra = dict(episode.source.get("tau2_sim") or {})
    reward_info = (episode.outcome.info.get("reward_info") if episode.outcome else None) or None
    if reward_info is None and episode.outcome is not None and episode.outcome.reward is not None:
        reward_info = {"reward": episode.outcome.reward}
    sim: dict[str, Any] = {
        "id": episode.id,
        "task_id": episode.task_id,
        "trial": episode.trial,
        "timestamp": extra.pop("timestamp", episode.start_time),
        "start_time": episode.start_time,
        "end_time": episode.end_time,
        "duration": episode.duration,
        "termination_reason": episode.termination_reason,
        "agent_cost": episode.agent_cost,
        "user_cost": episode.user_cost,
        "reward_info": reward_info,
        "messages": [_message_out(m, i) for i, m in enumerate(episode.messages)],
    }
    sim.update(extra)
    return sim


def run_from_episodes(
    episodes: list[Episode], *, policy: str = "", tasks: list[Any] | None = None
) -> Tau2Run:
    """A `Tau2Run` for episodes that did not come from τ²-bench, or whose Results info is not at hand.

    Info comes from the first episode's `source["tau2_info"]` when present, else is built from the
    episodes' domain / agent / model.
    """
    if not episodes:
        raise BadInputError("no episodes to write")
    first = episodes[0]
    info = dict(first.source.get("tau2_info") or {})
    if not info:
        info = {
            "git_commit": "",
            "num_trials": 1 + max(e.trial for e in episodes),
            "max_steps": None,
            "max_errors": None,
            "user_info": {"implementation": "unknown"},
            "agent_info": {"implementation": first.agent or "unknown", "llm": first.model},
            "environment_info": {"domain_name": first.domain, "tool_defs": None},
        }
    env = dict(info.get("environment_info") or {})
    env["policy"] = policy
    info["environment_info"] = env
    return Tau2Run(
        info=info, tasks=tasks or [], timestamp=first.source.get("results_timestamp"), episodes=episodes
    )


def write_results(run: Tau2Run, path: Path, *, layout: Layout | None = None) -> Path:
    """Write a τ²-bench Results: one JSON file (`json`) or a folder with results.json + simulations/ (`dir`).

    The write goes to a temporary sibling first and is renamed into place, so a failure leaves nothing half-written.
    """
    path = Path(path)
    layout = layout or run.layout
    sims = [episode_to_simulation(e) for e in run.episodes]
    doc: dict[str, Any] = {"timestamp": run.timestamp, "info": run.info, "tasks": run.tasks}
    path.parent.mkdir(parents=True, exist_ok=True)
    if layout == "json":
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
