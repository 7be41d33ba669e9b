"""Harnesses side by side on the same tasks: the runs (resumable, through `bench baseline`) and the results page.

`toolshift harness compare` runs each agent — toolshift's own loop and the outside agents, all on one model —
on the same Δτ-Bench test tasks (chosen versions, standard setting) and the same τ²-bench airline tasks, plus
the measuring instrument (each outside agent driven by the oracle, in the standard and the domain-tools
settings), and writes docs/results/harnesses.md from the episode files alone: SR and strict SR with intervals
over tasks, paired differences against toolshift's own loop, tool P/R/F1 (`bench eval`), turns, tokens, wall
time, and what each harness sends its model and what that costs.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.intervals import bootstrap_mean

OWN_LOOP = "embedded"
"""toolshift's own agent loop on the embedded model: the row every outside agent is compared with."""


@dataclass(frozen=True)
class Part:
    """One benchmark of the comparison: a build, the versions run, how many test tasks."""

    name: str
    build: Path
    versions: tuple[int, ...] | None
    sample: int


@dataclass
class ComparePlan:
    agents: list[str]
    parts: list[Part]
    out: Path
    model: str = "embedded"
    max_turns: int = 8
    seed: int = 0
    instrument: bool = True
    """Also run each outside agent with the oracle as its model, in the standard and the domain-tools settings."""
    instrument_sample: int = 10
    """Test tasks of the first part the instrument runs on (its episodes are the harnesses' startup, mostly)."""
    instrument_max_turns: int = 40
    """The instrument's turn limit: the gold path with a `search_tools` call before each tool it finds, never the
    model rows' limit (the oracle stopped by it would read as lost plumbing)."""
    command: str = ""

    def spec(self, agent: str, model: str | None = None) -> str:
        """The `--agent` of a row: toolshift's own loop is the model itself; an outside agent gets `@model`."""
        if agent == OWN_LOOP:
            return self.model
        return f"{agent}@{model or self.model}"

    def turns(self, spec: str) -> int:
        """The turn limit of a row: the instrument's for an agent the oracle drives, the model rows' otherwise."""
        return self.instrument_max_turns if spec.endswith("@oracle") else self.max_turns

    def runs(self) -> list[tuple[Part, str, str]]:
        """(part, agent spec, setting) of every run, the model rows first."""
        rows = [(part, self.spec(a), "standard") for part in self.parts for a in self.agents]
        if self.instrument:
            outside = [a for a in self.agents if a != OWN_LOOP]
            first = self.parts[0]
            few = Part(first.name, first.build, first.versions, min(first.sample, self.instrument_sample))
            for setting in ("standard", "domain-tools"):
                rows += [(few, self.spec(a, "oracle"), setting) for a in outside]
        return rows


@dataclass
class Row:
    """One agent on one part: its episodes' figures."""

    agent: str
    setting: str
    episodes: list[dict[str, Any]] = field(default_factory=list)

    def instances(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(e["task_id"], e.get("ecosystem_version") or ""): e for e in self.episodes}


def read_rows(folder: Path) -> dict[tuple[str, str], Row]:
    """Every episode file in a part's folder, by (agent, setting)."""
    from toolshift.fileio import read_text

    rows: dict[tuple[str, str], Row] = {}
    for path in sorted(folder.glob("*.episodes.jsonl")):
        lines = read_text(path, what="episode file").splitlines()
        meta = json.loads(lines[0]).get("meta", {}) if lines else {}
        setting = str(meta.get("setting") or "standard")
        for line in lines[1:]:
            if not line.strip():
                continue
            episode = json.loads(line)
            if episode.get("source", {}).get("criterion") == "cost":
                continue  # the scripted oracle's cost-optimal run of an instance: the step-optimal one is compared
            agent = str(episode.get("source", {}).get("baseline") or episode.get("agent"))
            rows.setdefault((agent, setting), Row(agent, setting)).episodes.append(episode)
    return rows


def _success(e: dict[str, Any], strict: bool = False) -> float | None:
    outcome = e.get("outcome") or {}
    if outcome.get("success") is None:
        return None
    if strict:
        value = (outcome.get("info") or {}).get("strict_success")
        return None if value is None else float(bool(value))
    return float(bool(outcome["success"]))


def rate(row: Row, *, strict: bool = False) -> Any:
    """SR (or strict SR) over the row's instances, with a bootstrap interval over tasks (unjudged left out)."""
    values, groups = [], []
    for e in row.episodes:
        value = _success(e, strict)
        if value is not None:
            values.append(value)
            groups.append(e["task_id"])
    return bootstrap_mean(values, groups=groups)


def paired(row: Row, base: Row) -> Any:
    """This row's SR minus the base row's on the instances both judged, resampling tasks."""
    mine, theirs = row.instances(), base.instances()
    values, groups = [], []
    for key, e in mine.items():
        other = theirs.get(key)
        if other is None:
            continue
        a, b = _success(e), _success(other)
        if a is not None and b is not None:
            values.append(a - b)
            groups.append(key[0])
    return bootstrap_mean(values, groups=groups)


def costs(row: Row) -> dict[str, Any]:
    """Turns, tokens, wall time and what the agent sent its model, per episode."""
    turns, prompt, completion, wall, calls, failed = [], [], [], [], [], 0
    system, tools_chars, tools, left_out, own, mcp = [], [], [], [], 0, 0
    exposed_names: set[str] = set()
    for e in row.episodes:
        info = (e.get("outcome") or {}).get("info") or {}
        turns.append(float(info.get("turns") or 0))
        usage = [m.get("usage") or {} for m in e.get("messages", []) if m.get("role") == "assistant"]
        prompt.append(float(sum(u.get("prompt_tokens") or 0 for u in usage)))
        completion.append(float(sum(u.get("completion_tokens") or 0 for u in usage)))
        wall.append(float(e.get("duration") or 0.0))
        failed += e.get("termination_reason") == "agent_error"
        exposed_names.update(e.get("source", {}).get("exposed_tools") or [])
        for turn in info.get("agent_turns") or []:
            model = turn.get("model") or {}
            if not model:
                continue
            calls.append(float(model.get("calls") or 0))
            system.append(int(model.get("system_chars") or 0))
            tools_chars.append(int(model.get("tools_chars") or 0))
            tools.append(int(model.get("tools") or 0))
            left_out.append(int(model.get("left_out_tools") or 0))
            for name in model.get("called") or []:
                if name.rsplit("__", 1)[-1] in exposed_names or name == "end_conversation":
                    mcp += 1
                else:
                    own += 1

    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    return {
        "episodes": len(row.episodes),
        "turns": mean(turns),
        "prompt_tokens": mean(prompt),
        "completion_tokens": mean(completion),
        "wall_p50": statistics.median(wall) if wall else None,
        "agent_errors": failed,
        "system_chars": max(system) if system else None,
        "tools_chars": max(tools_chars) if tools_chars else None,
        "tools": max(tools) if tools else None,
        "left_out": max(left_out) if left_out else None,
        "model_calls_per_turn": mean(calls),
        "own_tool_calls": own,
        "episode_tool_calls": mcp,
    }


def retrieval(build: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """`bench eval`'s tool P/R/F1 and Step-SPE over all versions, by agent label."""
    from toolshift.bench.ecosystem.evaluate import evaluate

    _, evals = evaluate(build, [folder], resamples=1000)
    out: dict[str, dict[str, Any]] = {}
    for ev in evals:
        assert ev.summary is not None
        cells = ev.summary.by_version[0]
        out[ev.agent] = {m: cells[m] for m in ("P", "R", "F1", "Step-SPE") if m in cells}
    return out


def endings(row: Row) -> dict[str, int]:
    """How a row's episodes ended: successes that made no tool call (a task whose gold path writes nothing is
    passed by leaving the world as it was) and episodes stopped at the turn limit (τ²'s evaluator gives those 0)."""
    return {
        "silent_successes": sum(
            1
            for e in row.episodes
            if _success(e) == 1.0 and not any(m.get("role") == "tool" for m in e.get("messages", []))
        ),
        "successes": sum(1 for e in row.episodes if _success(e) == 1.0),
        "at_turn_limit": sum(1 for e in row.episodes if e.get("termination_reason") == "max_turns"),
    }


def collect(plan: ComparePlan) -> dict[str, Any]:
    """Everything the page prints, from the episode files alone."""
    parts: dict[str, Any] = {}
    models = {plan.spec(a) for a in plan.agents}
    instruments = {plan.spec(a, "oracle") for a in plan.agents if a != OWN_LOOP} if plan.instrument else set()
    for part in plan.parts:
        folder = plan.out / part.name
        rows = read_rows(folder) if folder.is_dir() else {}
        scores = retrieval(part.build, folder) if rows else {}
        base = rows.get((plan.spec(OWN_LOOP), "standard"))
        table = {}
        for (agent, setting), row in sorted(rows.items()):
            label = agent if setting == "standard" else f"{agent} [{setting}]"
            table[label] = {
                "agent": agent, "setting": setting, "sr": rate(row), "strict": rate(row, strict=True),
                "model_row": setting == "standard" and agent in models,
                "instrument_row": agent in instruments,
                "versus_own_loop": paired(row, base) if base is not None and row is not base else None,
                "retrieval": scores.get(label, {}), **costs(row), **endings(row),
            }  # fmt: skip
        parts[part.name] = {
            "build": str(part.build),
            "versions": part.versions,
            "sample": part.sample,
            "tasks": len({e["task_id"] for row in rows.values() for e in row.episodes}),
            "rows": table,
        }
    return parts


def _ordered(rows: dict[str, Any], own: str) -> list[str]:
    """toolshift's own loop first, then the others by name; standard setting before others."""
    return sorted(rows, key=lambda k: (rows[k]["setting"] != "standard", rows[k]["agent"] != own, k))
