"""Other benchmarks' environments served as toolshift worlds: BFCL multi-turn and AgentDojo, judged by their own checks.

World names: `bfcl:<entry id>` (`bfcl:multi_turn_base_0`) and `agentdojo:<suite>.<user task>`
(`agentdojo:banking.user_task_0`); the family names `bfcl` and `agentdojo` stand for every world of the
family, one per task (`toolshift run --world bfcl` opens each task's own world). Each family needs its
package, behind an extra (`toolshift[bfcl]`, `toolshift[agentdojo]`); without it a family is listed as
unavailable and its worlds are refused with a one-line error naming the extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.world.external.objects import ExternalDomain, ObjectWorld

FAMILIES = ("bfcl", "agentdojo")
JUDGES = {"bfcl-multi-turn-checker": "bfcl", "agentdojo-utility": "agentdojo"}


def is_external(name: str) -> bool:
    """A family name or a `family:world` name."""
    return name in FAMILIES or (name.split(":", 1)[0] in FAMILIES and ":" in name)


@dataclass(frozen=True)
class FamilyStatus:
    family: str
    title: str
    available: bool
    extra: str
    worlds: int | None
    """How many worlds (tasks) the installed package offers; None when it is not installed."""
    note: str


def family_status() -> list[FamilyStatus]:
    """Each family, whether its package is installed, and how many worlds it offers."""
    from toolshift.world.external import agentdojo, bfcl

    out = []
    if bfcl.available():
        count = sum(len(bfcl.entries(c)) for c in bfcl.CATEGORIES)
        note = f"categories {', '.join(c.removeprefix('multi_turn_') for c in bfcl.CATEGORIES)}"
    else:
        count, note = None, "not installed: pip install 'toolshift[bfcl]'"
    out.append(FamilyStatus("bfcl", "BFCL multi-turn (bfcl-eval)", bfcl.available(), "bfcl", count, note))
    if agentdojo.available():
        count = sum(len(agentdojo.task_ids(s)) for s in agentdojo.SUITES)
        note = f"{agentdojo.BENCHMARK_VERSION}: {', '.join(agentdojo.SUITES)} (benign user tasks)"
    else:
        count, note = None, "not installed: pip install 'toolshift[agentdojo]'"
    out.append(
        FamilyStatus("agentdojo", "AgentDojo (agentdojo)", agentdojo.available(), "agentdojo", count, note)
    )
    return out


def _split(name: str) -> tuple[str, str]:
    family, sep, rest = name.partition(":")
    if family not in FAMILIES or not sep or not rest:
        raise BadInputError(
            f"not an external world name {name!r}: expected bfcl:<entry id> or agentdojo:<suite>.<user task>"
        )
    return family, rest


def require_family(family: str) -> None:
    """A one-line error naming the extra when the family's package is not installed."""
    from toolshift.world.external import agentdojo, bfcl

    if family not in FAMILIES:
        raise BadInputError(f"unknown external family {family!r} (known: {', '.join(FAMILIES)})")
    (bfcl if family == "bfcl" else agentdojo).require()


def load_external(name: str) -> ExternalDomain:
    """The world definition named `bfcl:<id>` or `agentdojo:<suite>.<task>`."""
    family, rest = _split(name)
    if family == "bfcl":
        from toolshift.world.external import bfcl

        bfcl.require()
        return bfcl.load_domain(rest)
    from toolshift.world.external import agentdojo

    agentdojo.require()
    return agentdojo.load_domain(rest)


def open_world(name: str) -> ObjectWorld:
    return ObjectWorld(load_external(name))


def world_of_task(family: str, task: Task) -> str:
    """The world a family's task runs in: its own (`bfcl:<task id>`, `agentdojo:<task id>`)."""
    expected = JUDGES.get(task.judge or "")
    if expected != family:
        raise BadInputError(
            f"task {task.id!r} is not one of {family}'s tasks (judge {task.judge!r}): export them with "
            f"`toolshift world tasks {family}`",
            record=task.id,
            field="judge",
        )
    return f"{family}:{task.id}"


@dataclass
class ExportReport:
    tasks: list[Task]
    failed: list[tuple[str, str]]
    """(task id, reason) for every task that could not be exported: never dropped silently."""


def export_tasks(
    family: str,
    *,
    subsets: list[str] | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ExportReport:
    """A family's tasks as toolshift tasks (gold path replayed on the world), with the ones that failed.

    `subsets`: BFCL categories (`base`, `long_context`, `miss_func`, `miss_param`, or full names) or
    AgentDojo suites; `limit`: at most this many per subset (in the benchmark's order).
    """
    report = ExportReport([], [])
    for task_id, make in _task_makers(family, subsets, limit):
        try:
            report.tasks.append(make())
        except BadInputError as exc:
            report.failed.append((task_id, str(exc)))
        if progress is not None:
            progress(task_id)
    return report


def count_tasks(family: str, subsets: list[str] | None = None, limit: int | None = None) -> int:
    return sum(1 for _ in _task_makers(family, subsets, limit))


def _task_makers(
    family: str, subsets: list[str] | None, limit: int | None
) -> Iterator[tuple[str, Callable[[], Task]]]:
    if family == "bfcl":
        from toolshift.world.external import bfcl

        bfcl.require()
        chosen = subsets or list(bfcl.CATEGORIES)
        for sub in chosen:
            category = sub if sub.startswith("multi_turn_") else f"multi_turn_{sub}"
            for e in bfcl.entries(category)[:limit]:
                yield e.id, _bind(bfcl.task_for, e)
    elif family == "agentdojo":
        from toolshift.world.external import agentdojo

        agentdojo.require()
        for suite_name in subsets or list(agentdojo.SUITES):
            for task_id in agentdojo.task_ids(suite_name)[:limit]:
                name = f"{suite_name}.{task_id}"
                yield name, _bind(agentdojo.task_for, name)
    else:
        raise BadInputError(f"unknown external family {family!r} (known: {', '.join(FAMILIES)})")


def _bind(fn: Callable[[Any], Task], arg: Any) -> Callable[[], Task]:
    return lambda: fn(arg)


@dataclass
class Transcript:
    """What another benchmark's check reads from an episode, in plain values.

    `turns[t][s]` are the (tool, arguments) calls of the agent's step s in user turn t; `calls` all of them in
    order; `final_text` the content of the agent's last message.
    """

    turns: list[list[list[tuple[str, Any]]]]
    calls: list[tuple[str, Any]]
    final_text: str


def judge_task(task: Task, transcript: Transcript, world: ObjectWorld | None = None) -> dict[str, Any]:
    """The task's own benchmark's verdict: `{reward, success, judged_by, info}`.

    BFCL's checker re-executes the calls from the entry's initial state, as BFCL's eval runner does, so it
    needs no world. AgentDojo's utility reads the environment before and after: `world` is the episode's
    own world (in-process runs); without it (a run over MCP at a URL) the calls are replayed in order on a
    fresh world of the task, and `info.replayed` says so.
    """
    family = JUDGES.get(task.judge or "")
    if family is None:
        raise BadInputError(f"unknown judge {task.judge!r}", record=task.id, field="judge")
    if family == "bfcl":
        from toolshift.world.external import bfcl

        # an evolved task names the entry it comes from and how it regroups the entry's turns
        origin = task.difficulty.get("bfcl_entry") if task.difficulty else None
        e = bfcl.entry(str(origin or task.id))
        groups = task.difficulty.get("bfcl_turn_groups") if task.difficulty else None
        if groups is not None:
            e = bfcl.grouped_entry(e, groups)
        verdict = bfcl.judge(e, transcript.turns)
        valid = bool(verdict.pop("valid"))
        return {"reward": float(valid), "success": valid, "judged_by": task.judge, "info": verdict}
    from toolshift.world.external import agentdojo

    replayed = world is None
    if world is None:
        world = ObjectWorld(agentdojo.load_domain(task.id))
        for name, args in transcript.calls:
            world.call(name, args if isinstance(args, dict) else {})
    pre = agentdojo.load_domain(task.id).fresh_state()
    verdict = agentdojo.judge(task.id, pre, world.state, transcript.final_text, transcript.calls)  # type: ignore[arg-type]
    info = {**verdict.info, "replayed": replayed}
    return {
        "reward": float(verdict.utility),
        "success": verdict.utility,
        "judged_by": task.judge,
        "info": info,
    }
