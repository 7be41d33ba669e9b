"""`toolshift loop BUILD --model M --out DIR`: the loop's runs, version by version, every condition (resumable).

Layout of DIR (docs/formats.md, "Loop run"):

    DIR/loop.json                              the run's definition (`toolshift.loop/1`); a resume must match it
    DIR/<condition>/v<n>/episodes.jsonl        the agent's episodes of version n (conversation, `source.loop`)
    DIR/<condition>/v<n>/recordings.jsonl      the gateway's recordings of them (what the loop learns from)
    DIR/<condition>/v<n>/children.*            evolution's children of version n: tasks, episodes, recordings
    DIR/<condition>/v<n>/learned.json          what was learned after version n (written last: the step's mark)
    DIR/<condition>/libraries/v<n>.sqlite      Steward's library after version n (served on the next)
    DIR/<condition>/flows/v<n>/<domain>.*      the flows learned from version n (served on the next)
    DIR/results.json                           the figures (`toolshift.loop-results/1`, toolshift.loop.results)

Conditions: `off` (the agent alone), `steward` (the library learns from the agent's judged successes),
`flows` (flows learned from the recordings), `evolve` (the library learns only from evolution's solved
children), `all` (the three). Every condition serves the same tasks at the same versions; on the first
version nothing has been learned yet, so every condition's gateway is the same: its episodes are served once,
by the first condition listed, and shared by the others (`source.loop.shared_from`). An episode is appended as it ends and a
finished one is never redone; a learning step is redone until its `learned.json` exists.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.agents.executor import Executor, Job, Lost, NodeProgress
from toolshift.errors import BadInputError
from toolshift.loop.learn import (
    Judged,
    evolve_children,
    judge,
    learn_flows,
    maintain_library,
    training_episode,
)
from toolshift.loop.marks import gateway_calls
from toolshift.loop.serve import Served, serve_episode
from toolshift.models import Task
from toolshift.terminal import ProgressHook
from toolshift.traces.episode import Episode, Outcome

LOOP_FORMAT = "toolshift.loop/1"
CONDITIONS: dict[str, frozenset[str]] = {
    "off": frozenset(),
    "steward": frozenset({"steward"}),
    "flows": frozenset({"flows"}),
    "evolve": frozenset({"evolve"}),
    "all": frozenset({"steward", "flows", "evolve"}),
}
STEWARD_TOOLS = ("steward_plan", "retrieve_tools", "explore_capabilities")
"""(label, total) when a stage starts; (label, None) as each item of it ends."""


@dataclass
class LoopSpec:
    build: Path
    out: Path
    model: str
    versions: list[int]
    tasks: list[str]
    conditions: list[str]
    max_turns: int = 12
    children: int = 4
    """Failed tasks a version's evolution step seeds (each makes at most one child)."""
    seed: int = 0
    max_tokens: int | None = None
    """Cap on one reply's output tokens for API models (None: `toolshift run`'s default)."""
    handoff: bool = True
    """With a library, the harness hands Steward's plan to the model (D196); False: the model must ask."""
    meta: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    """Processes a version's episodes are served in (`toolshift.agents.workers`); not part of the definition:
    the episodes are the same, only the order they are appended in differs."""

    def definition(self) -> dict[str, Any]:
        from toolshift.bench.ecosystem.store import build_fingerprint

        return {
            "format": LOOP_FORMAT, "build": build_fingerprint(self.build), "model": self.model,
            "versions": self.versions, "tasks": self.tasks, "max_turns": self.max_turns,
            "children": self.children, "seed": self.seed, "handoff": self.handoff,
            **({"max_tokens": self.max_tokens} if self.max_tokens is not None else {}),
        }  # fmt: skip


def test_tasks(build: Path, versions: list[int], sample: int | None, seed: int = 0) -> list[str]:
    """The build's test tasks whose reference paths replay at every version served (the benchmark scores
    only those), all or a seeded sample of `sample`, in id order."""
    from toolshift.bench.ecosystem.paths import load_references
    from toolshift.bench.ecosystem.store import load_ecosystem

    eco = load_ecosystem(build)
    bad = [v for v in versions if not 1 <= v <= eco.config.versions]
    if bad:
        raise BadInputError(f"the ecosystem has versions 1..{eco.config.versions}", field="versions")
    _, records = load_references(build)
    valid: dict[str, set[int]] = {}
    for r in records:
        if r.split == "test" and r.valid:
            valid.setdefault(r.task_id, set()).add(r.version)
    ids = sorted(t for t, vs in valid.items() if set(versions) <= vs)
    if sample is not None and sample < len(ids):
        ids = sorted(random.Random(seed).sample(ids, sample))
    return ids


class Loop:
    """One loop run folder. Its episodes are served where `executor` says (`toolshift.agents.executor`; by
    default `spec.workers` local processes); learning stays in this process."""

    def __init__(
        self,
        spec: LoopSpec,
        progress: ProgressHook | None = None,
        *,
        executor: Executor | None = None,
        nodes: NodeProgress | None = None,
    ) -> None:
        from toolshift.bench.ecosystem.settings import VersionWorlds

        self.spec = spec
        self.executor = executor or Executor.choose("local", spec.workers)
        self.nodes = nodes
        self.progress = progress or (lambda _label, _n: None)
        self.ran = 0
        """Episodes this process served (shared and resumed ones not counted)."""
        self.worlds = VersionWorlds(spec.build)
        from toolshift.bench.ecosystem.store import load_ecosystem

        eco = load_ecosystem(spec.build)
        self.eco_id = eco.id
        all_tasks = {t.id: t for d in eco.domains for t in self.worlds.tasks(d)}
        missing = [t for t in spec.tasks if t not in all_tasks]
        if missing:
            raise BadInputError(f"task {missing[0]!r} is not in this build", source=str(spec.build))
        self.tasks: list[Task] = [all_tasks[t] for t in spec.tasks]
        for c in spec.conditions:
            if c not in CONDITIONS:
                raise BadInputError(
                    f"unknown condition {c!r}: use {', '.join(CONDITIONS)}", field="conditions"
                )

    # --- the run folder ------------------------------------------------------------------------------

    def check_folder(self) -> None:
        from toolshift.fileio import read_json, write_text_atomic

        path = self.spec.out / "loop.json"
        want = self.spec.definition()
        if path.exists():
            have = read_json(path, what="loop definition")
            diff = sorted(k for k in want if have.get(k) != want[k])
            if diff:
                raise BadInputError(
                    f"this folder holds another loop run (differs in {', '.join(diff)}); use a new --out",
                    source=str(path), field=diff[0],
                )  # fmt: skip
            if set(have.get("conditions", [])) != set(self.spec.conditions):
                want["conditions"] = sorted(set(have.get("conditions", [])) | set(self.spec.conditions))
        self.spec.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({**want, "conditions": want.get("conditions", self.spec.conditions)},
                                           indent=1) + "\n")  # fmt: skip

    def vdir(self, condition: str, version: int) -> Path:
        return self.spec.out / condition / f"v{version}"

    def _next(self, version: int) -> int | None:
        k = self.spec.versions.index(version)
        return self.spec.versions[k + 1] if k + 1 < len(self.spec.versions) else None

    def _previous(self, version: int) -> int | None:
        k = self.spec.versions.index(version)
        return self.spec.versions[k - 1] if k else None

    def served(self, condition: str, version: int, domain: str) -> tuple[Served, str]:
        """What the gateway mounts for `condition` at `version` (what was learned on the version before),
        and why a flow is not served when it is not."""
        prev = self._previous(version)
        if prev is None:
            return Served(), "nothing learned yet"
        parts = CONDITIONS[condition]
        lib = self.spec.out / condition / "libraries" / f"v{prev}.sqlite"
        library = lib if ({"steward", "evolve"} & parts) and lib.exists() else None
        flow = catalog = None
        why = ""
        if "flows" in parts:
            f = self.spec.out / condition / "flows" / f"v{prev}" / f"{domain}.flow.json"
            c = self.spec.out / condition / "flows" / f"v{prev}" / f"{domain}.catalog.json"
            if not f.exists():
                why = "no flow learned"
            elif self._tool_names(c) != set(self.worlds.catalog(domain, version).tools):
                why = "the flow was learned for another catalog"
            else:
                flow, catalog = f, c
        return Served(library, flow, catalog), why

    @staticmethod
    def _tool_names(catalog: Path) -> set[str]:
        from toolshift.traces.catalog import load_catalog

        return {t.name for t in load_catalog(catalog).tools}

    # --- episodes ------------------------------------------------------------------------------------

    def _done(self, path: Path) -> dict[str, Episode]:
        from toolshift.traces.store import iter_episodes

        return {e.id: e for e in iter_episodes(path, skip_bad=True)} if path.exists() else {}

    def run_episodes(self, condition: str, version: int, tasks: list[Task], kind: str) -> None:
        """Serve `tasks` at `version` under `condition`; `kind` is "episodes" or "children"."""
        from toolshift.traces.store import EpisodeWriter, write_episodes

        d = self.vdir(condition, version)
        agent_path, rec_path = d / f"{kind}.jsonl", d / f"{kind}.recordings.jsonl"
        if kind == "episodes":
            rec_path = d / "recordings.jsonl"
        meta = {"ecosystem": self.eco_id, "loop": condition, "version": version, "model": self.spec.model}
        for p in (agent_path, rec_path):
            if not p.exists():
                d.mkdir(parents=True, exist_ok=True)
                write_episodes(p, [], meta=meta)
        done = self._done(agent_path)
        todo = [t for t in tasks if self._eid(kind, t, version) not in done]
        label = f"{condition} v{version} {kind}"
        self.progress(label, len(todo))
        first = self.spec.conditions[0]
        shared = (
            self._done(self.vdir(first, version) / "episodes.jsonl")
            if kind == "episodes" and version == self.spec.versions[0] and condition != first
            else {}
        )
        shared_recs = self._done(self.vdir(first, version) / "recordings.jsonl") if shared else {}
        to_serve = []
        for task in todo:
            eid = self._eid(kind, task, version)
            if eid in shared:
                # the first version: nothing learned yet, every condition's gateway is the same one, so it is
                # served once (by the first condition) and its episodes shared, not run again
                ep = shared[eid]
                ep.source["loop"] = {**ep.source["loop"], "condition": condition, "shared_from": first}
                if eid in shared_recs:
                    with EpisodeWriter(rec_path, append=True) as w:
                        w.write(shared_recs[eid])
                with EpisodeWriter(agent_path, append=True) as w:
                    w.write(ep)
                self.progress(label, None)
            else:
                to_serve.append(task)

        def keep(agent_ep: Episode, recording: Episode | None) -> None:
            self.ran += 1
            if recording is not None:
                with EpisodeWriter(rec_path, append=True) as w:
                    w.write(recording)
            with EpisodeWriter(agent_path, append=True) as w:
                w.write(agent_ep)
            self.progress(label, None)

        if not to_serve:
            return
        ex = self.executor
        # what each domain's gateway mounts is decided here, from this folder, and sent with the batch
        batch = {}
        for domain in sorted({t.domain for t in to_serve}):
            got, why = self.served(condition, version, domain)
            parts = [ex.asset(x) if x is not None else None for x in (got.library, got.flow, got.catalog)]
            batch[domain] = (*parts, why)
        spec = _BatchSpec(self.spec, ex.asset(self.spec.build), condition, version, kind, batch, ex.is_ray)
        _kept[_batch_key(spec)] = self  # a batch served in this process uses this loop itself

        def lost(task: Task, why: Lost) -> None:
            from toolshift.agents.executor import lost_episode

            ep = lost_episode(task, episode_id=self._eid(kind, task, version), trial=0, agent_name=self.spec.model,
                              lost=why)  # fmt: skip
            ep.ecosystem_version = f"{self.eco_id}/v{version}"
            ep.source["loop"] = {"condition": condition, "version": version, "kind": kind, "success": False,
                                 "strict": False, "why": f"lost: {why.reason}", "seconds": 0.0, "lookups_made": 0,
                                 "lookups_used": 0, "steward_calls": 0, "gateway_calls": []}  # fmt: skip
            keep(ep, None)

        ex.run(
            Job(_open_batch, _serve_item, spec, name=f"loop {label}"), to_serve, key=lambda t: t.id,
            on_result=lambda _t, text: keep(*_from_wire(text)), on_lost=lost, progress=self.nodes,
        )  # fmt: skip

    def serve(
        self, condition: str, version: int, task: Task, kind: str, served: tuple[Served, str] | None = None
    ) -> tuple[Episode, Episode | None]:
        """One task served at `version` under `condition`: the agent's episode (with `source.loop`) and the
        gateway's recording of it, judged, or None. `served`: what the gateway mounts, when the caller
        decided it (else read from this folder)."""
        eid = self._eid(kind, task, version)
        d = self.vdir(condition, version)
        served, why_no_flow = served or self.served(condition, version, task.domain)
        record = d / "gateway" / eid.replace(":", "_")
        agent_ep, recording, seconds = asyncio.run(
            serve_episode(
                self.spec.build, task, version, served, record, model=self.spec.model, episode_id=eid,
                max_turns=self.spec.max_turns, seed=self.spec.seed, max_tokens=self.spec.max_tokens,
                handoff=self.spec.handoff,
            )
        )  # fmt: skip
        judged = judge(task, recording)
        calls = recording.source.get("gateway", {}).get("calls", []) if recording else []
        agent_ep.ecosystem_version = f"{self.eco_id}/v{version}"
        agent_ep.source["loop"] = {
            "condition": condition, "version": version, "kind": kind, "success": judged.success,
            "strict": judged.strict, "why": judged.why, "seconds": round(seconds, 3),
            "lookups_made": sum(len(c.get("lookups", [])) for c in calls),
            "lookups_used": sum(1 for c in calls if c.get("answered_by") == "lookup"),
            "steward_calls": sum(1 for m in agent_ep.messages if m.role == "assistant"
                                 for c in m.tool_calls or [] if c.name in STEWARD_TOOLS),
            "library": str(served.library.name) if served.library else None,
            "flow": bool(served.flow), "flow_not_served": why_no_flow if "flows" in CONDITIONS[condition] else "",
            "followed": agent_ep.source.get("followed"), "plan": agent_ep.source.get("plan"),
            "handoff": agent_ep.source.get("handoff"),
            "gateway_calls": gateway_calls(recording) if recording is not None else [],
        }  # fmt: skip
        if recording is not None:
            recording = recording.model_copy(update={
                "task_id": task.id, "id": eid, "ecosystem_version": agent_ep.ecosystem_version,
                "outcome": Outcome(success=judged.success, judged_by="delta-cover",
                                   info={"strict": judged.strict})})  # fmt: skip
        shutil.rmtree(record, ignore_errors=True)
        return agent_ep, recording

    @staticmethod
    def _eid(kind: str, task: Task, version: int) -> str:
        return f"{'loop' if kind == 'episodes' else 'child'}:{task.id}:v{version}"

    # --- learning ------------------------------------------------------------------------------------

    def _learned_but_gone(self, condition: str, version: int, figures: dict[str, Any]) -> Path | None:
        """The first file a finished learning step wrote (its library, a flow and its catalog) that is missing."""
        parts, base = CONDITIONS[condition], self.spec.out / condition
        steward = figures.get("steward")
        if {"steward", "evolve"} & parts and isinstance(steward, dict) and "note" not in steward:
            lib = base / "libraries" / f"v{version}.sqlite"
            if not lib.is_file():
                return lib
        learned = figures.get("flows")
        for domain in learned.get("domains", []) if "flows" in parts and isinstance(learned, dict) else []:
            for name in (f"{domain}.flow.json", f"{domain}.catalog.json"):
                if not (base / "flows" / f"v{version}" / name).is_file():
                    return base / "flows" / f"v{version}" / name
        return None

    def learn(self, condition: str, version: int) -> dict[str, Any]:
        """The learning step after `version` (its `learned.json`, reused when present)."""
        from toolshift.fileio import read_json, write_text_atomic
        from toolshift.taskfile import read_tasks, write_tasks

        d = self.vdir(condition, version)
        mark = d / "learned.json"
        if mark.exists():
            figures = dict(read_json(mark, what="learning step"))
            gone = self._learned_but_gone(condition, version, figures)
            if gone is not None:
                raise BadInputError(
                    f"learned after version {version} (its learned.json says so) and gone: a resume would serve "
                    f"version {version} + 1 without it; delete {mark} to learn it again",
                    source=str(gone),
                )
            return figures
        parts = CONDITIONS[condition]
        ids = [self._eid("episodes", t, version) for t in self.tasks]
        agents = _in_order(self._done(d / "episodes.jsonl"), ids)
        recordings = _in_order(self._done(d / "recordings.jsonl"), ids)
        by_id = {t.id: t for t in self.tasks}
        own: list[Episode] = []
        failed: list[Task] = []
        joined_out = 0
        for eid, ep in agents.items():
            task = by_id[ep.task_id]
            rec = recordings.get(eid)
            judged = Judged(bool(ep.source["loop"]["success"]), bool(ep.source["loop"]["strict"]))
            if not judged.success:
                failed.append(task)
            if rec is not None:
                joined = training_episode(ep, rec, judged)
                joined_out += joined is None
                if joined is not None:
                    own.append(joined)
        figures: dict[str, Any] = {"condition": condition, "version": version, "unjoinable": joined_out}
        training: list[Episode] = list(own) if "steward" in parts else []
        if "evolve" in parts:
            tasks_path = d / "children.tasks.jsonl"
            if tasks_path.exists():
                children = read_tasks(tasks_path, allow_empty=True)  # a step whose evolution made none
                counts = read_json(d / "children.counts.json", what="evolution counts")
            else:
                made, counts = evolve_children(sorted(failed, key=lambda t: t.id), seed=self.spec.seed,
                                               limit=self.spec.children)  # fmt: skip
                children = [c.task for c in made]
                write_tasks(tasks_path, children)
                write_text_atomic(d / "children.counts.json", json.dumps(counts, indent=1))
            self.run_episodes(condition, version, children, "children")
            c_agents = _in_order(
                self._done(d / "children.jsonl"), [self._eid("children", t, version) for t in children]
            )
            c_recs = self._done(d / "children.recordings.jsonl")
            solved = 0
            for eid, ep in c_agents.items():
                ok = bool(ep.source["loop"]["success"])
                rec = c_recs.get(eid)
                if ok and rec is not None:
                    joined = training_episode(ep, rec, Judged(True, bool(ep.source["loop"]["strict"])))
                    if joined is not None:
                        training.append(joined)
                        solved += 1
            figures["evolution"] = {**counts, "children": len(children), "solved": solved}
        if {"steward", "evolve"} & parts:
            prev = self._previous(version)
            prev_lib = self.spec.out / condition / "libraries" / f"v{prev}.sqlite" if prev else None
            lib = self.spec.out / condition / "libraries" / f"v{version}.sqlite"
            work = maintain_library(prev_lib if prev_lib and prev_lib.exists() else None, lib,
                                    self.spec.build, version, training, self._next(version))  # fmt: skip
            figures["steward"] = work or {
                "episodes": 0,
                "skills_written": 0,
                "note": "no success to learn from yet",
            }
        nxt = self._next(version)
        if "flows" in parts and nxt is not None:
            by_domain: dict[str, list[Episode]] = {}
            for rec in recordings.values():
                by_domain.setdefault(rec.domain or "", []).append(rec)
            out = self.spec.out / condition / "flows" / f"v{version}"
            out.mkdir(parents=True, exist_ok=True)
            catalogs = {}
            for domain in by_domain:
                cat = out / f"{domain}.catalog.json"
                catalogs[domain] = self._write_catalog(domain, nxt, cat)
            flows, gone = learn_flows(by_domain, catalogs, out)
            figures["flows"] = {"domains": sorted(flows), "episodes": len(recordings),
                                "for_version": nxt, "calls_of_tools_gone": gone}  # fmt: skip
        write_text_atomic(mark, json.dumps(figures, indent=1, sort_keys=True) + "\n")
        return figures

    def _write_catalog(self, domain: str, version: int, path: Path) -> Path:
        """The catalog the gateway writes beside its recordings (`record.write_catalog`), for this version."""
        from toolshift.traces.catalog import catalog_from_mcp_tools, save_catalog
        from toolshift.world.mcp.serve import mcp_tool

        world = self.worlds.world(domain, version)
        try:
            tools = [mcp_tool(t) for t in world.tools]
        finally:
            world.close()
        catalog = catalog_from_mcp_tools(domain, tools, source="toolshift gateway: backend tools/list")
        return save_catalog(catalog, path)

    # --- the whole run -------------------------------------------------------------------------------

    def run(self) -> None:
        self.check_folder()
        for version in self.spec.versions:
            for condition in self.spec.conditions:
                self.run_episodes(condition, version, self.tasks, "episodes")
                if CONDITIONS[condition] and version != self.spec.versions[-1]:
                    self.learn(condition, version)


def _in_order(episodes: dict[str, Episode], ids: list[str]) -> dict[str, Episode]:
    """`episodes` in the order of `ids` (the tasks' order), whatever order they were appended in, so that
    what a learning step reads does not depend on how many workers served the version."""
    rank = {eid: k for k, eid in enumerate(ids)}
    return dict(sorted(episodes.items(), key=lambda item: rank.get(item[0], len(rank))))


@dataclass(frozen=True)
class _BatchSpec:
    """A batch of one condition's episodes at one version, as the workers get it: the loop's definition, the
    build, and per domain what its gateway mounts (library, flow, catalog, why no flow)."""

    loop: LoopSpec
    build: Asset
    condition: str
    version: int
    kind: str
    served: dict[str, tuple[Any, ...]]
    scratch: bool
    """Record each episode's gateway session in the node's own folder (`assets.node_dir`), not the run folder."""


_kept: dict[str, Loop] = {}


def _batch_key(spec: _BatchSpec) -> str:
    """Which loop a batch belongs to (the same key in the driver and in every worker: nothing here reads the build)."""
    return f"{spec.loop!r}|{spec.build.digest}"


def _open_batch(spec: _BatchSpec) -> tuple[Loop, _BatchSpec, dict[str, tuple[Served, str]]]:
    """Worker side: the loop opened once per process (kept for the next batches), and what each domain's
    gateway mounts, from the batch's assets."""
    from dataclasses import replace

    from toolshift.agents.assets import node_dir

    key = _batch_key(spec)
    if key not in _kept:
        out = node_dir() / "toolshift-loop" / str(os.getpid()) if spec.scratch else spec.loop.out
        _kept.clear()
        _kept[key] = Loop(replace(spec.loop, build=spec.build.local(), out=out, workers=1))
    served = {
        domain: (Served(*(a.local() if a is not None else None for a in parts[:3])), parts[3])
        for domain, parts in spec.served.items()
    }
    return _kept[key], spec, served


def _serve_item(opened: tuple[Loop, _BatchSpec, dict[str, tuple[Served, str]]], task: Task) -> str:
    """One task of the batch served: the agent episode and its recording as one JSON object."""
    loop, spec, served = opened
    agent_ep, recording = loop.serve(spec.condition, spec.version, task, spec.kind, served[task.domain])
    return json.dumps({
        "agent": agent_ep.model_dump_json(),
        "recording": recording.model_dump_json() if recording is not None else None,
    })  # fmt: skip


def _from_wire(text: str) -> tuple[Episode, Episode | None]:
    data = json.loads(text)
    recording = data["recording"]
    return (
        Episode.model_validate_json(data["agent"]),
        Episode.model_validate_json(recording) if recording is not None else None,
    )
