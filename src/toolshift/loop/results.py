"""The loop's figures per condition and version, and its results page (docs/results/loop.md).

Per condition × version, over the served test tasks: SR and strict SR (the benchmark's verdict on the
gateway's recording: Δgold ⊆ Δagent, and no collateral write) with 95% bootstrap intervals over tasks
(`toolshift.intervals`); turns (assistant messages), model calls (those with token usage: a model's), tokens,
wall seconds, lookups made and used (served by the flows middleware; used = a later call answered from one),
Steward calls, and what the learning step after the version wrote (skills, children). Written as
`toolshift.loop-results/1` (docs/formats.md), which `toolshift report` draws.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from toolshift.intervals import bootstrap_mean, measured, signed_points
from toolshift.provenance import UNRECORDED, describe_codes
from toolshift.traces.episode import Episode

RESULTS_FORMAT = "toolshift.loop-results/1"


def _usage(ep: Episode) -> tuple[int, int]:
    calls = tokens = 0
    for m in ep.messages:
        if m.role == "assistant" and m.usage is not None:
            t = (m.usage.prompt_tokens or 0) + (m.usage.completion_tokens or 0)
            calls += t > 0
            tokens += t
    return calls, tokens


def version_figures(episodes: list[Episode], resamples: int = 1000) -> dict[str, Any]:
    loops = [e.source["loop"] for e in episodes]
    ids = [e.task_id for e in episodes]
    usage = [_usage(e) for e in episodes]
    n = len(episodes)
    return {
        "tasks": n,
        "SR": bootstrap_mean([float(x["success"]) for x in loops], groups=ids, resamples=resamples).as_dict(),
        "strict SR": bootstrap_mean(
            [float(x["strict"]) for x in loops], groups=ids, resamples=resamples
        ).as_dict(),
        "turns": sum(sum(1 for m in e.messages if m.role == "assistant") for e in episodes) / n
        if n
        else None,
        "model calls": sum(c for c, _ in usage),
        "tokens": sum(t for _, t in usage),
        "seconds": round(sum(float(x["seconds"]) for x in loops), 1),
        "lookups made": sum(int(x["lookups_made"]) for x in loops),
        "lookups used": sum(int(x["lookups_used"]) for x in loops),
        "steward calls": sum(int(x["steward_calls"]) for x in loops),
        "steward plans followed": sum(1 for x in loops if x.get("followed") == "steward"),
        "served library": sum(1 for x in loops if x.get("library")),
        "served flow": sum(1 for x in loops if x.get("flow")),
        # which commit made the episodes (a resumed run spans several; D237)
        "code": dict(Counter(str(e.source.get("code") or UNRECORDED) for e in episodes)),
    }


def collect(out: Path, resamples: int = 1000) -> dict[str, Any]:
    """Every condition's figures per version, and each learning step's, from the run folder."""
    from toolshift.fileio import read_json
    from toolshift.traces.store import iter_episodes

    definition = read_json(out / "loop.json", what="loop definition")
    rank = {task: k for k, task in enumerate(definition["tasks"])}
    block: dict[str, dict[str, Any]] = {}
    learned: dict[str, dict[str, Any]] = {}
    successes: dict[str, dict[str, dict[str, float]]] = {}
    ecosystem: str | None = None
    for condition in definition["conditions"]:
        for v in definition["versions"]:
            path = out / condition / f"v{v}" / "episodes.jsonl"
            if not path.exists():
                continue
            # in the tasks' order, not the file's: the figures (their bootstrap draws included) are the same
            # whichever order the episodes were appended in (by one process, several, or a Ray cluster)
            found = {e.id: e for e in iter_episodes(path, skip_bad=True)}
            eps = dict(sorted(found.items(), key=lambda kv: (rank.get(kv[1].task_id, len(rank)), kv[0])))
            ecosystem = ecosystem or next((e.ecosystem_version.split("/")[0] for e in eps.values()
                                           if e.ecosystem_version), None)  # fmt: skip
            block.setdefault(condition, {})[f"v{v}"] = version_figures(list(eps.values()), resamples)
            successes.setdefault(condition, {})[f"v{v}"] = {
                e.task_id: float(e.source["loop"]["success"]) for e in eps.values()
            }
            mark = out / condition / f"v{v}" / "learned.json"
            if mark.exists():
                learned.setdefault(condition, {})[f"v{v}"] = read_json(mark, what="learning step")
    for condition, by in block.items():
        for v, figures in by.items():
            base, here = successes.get("off", {}).get(v, {}), successes[condition][v]
            common = sorted(set(base) & set(here))
            if condition != "off" and common:
                # paired over the same tasks: the interval of the mean per-task difference from `off`
                figures["SR vs off"] = bootstrap_mean(
                    [here[t] - base[t] for t in common], groups=common, resamples=resamples
                ).as_dict()
    return {"format": RESULTS_FORMAT, "definition": definition, "ecosystem": ecosystem, "conditions": block,
            "learned": learned}  # fmt: skip


def write_results(out: Path, command: str, resamples: int = 1000, load: dict[str, Any] | None = None) -> Path:
    """OUT/results.json; `load`: the machine's load average when the command started and ended (wall times
    are read beside it)."""
    from toolshift.fileio import write_text_atomic

    body = {**collect(out, resamples), "command": command, **({"load": load} if load else {})}
    return write_text_atomic(out / "results.json", json.dumps(body, indent=1, sort_keys=True) + "\n")


def _iv(cell: Any) -> str:
    if not measured(cell):
        return "–"
    return f"{100 * cell['mean']:.1f} [{100 * cell['low']:.1f}, {100 * cell['high']:.1f}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


FULL_TASKS = 84
"""Test tasks per version the issue's full run serves (docs/results/loop.md names its command)."""


def scale_note(results: dict[str, Any]) -> str:
    """What scale a run is, said from its own definition."""
    from toolshift.loop.instrument import INSTRUMENT

    d = results["definition"]
    n, model = len(d["tasks"]), d["model"]
    what = (
        f"`{model}` is the measuring instrument (no model: each task's v1 procedure, Steward's plans when served)"
        if model == INSTRUMENT
        else f"`{model}` is a model"
    )
    scale = (
        f"{n} test tasks per version: the issue's scale (≥ {FULL_TASKS})"
        if n >= FULL_TASKS
        else f"{n} test tasks per version, a small sample (the issue's run is ≥ {FULL_TASKS}); read its "
        "intervals, not its means"
    )
    return f"Scale: {what}; {scale}; versions {', '.join(f'v{v}' for v in d['versions'])}."


def differences_from_off(conds: dict[str, Any], versions: list[str]) -> str:
    """One sentence on the cells of the paired table whose 95% interval leaves out 0, so the page says what
    it shows from its own figures (an interval touching 0 counts as holding it)."""
    above, below = [], []
    for c, by in conds.items():
        if c == "off":
            continue
        for v in versions:
            cell = by.get(v, {}).get("SR vs off")
            if not measured(cell):
                continue
            text = f"`{c}` at {v} ({signed_points(cell)})"
            if cell["low"] > 0:
                above.append(text)
            elif cell["high"] < 0:
                below.append(text)
    if not above and not below:
        return "No condition differs from `off` at any version: every paired interval holds 0."
    said = [
        f"above `off`: {'; '.join(above)}" if above else "",
        f"below `off`: {'; '.join(below)}" if below else "",
    ]
    return (
        "Where the paired interval leaves out 0, "
        + "; ".join(x for x in said if x)
        + ". Every other cell holds 0."
    )


def section(results: dict[str, Any], heading: str = "##") -> str:
    """One run's tables (SR, strict SR, paired difference from off, cost and service, learning steps)."""
    d = results["definition"]
    versions = [f"v{v}" for v in d["versions"]]
    conds = results["conditions"]
    h = heading + "#"
    parts = [
        f"Made by `{results.get('command', '')}`: model `{d['model']}`, {len(d['tasks'])} test tasks per version, "
        f"versions {', '.join(versions)}, build `{d['build']}` (ecosystem `{results.get('ecosystem')}`), at most {d['max_turns']} turns an episode.",
        scale_note(results),
    ]
    codes: Counter[str] = Counter()
    for by in conds.values():
        for figures in by.values():
            codes.update(figures.get("code") or {})
    if codes:
        parts.append(
            f"Episodes made {describe_codes(codes)} (`source.code`; a resumed run spans several commits)."
        )
    load = results.get("load")
    if isinstance(load, dict):
        parts.append(f"Load average (1 min) when the command started / ended: {load.get('start')} / {load.get('end')} "
                     f"on {load.get('cores')} cores (wall seconds are read beside it).")  # fmt: skip
    for metric, what in (("SR", "success rate"), ("strict SR", "strict success rate (no collateral write)")):
        parts.append(f"{h} {metric}: {what}, % [95% bootstrap interval over tasks]")
        parts.append(_table(["condition", *versions],
                            [[c, *(_iv(conds[c].get(v, {}).get(metric)) for v in versions)] for c in conds]))  # fmt: skip
    if "off" in conds and len(conds) > 1:
        parts.append(
            f"{h} SR minus off, percentage points [95% paired bootstrap interval over the same tasks]"
        )
        parts.append(_table(["condition", *versions],
                            [[c, *(signed_points(conds[c].get(v, {}).get("SR vs off")) for v in versions)]
                             for c in conds if c != "off"]))  # fmt: skip
        parts.append(differences_from_off(conds, versions))
    parts.append(f"{h} Cost and what the loop served, per version")
    rows = []
    for c, by in conds.items():
        for v in versions:
            f = by.get(v)
            if f is None:
                continue
            rows.append([c, v, str(f["tasks"]), f"{f['turns']:.1f}" if f["turns"] is not None else "–",
                         str(f["model calls"]), str(f["tokens"]), f"{f['seconds']:.0f}",
                         f"{f['lookups made']} / {f['lookups used']}", str(f["steward calls"]),
                         str(f["steward plans followed"]), f"{f['served library']} / {f['served flow']}"])  # fmt: skip
    parts.append(_table(["condition", "version", "tasks", "turns / episode", "model calls", "tokens", "wall s",
                         "lookups made / used", "Steward calls", "plans followed",
                         "episodes with a library / a flow"], rows))  # fmt: skip
    parts.append(f"{h} What each learning step wrote (after the version, served on the next)")
    rows = []
    for c, by in results["learned"].items():
        for v in versions:
            f = by.get(v)
            if f is None:
                continue
            st, ev, fl = f.get("steward") or {}, f.get("evolution") or {}, f.get("flows") or {}
            gone = sum((fl.get("calls_of_tools_gone") or {}).values()) if fl else None
            rows.append([c, v, str(st.get("episodes", "–")), str(st.get("skills_written", "–")),
                         str(st.get("active", "–")),
                         f"{ev.get('seeds', 0)} / {ev.get('children', 0)} / {ev.get('solved', 0)}" if ev else "–",
                         f"{len(fl.get('domains', []))} ({gone} calls of tools gone)" if fl else "–"])  # fmt: skip
    parts.append(_table(["condition", "after", "training episodes", "skills written", "active skills",
                         "evolution: seeds / children / solved", "flows learned: domains"], rows))  # fmt: skip
    return "\n\n".join(parts)


def plot_differences(runs: list[dict[str, Any]], path: Path) -> Path:
    """A PNG of each run's paired SR minus `off` per version with its 95% interval, one panel per run, so the
    page shows at a glance which cells leave out 0. Written beside, then renamed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from toolshift.fileio import atomic_path

    fig, axes = plt.subplots(1, len(runs), figsize=(5.2 * len(runs), 3.6), squeeze=False, sharey=True)
    for ax, r in zip(axes[0], runs, strict=True):
        versions = [f"v{v}" for v in r["definition"]["versions"]]
        others = [c for c in r["conditions"] if c != "off"]
        for k, c in enumerate(others):
            xs, ys, lo, hi = [], [], [], []
            for i, v in enumerate(versions):
                cell = r["conditions"][c].get(v, {}).get("SR vs off")
                if measured(cell):
                    xs.append(i + (k - (len(others) - 1) / 2) * 0.12)  # side by side, not on top
                    ys.append(100 * cell["mean"])
                    lo.append(100 * (cell["mean"] - cell["low"]))
                    hi.append(100 * (cell["high"] - cell["mean"]))
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, linestyle="none", label=c)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(versions)), versions)
        ax.set_title(
            f"{r['definition']['model']}, {len(r['definition']['tasks'])} tasks a version", fontsize=9
        )
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("SR minus off, points (95% paired)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path


def markdown(results: dict[str, Any], *, title: str = "# The loop", preface: str = "",
             others: list[dict[str, Any]] | None = None, full_command: str = "", figure: str = "") -> str:  # fmt: skip
    """The page: this run's section, then each other run's (`others`, e.g. the instrument at scale);
    `figure`, the file name of `plot_differences`' PNG beside the page."""
    runs = [results, *(others or [])]
    parts = [title]
    if preface:
        parts.append(preface)
    if figure:
        parts.append(f"![SR minus off per version, each run]({figure})")
    if full_command:
        # the run's command may name other runs (`--with`) for the page; the episodes are the same
        made_here = any(re.sub(r" --with \S+", "", r.get("command", "")) == full_command for r in runs)
        where = "the section below that names it" if made_here else "not on this page yet"
        parts.append(f"The issue's full run (the embedded agent on ≥ {FULL_TASKS} test tasks per version, v1→v6; "
                     f"hours of CPU on a 2-core machine): `{full_command}`, {where}.")  # fmt: skip
    for r in runs:
        parts.append(f"## `{r['definition']['model']}`, {len(r['definition']['tasks'])} tasks per version")
        parts.append(section(r))
    return "\n\n".join(parts) + "\n"
