"""Read τ²-bench results (`Results` with `simulations`, single file or the `dir` layout) as episodes.

Choices (also in docs/formats.md):

- Layouts, detected like τ²'s loader: a folder holding `results.json` + `simulations/*.json` (dir),
  a JSON file with a sibling `simulations/` folder (dir, whatever the file's name, as τ² reads it),
  else one JSON file (`Results` with `simulations` inline). A `format_version` key is dropped. The
  dir layout's simulations are read in the order of its `simulation_index`, else of their file names.
  Also as τ²'s tooling and leaderboard hold them (`tau2_files`): a bare JSON list of simulations and a
  single simulation (τ²'s `*_simulation.json`), whose domain is `--domain` or the one τ² domain the file
  name holds, whose agent is the file's stem; a leaderboard submission folder (`submission.json` and its
  `trajectories/`), each trajectory file as its own run; a folder of any of these. A `results.json` with a
  `simulation_index` and no simulations (a voice submission's metadata) is refused in one line: it holds
  no conversation. Tool messages without an `id` (the leaderboard's trimmed files) pair with their calls
  by order, as every tool message does; a result the trimmer cut short keeps its text, counted in a note.
- A partial run (fewer simulations than `info.num_trials` × the tasks its `tasks` list) converts, and
  a note says how much of the configured run it holds.
- One `SimulationRun` → one Episode: `id`, `task_id` (always a string), `trial`, `termination_reason`,
  `start_time`, `end_time`, `duration`, `agent_cost`, `user_cost` map to the same fields. `domain` is
  `info.environment_info.domain_name`; `agent` = `info.agent_info.implementation`, `model` =
  `info.agent_info.llm`, `harness` = `tau2`. `reward_info` is kept verbatim in `outcome.info`, with
  `reward` copied out and `success = reward == 1`, `judged_by = "tau2-reward"`; the task's gold
  `evaluation_criteria.actions` go to `outcome.info["gold_actions"]` when `Results.tasks` has it.
- The simulation's other keys (`seed`, `timestamp`, `mode`, `info`, `review`, ...) are kept verbatim
  in `source["tau2_sim"]`, `Results.info` without the policy text in `source["tau2_info"]`, and the
  episode's task from `Results.tasks` in `source["tau2_task"]`, so writing the episode back
  (`toolshift.traces.tau2_write`) restores them, tasks included. The marks our writer leaves in a
  simulation's `info.toolshift` are taken back: times it filled in read as null again, and a
  termination reason it translated reads as the original.
- Messages: `role`, `content`, `tool_calls` (id, name, arguments, requestor), `timestamp`, `cost`,
  `usage`, `generation_time_seconds`; a tool message's `id` becomes `tool_call_id`, and it keeps
  `requestor` and `error`; its `name` is taken from the call it answers (paired by order, ids only as
  a check). A `MultiToolMessage` is flattened into its tool messages. Dropped: `raw_data` (the raw
  LLM response) and the voice-only fields; `turn_idx` is renumbered by position when writing.
- Skipped, by reason: full-duplex simulations (`ticks` instead of `messages`) and simulations
  without messages. Malformed simulations raise BadInputError (file, simulation index, field), or
  are counted with `skip_bad`; a malformed `info`, `tasks` or `simulation_index` is always an error.
- Catalog: τ²'s airline / retail / telecom tool tables (`toolshift.traces.tau_tools`, origin `source`); any
  other domain is labelled by the verb rule, and names no rule labels are left unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, require_regular, require_strict
from toolshift.traces.catalog import CatalogTool, ToolCatalog, catalog_by_verb
from toolshift.traces.conversion import Conversion, read_call
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall
from toolshift.traces.tau_tools import tau2_table, tau_catalog

CONVERTER = "tau2"
HARNESS = "tau2"
Layout = Literal["json", "dir", "list", "simulation"]
"""How a run was read: τ²'s two `Results` layouts, a bare list of simulations, one simulation."""
DOMAINS = ("airline", "retail", "telecom", "mock", "banking_knowledge")
"""τ²-bench's domains: a bare simulation file's domain is the one of these its name holds."""
TRIMMED = re.compile(r"\[\.\.\. [\d,]+ characters trimmed for size \.\.\.\]")
"""The mark τ²'s leaderboard trimmer (`trim_trajectories`) leaves where it cut a long message short."""

SIM_MODELLED = (
    "id", "task_id", "trial", "start_time", "end_time", "duration", "termination_reason",
    "agent_cost", "user_cost", "reward_info", "messages",
)  # fmt: skip
SIM_DROPPED = ("ticks",)
RECORDED_TIMES = ("start_time", "end_time", "duration")
OUR_MARKS = "toolshift"
"""Key of `SimulationRun.info` where the writer notes what it filled in or translated (docs/formats.md)."""
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
    return read_json(path, what="τ²-bench results", strict=False)  # strict per simulation (read_results)


def _locate(path: Path) -> tuple[Path, Path | None]:
    """(results.json, simulations folder or None) for either layout."""
    if path.is_dir():
        results = path / "results.json"
        if not results.is_file():
            raise BadInputError("no results.json in this folder", source=str(path))
        sims = path / "simulations"
        return results, sims if sims.is_dir() else None
    require_regular(path, what="τ²-bench results file or folder")
    sims = path.parent / "simulations"
    return path, sims if sims.is_dir() else None


def _records(path: Path) -> tuple[dict[str, Any], list[tuple[str, int, Any]], Layout]:
    """The Results document and its simulations as (file, index, raw dict). A bare list of simulations or
    a single simulation is held as a document with an empty `info` (layouts `list`, `simulation`)."""
    results_path, sims_dir = _locate(path)
    doc = _load_json(results_path)
    if isinstance(doc, list):
        return {"info": {}}, [(str(results_path), i, s) for i, s in enumerate(doc)], "list"
    if not isinstance(doc, dict):
        raise BadInputError(
            "a τ²-bench results file is a Results object, a list of simulations or one simulation",
            source=str(results_path),
        )
    if "simulations" not in doc and "messages" in doc and "task_id" in doc:
        return {"info": {}}, [(str(results_path), 0, doc)], "simulation"
    doc.pop("format_version", None)
    index = doc.get("simulation_index")
    if index is not None and not isinstance(index, list):
        raise BadInputError("not a list", source=str(results_path), field="simulation_index")
    if sims_dir is not None:
        files = sorted(sims_dir.glob("*.json"))
        if index:
            ids = {str(e.get("id")) for e in index if isinstance(e, dict)}
            stems = {f.stem for f in files}
            if ids != stems:
                raise BadInputError(
                    f"simulation_index ids differ from simulations/*.json ({len(ids ^ stems)} mismatched)",
                    source=str(results_path),
                    field="simulation_index",
                )
            position = {str(e.get("id")): i for i, e in enumerate(index) if isinstance(e, dict)}
            files.sort(key=lambda f: position[f.stem])  # the run's order, which the index keeps
        return doc, [(str(f), 0, _load_json(f)) for f in files], "dir"
    sims = doc.get("simulations")
    if index and not sims:
        raise BadInputError(
            f"a simulation index of {len(index)} and no simulations (no simulations/ folder beside it): "
            "metadata only, no conversation to convert",
            source=str(results_path),
            field="simulations",
        )
    if not isinstance(sims, list):
        raise BadInputError("missing `simulations` list", source=str(results_path), field="simulations")
    return doc, [(str(results_path), i, s) for i, s in enumerate(sims)], "json"


def _tasks_by_id(tasks: Any, file: str) -> dict[str, dict[str, Any]]:
    """`Results.tasks` by id, each checked to be an object with an id and, if any, a list of actions."""
    if not isinstance(tasks, list):
        raise _bad(f"not a list but {type(tasks).__name__}", file, None, "tasks")
    out: dict[str, dict[str, Any]] = {}
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            raise _bad("a task is an object", file, None, f"tasks[{i}]")
        if not isinstance(task.get("id"), (str, int)) or isinstance(task.get("id"), bool):
            raise _bad("a task needs a string `id`", file, None, f"tasks[{i}].id")
        criteria = task.get("evaluation_criteria")
        if criteria is not None and not isinstance(criteria, dict):
            raise _bad("not an object", file, None, f"tasks[{i}].evaluation_criteria")
        if criteria and criteria.get("actions") is not None and not isinstance(criteria["actions"], list):
            raise _bad("not a list", file, None, f"tasks[{i}].evaluation_criteria.actions")
        out[str(task["id"])] = task
    return out


def _object(value: Any, file: str, fld: str) -> dict[str, Any]:
    """An optional object of `Results.info`: `{}` when absent, else it must be an object."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(f"not an object but {type(value).__name__}", file, None, fld)
    return value


def _check_info(info: dict[str, Any], file: str) -> None:
    for key in ("environment_info", "agent_info", "user_info"):
        part = _object(info.get(key), file, f"info.{key}")
        for name in ("domain_name", "implementation", "llm", "policy"):
            if part.get(name) is not None and not isinstance(part[name], str):
                raise _bad("not a string", file, None, f"info.{key}.{name}")


def _bad(msg: str, file: str, index: int | str | None, fld: str) -> BadInputError:
    return BadInputError(msg, source=file, record=index, field=fld)


def _message(
    raw: Any, file: str, index: int, j: int, pending: list[ToolCall], seen: dict[str, ToolCall]
) -> list[Message]:
    where = f"messages[{j}]"
    if not isinstance(raw, dict):
        raise _bad("a message is an object", file, index, where)
    if raw.get("role") == "tool" and "tool_messages" in raw:
        out = []
        for k, inner in enumerate(_list(raw["tool_messages"], file, index, f"{where}.tool_messages")):
            out += _message(inner, file, index, j, pending, seen) if isinstance(inner, dict) else []
            if not isinstance(inner, dict):
                raise _bad("a tool message is an object", file, index, f"{where}.tool_messages[{k}]")
        return out
    role = raw.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise _bad(f"unknown role {role!r}", file, index, f"{where}.role")
    usage = raw.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise _bad(f"not an object but {type(usage).__name__}", file, index, f"{where}.usage")
    fields: dict[str, Any] = {
        "role": role,
        "content": raw.get("content"),
        "timestamp": raw.get("timestamp"),
        "cost": raw.get("cost"),
        "generation_time_seconds": raw.get("generation_time_seconds"),
        "usage": None if usage is None else {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")},
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
        for k, tc in enumerate(_list(raw.get("tool_calls"), file, index, f"{where}.tool_calls")):
            f = f"{where}.tool_calls[{k}]"
            if not isinstance(tc, dict):
                raise _bad("a tool call is an object", file, index, f)
            requestor = tc.get("requestor") or role
            if requestor not in ("assistant", "user"):
                raise _bad(f"unknown requestor {requestor!r}", file, index, f"{f}.requestor")
            # Unreadable arguments or no name: kept, `malformed` (read_call), never a refused simulation.
            calls.append(
                read_call(
                    str(tc.get("id") or ""),
                    tc.get("name"),
                    tc.get("arguments") or {},
                    requestor=requestor,
                    source=file,
                    record=index,
                    field=f"{f}.arguments",
                )
            )
        fields["tool_calls"] = calls or None
        pending[:] = calls
        seen.update({c.id: c for c in calls if c.id})
    try:
        return [Message(**fields)]
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=file, record=index, prefix=where) from exc


def _list(value: Any, file: str, index: int, fld: str) -> list[Any]:
    """An optional list: `[]` when absent or null, else it must be a list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(f"not a list but {type(value).__name__}", file, index, fld)
    return value


def _episode(
    sim: Any,
    file: str,
    index: int,
    info: dict[str, Any],
    tasks: dict[str, dict[str, Any]],
    results_ts: str | None,
) -> Episode | str:
    if not isinstance(sim, dict):
        raise _bad("a simulation is an object", file, index, "simulation")
    for key in ("id", "task_id"):
        if sim.get(key) is None:
            raise _bad("missing", file, index, key)
        if not isinstance(sim[key], (str, int)) or isinstance(sim[key], bool):
            raise _bad(f"not a string but {type(sim[key]).__name__}", file, index, key)
    trial = sim.get("trial")
    if trial is not None and (not isinstance(trial, int) or isinstance(trial, bool)):
        raise _bad(f"not an integer but {type(trial).__name__}", file, index, "trial")
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
        if reward is not None and (not isinstance(reward, (int, float)) or isinstance(reward, bool)):
            raise _bad(f"not a number but {type(reward).__name__}", file, index, "reward_info.reward")
        outcome = Outcome(
            reward=reward,
            success=None if reward is None else abs(float(reward) - 1.0) < 1e-9,
            judged_by="tau2-reward",
            info={"reward_info": reward_info},
        )
    task_id = str(sim["task_id"])
    task = tasks.get(task_id)
    if task is not None and (task.get("evaluation_criteria") or {}).get("actions") is not None:
        outcome = outcome or Outcome()
        outcome.info["gold_actions"] = task["evaluation_criteria"]["actions"]
    kept = {k: v for k, v in sim.items() if k not in SIM_MODELLED and k not in SIM_DROPPED}
    ours = _our_marks(kept, file, index)
    env = info.get("environment_info") or {}
    agent_info = info.get("agent_info") or {}
    times = {k: None if k in ours.get("unrecorded", ()) else sim.get(k) for k in RECORDED_TIMES}
    _restore_ends(messages, ours.get("end_calls"), file, index)
    try:
        return Episode(
            id=str(sim["id"]),
            task_id=task_id,
            trial=trial or 0,
            domain=str(env.get("domain_name") or "unknown"),
            agent=agent_info.get("implementation"),
            model=agent_info.get("llm"),
            harness=HARNESS,
            messages=messages,
            termination_reason=ours.get("termination_reason", sim.get("termination_reason")),
            outcome=outcome,
            **times,
            agent_cost=sim.get("agent_cost"),
            user_cost=sim.get("user_cost"),
            source={
                "converter": CONVERTER,
                "file": Path(file).name,
                "record": index,
                "results_timestamp": results_ts,
                "tau2_sim": kept,
                "tau2_info": _info_without_policy(info),
            }
            | ({"tau2_task": task} if task is not None else {}),
        )
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=file, record=index) from exc


def _restore_ends(messages: list[Message], ends: Any, file: str, index: int) -> None:
    """Put back the harness `end_conversation` calls our writer left out (`info.toolshift.end_calls`)."""
    for k, end in enumerate(ends or []):
        where = f"info.{OUR_MARKS}.end_calls[{k}]"
        if (
            not isinstance(end, dict)
            or not isinstance(end.get("message"), int)
            or not isinstance(end.get("call"), dict)
        ):
            raise _bad("not an object with an int `message` and a `call`", file, index, where)
        if not 0 <= end["message"] < len(messages):
            raise _bad(f"message {end['message']} is not in the simulation", file, index, where)
        try:
            call = ToolCall.model_validate(end["call"])
        except ValidationError as exc:
            raise BadInputError.from_validation(exc, source=file, record=index) from None
        target = messages[end["message"]]
        calls = list(target.tool_calls or [])
        calls.insert(int(end.get("position") or 0), call)
        target.tool_calls = calls


def _our_marks(kept: dict[str, Any], file: str, index: int) -> dict[str, Any]:
    """Pop the `info.toolshift` marks our writer leaves (fields τ² requires that were not recorded)."""
    sim_info = kept.get("info")
    if not isinstance(sim_info, dict) or OUR_MARKS not in sim_info:
        return {}
    sim_info = dict(sim_info)
    marks = sim_info.pop(OUR_MARKS)
    if not isinstance(marks, dict) or not isinstance(marks.get("unrecorded", []), list):
        raise _bad("not an object with a list `unrecorded`", file, index, f"info.{OUR_MARKS}")
    kept["info"] = sim_info or None
    return marks


def _info_without_policy(info: dict[str, Any]) -> dict[str, Any]:
    env = dict(info.get("environment_info") or {})
    env.pop("policy", None)
    return {**info, "environment_info": env}


def read_results(
    path: Path, *, skip_bad: bool = False, report: Conversion | None = None, domain: str | None = None
) -> Tau2Run:
    """Read a τ²-bench results file or folder (any layout of the module's) into a `Tau2Run`. `domain`: the
    domain of a bare list of simulations or a single simulation (else the one τ² domain its name holds)."""
    path = Path(path)
    doc, records, layout = _records(path)
    results_file = str(_locate(path)[0])
    require_strict({k: v for k, v in doc.items() if k != "simulations"}, source=results_file)
    if layout in ("list", "simulation"):
        doc["info"] = _bare_info(path, domain)
    info = doc.get("info")
    if not isinstance(info, dict):
        raise BadInputError("missing `info` object", source=results_file, field="info")
    _check_info(info, results_file)
    tasks = doc.get("tasks")
    tasks = [] if tasks is None else tasks
    by_id = _tasks_by_id(tasks, results_file)
    report = report if report is not None else Conversion(converter=CONVERTER)
    run = Tau2Run(info=info, tasks=tasks, timestamp=doc.get("timestamp"), layout=layout)
    seen: dict[str, tuple[str, int]] = {}
    for file, index, sim in records:
        report.records += 1
        try:
            require_strict(sim, source=file, record=index)
            episode = _episode(sim, file, index, info, by_id, run.timestamp)
        except BadInputError as exc:
            report.skip_bad(exc, skip_bad=skip_bad)
            continue
        if isinstance(episode, str):
            report.skip(episode)
            continue
        if episode.id in seen:  # two simulations under one id would be one episode to every reader after
            first = seen[episode.id]
            report.skip_bad(
                BadInputError(
                    f"simulation id {episode.id!r} repeats ({first[0]} record {first[1]} has it)",
                    source=file,
                    record=index,
                    field="id",
                ),
                skip_bad=skip_bad,
            )
            continue
        seen[episode.id] = (file, index)
        run.episodes.append(episode)
    return run


def _bare_info(path: Path, domain: str | None) -> dict[str, Any]:
    """The `info` a bare list of simulations or one simulation lacks: the domain given or named by the file
    name, and the file's stem as the agent (τ² keeps both in `Results.info`, which such a file has not)."""
    if domain is None:
        named = {d for d in DOMAINS if re.search(rf"(?<![A-Za-z]){d}(?![A-Za-z])", path.name)}
        if len(named) != 1:
            raise BadInputError(
                "a bare list of simulations (or one simulation) records no domain, and its file name names "
                f"{'none' if not named else 'several'} of τ²'s ({', '.join(DOMAINS)}): pass --domain",
                source=str(path),
                field="domain",
            )
        domain = named.pop()
    return {"environment_info": {"domain_name": domain}, "agent_info": {"implementation": path.stem}}


def partial_run(run: Tau2Run) -> str | None:
    """What a run holds of the run its config describes (`info.num_trials` × its `tasks`), when less."""
    trials = run.info.get("num_trials")
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1 or not run.tasks:
        return None
    wanted = len(run.tasks) * trials
    ran = {(e.task_id, e.trial) for e in run.episodes}
    tasks_ran = {e.task_id for e in run.episodes}
    if len(ran) >= wanted:
        return None
    by_trial = sorted({e.trial for e in run.episodes})
    return (
        f"a partial run: {len(ran)} of the {wanted} simulations its config describes ({len(run.tasks)} tasks × "
        f"{trials} trials); {len(tasks_ran)} tasks ran, trials {', '.join(map(str, by_trial)) or 'none'}"
    )


def tau2_files(path: Path) -> list[Path]:
    """The runs under `path` as τ²'s tooling lays them out: a results file (a `Results`, a list of simulations,
    one simulation) or dir-layout folder as it is; a leaderboard submission folder (`submission.json`) as each
    of its trajectory files; any other folder as every run in it (a dir layout's `simulations/` files are its
    own, not runs of their own)."""
    path = Path(path)
    if not path.is_dir():
        return [require_regular(path, what="τ²-bench results file or folder")]
    if (path / SUBMISSION).is_file():
        return _submission_runs(path)
    if (path / "results.json").is_file():
        return [path]
    out: list[Path] = []
    taken: list[Path] = []
    for file in sorted(path.rglob("*.json")):
        if any(file.is_relative_to(t) for t in taken):
            continue
        folder = file.parent
        if file.name == SUBMISSION:
            out += _submission_runs(folder)
            taken.append(folder)
        elif file.name == "results.json":
            out.append(folder)
            taken.append(folder)
        elif folder.name == "simulations" and any(folder.parent.glob("*.json")):
            continue  # a dir layout's simulation files: τ² reads them with the results file beside them
        else:
            out.append(file)
    return sorted(set(out), key=str)


SUBMISSION = "submission.json"


def _submission_runs(folder: Path) -> list[Path]:
    """A leaderboard submission's runs: each file `submission.json`'s `trajectory_files` names under
    `trajectories/` (a text run's JSON file, a voice run's folder)."""
    raw = read_json(folder / SUBMISSION, what="τ²-bench leaderboard submission")
    where = str(folder / SUBMISSION)
    files = raw.get("trajectory_files") if isinstance(raw, dict) else None
    if not isinstance(files, dict) or not files:
        raise BadInputError("a submission without `trajectory_files`: no trajectories to convert", source=where,
                            field="trajectory_files")  # fmt: skip
    out = []
    for domain, name in sorted(files.items()):
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
            raise BadInputError(
                "not a file name in trajectories/", source=where, field=f"trajectory_files.{domain}"
            )
        run = folder / "trajectories" / name
        if not run.exists():
            raise BadInputError(f"trajectories/{name} is not in the submission", source=where,
                                field=f"trajectory_files.{domain}")  # fmt: skip
        out.append(run)
    return out


def tau2_catalog(domain: str, called: set[str]) -> tuple[ToolCatalog, list[str]]:
    """The domain's catalog: τ²'s table for airline/retail (names a run made up: `exists: false`, neither),
    else the verb rule; and the names left unlabelled."""
    source = "verb rule over the tools this run called"
    table = tau2_table(domain)
    if table is None:
        return catalog_by_verb(domain, called, source=source)
    catalog = tau_catalog(domain, table, "tau2-bench tool implementations")
    made_up = [
        CatalogTool(name=n, effect="neither", origin="source", exists=False,
                    note="not a tau2-bench tool of this domain: its environment refuses the call")
        for n in sorted(called - catalog.effects().keys())
    ]  # fmt: skip
    return catalog.merged(made_up), []


def convert_tau2(path: Path, *, skip_bad: bool = False, domain: str | None = None) -> Conversion:
    """Convert a τ²-bench results file or folder into episodes and a catalog per domain; a partial run, and
    results τ²'s leaderboard trimmed, are said in the notes."""
    conv = Conversion(converter=CONVERTER, inputs=[str(path)])
    run = read_results(Path(path), skip_bad=skip_bad, report=conv, domain=domain)
    conv.episodes = run.episodes
    if (partial := partial_run(run)) is not None:
        conv.notes.append(f"{Path(path).name}: {partial}")
    trimmed = sum(
        1
        for e in run.episodes
        for m in e.messages
        if m.role == "tool" and m.content and TRIMMED.search(m.content)
    )
    if trimmed:
        conv.notes.append(
            f"{Path(path).name}: {trimmed} tool results trimmed for size by τ²'s leaderboard (their middle left "
            "out): kept as text, so values in them are not seen"
        )
    called: dict[str, set[str]] = {}
    for episode in run.episodes:
        names = called.setdefault(episode.domain, set())
        names |= {c.name for m in episode.messages for c in m.tool_calls or []}
    for name, names in called.items():
        conv.catalogs[name] = tau2_catalog(name, names)[0]
    conv.note_unknown_tools()
    return conv
