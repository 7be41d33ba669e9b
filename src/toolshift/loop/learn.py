"""What the loop learns after a version, from that version's recordings alone.

* `judge`: a recording judged by the benchmark's verdict (`Task.verdict` on the world diff the gateway
  recorded): success, and strict success (no collateral write). Judged successes stand in for a deployment's
  confirmed successes (a user's thumbs-up, a closed ticket).
* `training_episode`: what Steward learns from. The gateway sees calls, not words, so its recording has no
  user turns and Steward could bind no argument to a fact; the training episode is the recording's calls and
  results with the conversation's user turns from the deployment's own chat log (the agent-side episode),
  and only when the two agree call for call.
* `maintain_library`: Steward's incremental maintenance (`Maintainer.initialise` on the first version with
  successes, `maintain` after) onto a copy of the previous library.
* `learn_flows`: a flow per domain learned anew from the version's recordings (`toolshift.flows.learn`),
  for the next version's catalog as its gateway lists it: every version changes some tool of every domain
  and the flows middleware serves a flow only over the catalog it was learned for, so the calls of tools
  the next version no longer has are left out of the flow (counted), and the rest is served.
* `evolve_children`: each failed task seeds one structural child (`toolshift.evolve`: proposed, rendered,
  parsed, verified on a fresh world); the loop serves the children to the same agent at the same version, and
  the children solved by their verified Δgold become more training episodes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.models import Task
from toolshift.traces.episode import Episode, Outcome


@dataclass(frozen=True)
class Judged:
    success: bool
    strict: bool
    why: str = ""


def judge(task: Task, recording: Episode | None) -> Judged:
    """The benchmark's verdict on what the gateway recorded (no recording, or an unknown diff: a failure)."""
    from toolshift.models import RowChange

    if recording is None:
        return Judged(False, False, "no call reached the gateway")
    if recording.world_diff is None:
        return Judged(False, False, "the recording's world diff is incomplete")
    verdict = task.verdict([RowChange.model_validate(c.model_dump()) for c in recording.world_diff])
    ok = not verdict.missing
    return Judged(
        ok, ok and not verdict.collateral, "" if ok else f"{len(verdict.missing)} gold change(s) missing"
    )


def _calls(ep: Episode) -> list[tuple[str, str]]:
    import json

    out = []
    for m in ep.messages:
        if m.role == "assistant":
            for c in m.tool_calls or []:
                out.append((c.name, json.dumps(c.arguments, sort_keys=True, default=str)))
    return out


def training_episode(agent: Episode, recording: Episode, judged: Judged) -> Episode | None:
    """The recording with the conversation's user turns, marked as the verdict says; None when the agent's
    world calls and the gateway's recorded calls disagree (the join would be unsound)."""
    world_calls = [c for c in _calls(agent) if c in set(_calls(recording))]
    if world_calls != _calls(recording):
        return None
    users = [m for m in agent.messages if m.role == "user"]
    messages = [*users[:1], *recording.messages, *users[1:]] if users else list(recording.messages)
    # user turns first and last keep the request and every stated fact; the calls keep their order
    return recording.model_copy(
        update={
            "task_id": agent.task_id,
            "messages": messages,
            "outcome": Outcome(
                success=judged.success, judged_by="delta-cover", info={"strict": judged.strict}
            ),
        }
    )


def maintain_library(
    previous: Path | None, out: Path, build: Path, version: int, episodes: list[Episode],
    next_version: int | None = None,
) -> dict[str, Any] | None:  # fmt: skip
    """Steward's library after `version` (written atomically to `out`), or None while it has nothing to hold.
    Returns the version's work: episodes seen, distilled, edits by operation, skills per level.

    With `next_version`, the library is then kept in step with that version's catalog as its gateway will
    list it, before any episode of it (D213): a deployment sees the new tools/list when it changes, so
    Steward renames, rebinds and deactivates from the catalog alone (no episode), as flows are learned for the
    next version's catalog. Without it the library served on the next version still binds the tools as this
    version had them (a parameter renamed there fails every plan that calls it)."""
    from toolshift.steward.catalog import version_catalog
    from toolshift.steward.library import Library, copy_library
    from toolshift.steward.maintain import Maintainer, successful

    if previous is None and not successful(episodes):
        return None
    catalog = version_catalog(build, version)
    tmp = out.with_name(out.name + ".build")
    out.parent.mkdir(parents=True, exist_ok=True)
    if previous is None:
        lib = Library.create(tmp, name="loop", replace_existing=True)
        work = Maintainer(lib).initialise(catalog, episodes)
    else:
        lib = copy_library(previous, tmp)
        same = lib.catalog_version == version  # already brought in step with this catalog (D213)
        work = (Maintainer(lib).maintain_at if same else Maintainer(lib).maintain)(catalog, episodes)
    ahead: dict[str, Any] = {}
    if next_version is not None:
        moved = Maintainer(lib).maintain(version_catalog(build, next_version), [])
        ahead = {"for_version": next_version, "edits": moved.edits, "by_op": dict(moved.by_op)}
    figures = {
        "episodes": work.episodes, "distilled": work.distilled, "edits": work.edits,
        "by_op": dict(work.by_op),
        "skills_written": sum(n for op, n in work.by_op.items() if op in ("add", "revise")),
        "skills": {lvl: len(lib.skills(lvl)) for lvl in ("planning", "atomic", "tool")},
        "active": len(lib.skills(active=True)),
        **({"next_catalog": ahead} if ahead else {}),
    }  # fmt: skip
    lib.close()
    tmp.replace(out)
    return figures


def learn_flows(
    recordings: dict[str, list[Episode]], catalogs: dict[str, Path], out: Path
) -> tuple[dict[str, Path], dict[str, int]]:
    """A flow per domain from its successful recordings, learned for `catalogs` (the next version's, as its
    gateway lists them): domain → flow file, and the calls of tools that catalog no longer has, by domain
    (`toolshift.flows.timeline.Unlisted`: they are neither habit nor binding of the flow)."""
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.timeline import Catalog, Unlisted, timelines
    from toolshift.traces.catalog import load_catalog

    flows, gone = {}, {}
    for domain, eps in sorted(recordings.items()):
        eps = [e for e in eps if e.outcome is not None and e.outcome.success]  # flows learn from successes
        if not eps or domain not in catalogs:
            continue
        catalog = Catalog.of(load_catalog(catalogs[domain]))
        unlisted = Unlisted()
        flow = learn_flow(timelines(eps, catalog, unlisted), catalog, unlisted=unlisted)
        flows[domain] = save_flow(flow, out / f"{domain}.flow.json")
        gone[domain] = sum(unlisted.by_tool.values())
    return flows, gone


@dataclass
class Child:
    task: Task
    parent: str
    operator: str


def evolve_children(failed: list[Task], *, seed: int, limit: int) -> tuple[list[Child], dict[str, int]]:
    """One verified child per failed task (the first `limit`), made by the structural proposer from a parent
    whose completion was 0 (so an easier one); counts of what was made and why not."""
    from toolshift.errors import BadInputError
    from toolshift.evolve.edits import EditError
    from toolshift.evolve.program import ProgramError, parse_program, render_program, spec_from_task
    from toolshift.evolve.structural import Lineage, StructuralProposer
    from toolshift.evolve.verify import Rejected, verify

    proposer = StructuralProposer()
    out: list[Child] = []
    counts = {"seeds": 0, "verified": 0, "no operator": 0, "rejected": 0, "needs a starting state": 0}
    for task in failed[:limit]:
        counts["seeds"] += 1
        rng = random.Random(f"{seed}:{task.id}")
        spec = spec_from_task(task.public_request, task.instruction, task.gold_path, turns=task.turns)
        try:
            made = proposer.propose(task, spec, 0.0, Lineage(), rng)
            domain, child_spec = parse_program(render_program(task.domain, made.spec))
            verified = verify(f"{task.id}~{made.operator}", domain, child_spec, root=task)
        except EditError:
            counts["no operator"] += 1
            continue
        except (Rejected, ProgramError, BadInputError):
            counts["rejected"] += 1
            continue
        if verified.initial_state:  # a version world is served fresh: no starting-state calls before it
            counts["needs a starting state"] += 1
            continue
        counts["verified"] += 1
        child = verified.task.model_copy(update={"split": "train"})
        out.append(Child(child, task.id, made.operator))
    return out, counts
