"""`toolshift bench eval RUNS`: score recorded episodes against the evolved build's reference paths.

Each episode must name its ecosystem version as `<ecosystem id>/v<n>` (baselines record it, and so
does `toolshift run` against `toolshift bench serve`, from the server's declaration); episodes of
another build's ecosystem, or of a version the ecosystem does not have, are refused by name (file,
record, field). Episodes are grouped by agent, setting and user simulator (`agent_label`).
Task × version instances whose reference paths failed replay are excluded and counted, never scored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from toolshift.bench.ecosystem.paths import ReferenceRecord, load_references
from toolshift.bench.ecosystem.store import EcosystemManifest, domain_tasks, load_ecosystem, load_history
from toolshift.bench.metrics import (
    COUNTS,
    METRICS,
    AgentPath,
    InstanceReference,
    InstanceScore,
    Summary,
    agent_path,
    cell,
    score_instance,
    summarise,
)
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.provenance import UNRECORDED, describe_codes
from toolshift.traces.episode import Episode
from toolshift.traces.store import iter_episodes, read_header

MAX_LISTED = 30
"""Collateral instances the markdown lists per agent (the JSON lists them all)."""


@dataclass
class AgentEval:
    """One agent's scores, and what was left out and why."""

    agent: str
    scores: list[InstanceScore] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """The commands that recorded the agent's episode files (from their headers), where known."""
    excluded: Counter[str] = field(default_factory=Counter)
    summary: Summary | None = None
    codes: Counter[str] = field(default_factory=Counter)
    """Episodes by the commit that made them (`source.code`; `provenance.UNRECORDED` for older ones)."""
    created: list[str] = field(default_factory=list)
    """The `created` stamps of the files the agent's episodes came from."""

    def recorded_at(self) -> str:
        """Which code made these episodes, as a results page says it (`provenance.describe_codes`)."""
        return describe_codes(self.codes, self.created)

    def collateral(self) -> list[InstanceScore]:
        """The scored instances whose episode wrote outside Δgold, in task and version order."""
        return [s for s in self.scores if s.collateral_changes]

    def collateral_dicts(self) -> list[dict[str, object]]:
        """Those instances as the JSON output lists them (docs/formats.md, `bench eval --json-out`)."""
        return [
            {"task_id": s.task_id, "version": s.version, "success": s.success,
             "collateral_changes": s.collateral_changes, "collateral_rows": list(s.collateral_rows)}
            for s in self.collateral()
        ]  # fmt: skip


def episode_files(runs: Iterable[str | Path]) -> list[Path]:
    """Episode files given directly or found (`*.episodes.jsonl`) in the given folders."""
    files: list[Path] = []
    for r in runs:
        p = Path(r)
        if p.is_dir():
            files += sorted(p.glob("*.episodes.jsonl"))
        elif p.is_file():
            files.append(p)
        else:
            raise BadInputError("no such file or folder", source=str(p))
    if not files:
        raise BadInputError("no *.episodes.jsonl files found", source=", ".join(str(r) for r in runs))
    return files


def parse_version(ep: Episode, eco: EcosystemManifest, source: str, record: int) -> int:
    """The version an episode ran on; refuses episodes of another ecosystem or an unknown version."""
    tag = ep.ecosystem_version
    if not tag:
        raise BadInputError(
            "episode names no ecosystem version (expected '<ecosystem id>/v<n>')",
            source=source,
            record=record,
            field="ecosystem_version",
        )
    eco_id, _, ver = tag.partition("/v")
    if eco_id != eco.id:
        raise BadInputError(
            f"episode was recorded against ecosystem {eco_id!r}, but this build's ecosystem is {eco.id!r}",
            source=source,
            record=record,
            field="ecosystem_version",
        )
    if not ver.isdigit() or not 1 <= int(ver) <= eco.config.versions:
        raise BadInputError(
            f"episode names version {ver!r}, but ecosystem {eco.id} has versions 1..{eco.config.versions}",
            source=source,
            record=record,
            field="ecosystem_version",
        )
    return int(ver)


def _task_option(build: str | Path, task_ids: list[str], tasks: dict[str, Task]) -> str:
    """`--tasks` (and `--limit`) for a run's task ids, which its header does not record: the build's task
    file of their domain when they are its first tasks, else `TASKS` (a file of those ids)."""
    domains = {tasks[t].domain for t in task_ids if t in tasks}
    if len(domains) != 1:
        return "--tasks TASKS"
    domain = domains.pop()
    ordered = [t.id for t in domain_tasks(build, domain)]
    n = len(dict.fromkeys(task_ids))
    if set(task_ids) != set(ordered[:n]):
        return "--tasks TASKS"
    limit = f" --limit {n}" if n < len(ordered) else ""
    return f"--tasks {Path(build) / 'domains' / domain / 'tasks.jsonl'}{limit}"


def _run_command(meta: dict, path: Path, tasks_option: str) -> str:
    """The `toolshift run` line an agent run's header describes."""
    if not (meta.get("run") and meta.get("model") and meta.get("world")):
        return ""
    return (
        f"toolshift run --world {meta['world']} {tasks_option} --model {meta['model']} --user {meta.get('user')}"
        f" --max-turns {meta.get('max_turns')} --out {path.parent}  # run {meta['run']}"
    )


def _serve_command(ep: Episode, build: str | Path, version: int, meta: dict) -> str:
    """For a run against a served ecosystem: the `bench serve` line that served it."""
    if not (meta.get("run") and str(meta.get("world", "")).startswith("http")):
        return ""
    setting = ep.source.get("setting") or "standard"
    task = ep.source.get("served_task")
    extra = f" --task {task}" if task and setting in ("task-tools", "oracle-tools", "oracle-path") else ""
    port = urlsplit(str(meta["world"])).port
    extra += f" --port {port}" if port else ""
    return f"toolshift bench serve {build} --version {version} --setting {setting}{extra} --transport http"


def agent_label(ep: Episode) -> str:
    """Who is scored: the baseline or model, then the setting and the user simulator where not the defaults."""
    agent = str(ep.source.get("baseline") or ep.agent or ep.model or "agent")
    setting = str(ep.source.get("setting") or "standard")
    user = str((ep.outcome.info.get("user") if ep.outcome else None) or "scripted")
    label = agent if setting == "standard" else f"{agent} [{setting}]"
    return label if user == "scripted" else f"{label} (user {user})"


def instance_reference(
    refs: dict[tuple[str, int], ReferenceRecord], task_id: str, version: int
) -> InstanceReference:
    r = refs[(task_id, version)]
    assert r.step is not None and r.cost is not None
    prev = refs.get((task_id, version - 1))
    prev_ok = prev is not None and prev.valid and prev.step is not None and prev.cost is not None
    return InstanceReference(
        task_id=task_id,
        version=version,
        steps=r.step.steps,
        cost=r.cost.cost,
        tools=frozenset(r.step.tools),
        prev_steps=prev.step.steps if prev_ok else None,  # type: ignore[union-attr]
        prev_cost=prev.cost.cost if prev_ok else None,  # type: ignore[union-attr]
    )


def evaluate(
    build: str | Path, runs: Iterable[str | Path], *, resamples: int = 1000
) -> tuple[EcosystemManifest, list[AgentEval]]:
    """Score every episode in `runs` per agent; returns the ecosystem and one `AgentEval` per agent."""
    eco = load_ecosystem(build)
    _, records = load_references(build)
    refs = {(r.task_id, r.version): r for r in records}
    tasks: dict[str, Task] = {}
    folder: dict[
        str, str
    ] = {}  # task id -> the build's domain folder (an imported world's may differ from its name)
    for d in eco.domains:
        for t in domain_tasks(build, d):
            tasks[t.id], folder[t.id] = t, d
    costs = {(d, e.version): e.costs for d in eco.domains for e in load_history(build, d).versions}
    # (agent, task, version) -> {criterion: path}
    paths: dict[tuple[str, str, int], dict[str, AgentPath]] = defaultdict(dict)
    excluded: dict[str, Counter[str]] = defaultdict(Counter)
    commands: dict[str, list[str]] = defaultdict(list)
    codes: dict[str, Counter[str]] = defaultdict(Counter)
    created: dict[str, set[str]] = defaultdict(set)
    for f in episode_files(runs):
        header = read_header(f)
        meta = header.meta
        lines: list[tuple[str, str]] = []  # (agent, command line) in the order met
        run_ids: list[str] = []
        for k, ep in enumerate(iter_episodes(f)):
            version = parse_version(ep, eco, str(f), k)
            agent = agent_label(ep)
            task = tasks.get(ep.task_id)
            if task is None:
                raise BadInputError(
                    f"task {ep.task_id!r} is not in this build", source=str(f), record=k, field="task_id"
                )
            ref = refs.get((ep.task_id, version))
            if ref is None or not ref.valid:
                has_paths = ref is not None and ref.step is not None and ref.cost is not None
                excluded[agent]["reference path failed replay" if has_paths else "no reference path"] += 1
                continue
            run_ids.append(ep.task_id)
            codes[agent][str(ep.source.get("code") or UNRECORDED)] += 1
            created[agent].add(header.created)
            lines.append((agent, _serve_command(ep, build, version, meta)))
            lines.append((agent, ""))  # the file's own command, known once all its tasks are read
            criterion = str(ep.source.get("criterion") or "both")
            path = agent_path(
                ep, task.expected_changes, costs[(folder[ep.task_id], version)], task.generated_values
            )
            paths[(agent, ep.task_id, version)][criterion] = path
        command = str(meta.get("command") or "") or _run_command(meta, f, _task_option(build, run_ids, tasks))
        for agent, line in lines:
            line = line or command
            if line and line not in commands[agent]:
                commands[agent].append(line)
    evals: dict[str, AgentEval] = {}
    for (agent, task_id, version), by_crit in sorted(paths.items()):
        step_run = by_crit.get("step") or by_crit.get("both")
        cost_run = by_crit.get("cost") or by_crit.get("both")
        if step_run is None or cost_run is None:
            excluded[agent]["missing the step or cost episode"] += 1
            continue
        ev = evals.setdefault(agent, AgentEval(agent))
        ev.scores.append(score_instance(instance_reference(refs, task_id, version), step_run, cost_run))
    for agent, counts in excluded.items():
        evals.setdefault(agent, AgentEval(agent)).excluded.update(counts)
    for ev in evals.values():
        ev.summary = summarise(ev.scores, resamples=resamples)
        ev.commands = commands.get(ev.agent, [])
        ev.codes = codes.get(ev.agent, Counter())
        ev.created = sorted(created.get(ev.agent, ()))
    return eco, sorted(evals.values(), key=lambda e: e.agent)


def results_markdown(eco: EcosystemManifest, evals: list[AgentEval], command: str) -> str:
    """The baselines' metrics per version as markdown tables (percent, 95% bootstrap interval over tasks)."""
    lines = [
        "# Baselines on the evolved ecosystem",
        "",
        f"Generated by `{command}` (ecosystem `{eco.id}`, build `{eco.build}`).",
        "",
        "Values are percentages with 95% bootstrap intervals over tasks (overall: tasks resampled with all",
        "their versions). IDR and DAR exist from v2 on and are computed over the tasks whose reference",
        "weight fell (IDR) or rose (DAR) since the previous version; `n` is how many tasks that is.",
        "",
        "## Definitions",
        "",
        "For task i in version v, W_c,i(v) is the weight of its reference path under criterion c (steps, or",
        "cost) and A_c,i(v) the weight of the agent's path (every tool call counts a step, failed ones too,",
        "tool searches and the agent's own end of the conversation not; cost sums the version's 1–10 cost",
        "of each tool called, 1 for a tool the version does not have).",
        "",
        "- **SR**: S_i(v) = 1 if Δgold_i ⊆ Δagent_i(v) (every gold row change made, leaving the same value).",
        "- **Strict-SR**: S_i(v) = 1 and no collateral write: every change in Δagent_i(v) is the image of a",
        "  gold change under the renaming σ the judge found (an agent that also cancels other appointments",
        "  passes SR, not Strict-SR). Beside SR, not instead of it (D116).",
        "- **SR-collateral**: the share of solved instances (S = 1) whose episode made a collateral write;",
        "  **Collateral**: the mean number of collateral changes per instance (a count, not a percent).",
        "- **P / R / F1**: E = the exposed set, the world tools whose definitions the agent was given during",
        "  the episode (listed, or returned by `search_tools`; recorded as `source.exposed_tools`), R = tools",
        "  of the step-optimal reference path; P = |E∩R|/|E|, R = |E∩R|/|R|, F1 their harmonic mean.",
        "- **Step-SPE / Cost-SPE**: S_i(v) · W_c,i(v) / max(W_c,i(v), A_c,i(v)).",
        "- **IDR_c(v)**: over I = {i : W_c,i(v) < W_c,i(v−1)}, the share solved with A_c,i(v) < W_c,i(v−1).",
        "- **DAR_c(v)**: over D = {i : W_c,i(v) > W_c,i(v−1)}, the share solved with A_c,i(v) ≤ W_c,i(v).",
        "",
        "Settings: `standard` (no label) serves the version's whole catalog, every domain, behind",
        "`search_tools`; nothing is exposed until a search returns it. `[domain-tools]` lists the task's",
        "domain; `[task-tools]` the tools of every implementation of part of the task; `[oracle-tools]` the",
        "reference paths' tools; `[oracle-path]` adds the step-optimal call order. `(user …)` names a user",
        "simulator other than the scripted one.",
        "",
        "Baselines: `oracle` follows the version's reference path (one episode per criterion when the step-",
        "and cost-optimal paths differ; in the standard setting it fetches each tool by searching its exact",
        "name), `frozen-v1` replays the v1 reference path by tool names and arguments on every version (it",
        "searches each v1 name first) and stops at its first failing call, `embedded` is the embedded",
        "SmolLM2-135M agent on a sample of tasks (`embedded:…` rows: the same model through `toolshift run`).",
        "All run through the MCP agent loop on the test split unless their commands say otherwise.",
        "",
        "## Summary (all versions)",
        "",
        "| agent | instances | " + " | ".join((*METRICS, *COUNTS)) + " |",
        "|---|---|" + "---|" * len((*METRICS, *COUNTS)),
        *(
            f"| {ev.agent} | {len(ev.scores)} | "
            + " | ".join(
                "–"
                if ev.summary.overall[m].n == 0
                else (
                    f"{ev.summary.overall[m].mean:.2f}"
                    if m in COUNTS
                    else f"{100 * ev.summary.overall[m].mean:.1f}"
                )
                for m in (*METRICS, *COUNTS)
            )
            + " |"
            for ev in evals
            if ev.summary is not None
        ),
        "",
    ]
    for ev in evals:
        assert ev.summary is not None
        lines += [f"## {ev.agent}", ""]
        if ev.commands:
            lines += ["Recorded by:", "", "```", *ev.commands, "```", ""]
        if ev.codes:
            lines += [f"Recorded {ev.recorded_at()}.", ""]
        excl = ", ".join(f"{k}: {v}" for k, v in sorted(ev.excluded.items()))
        lines += [f"Scored instances: {len(ev.scores)}" + (f"; excluded: {excl}" if excl else ""), ""]
        shown = (*METRICS, *COUNTS)
        lines += ["| version | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
        for v in [*sorted(k for k in ev.summary.by_version if k), 0]:
            row = ev.summary.by_version[v]
            cells = []
            for m in shown:
                iv = row[m]
                n = m.endswith(("IDR", "DAR")) or m == "SR-collateral"
                cells.append(cell(m, iv) + (f" (n={iv.n})" if n and iv.n else ""))
            lines.append(f"| {'all' if v == 0 else f'v{v}'} | " + " | ".join(cells) + " |")
        lines.append("")
        hurt = ev.collateral()
        if hurt:
            lines += [
                f"Collateral writes ({len(hurt)} of {len(ev.scores)} instances; rows as `table/key`):",
                "",
            ]
            lines += [
                f"- {s.task_id} v{s.version} ({'solved' if s.success else 'not solved'}): "
                f"{s.collateral_changes} change(s) on {', '.join(s.collateral_rows)}"
                for s in hurt[:MAX_LISTED]
            ]
            if len(hurt) > MAX_LISTED:
                lines.append(f"- … {len(hurt) - MAX_LISTED} more (all in `--json-out`)")
            lines.append("")
    return "\n".join(lines)
