"""Demo step: Steward learns a skill library on the demo build's first version and keeps it in step as the
catalog changes: version by version, skills whose tools were renamed are rebound to the new names, skills whose
tools were retired are deactivated (kept), and new workflows are learned from that version's episodes.

Training episodes are FactReplay runs (a measuring instrument, not a model): each sampled training task's
step-optimal reference path replayed through the agent loop, its facts asked first. No model is called.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

SAMPLE = 12
"""Training tasks a version's episodes are made from."""
SHOWN = 6


def _renames(evidence: dict[str, Any]) -> dict[str, str]:
    renamed = evidence.get("renamed")
    return {str(k): str(v) for k, v in renamed.items()} if isinstance(renamed, dict) else {}


def run(console: Console, build: Path, out: Path) -> dict[str, Any]:
    """Learn on v1, maintain onto every later version; the library and its training episodes are left in `out`."""
    from toolshift.steward.catalog import version_catalog
    from toolshift.steward.experiment import context, read_episodes, training_episodes
    from toolshift.steward.library import LEVELS, Library
    from toolshift.steward.maintain import Maintainer

    out.mkdir(parents=True, exist_ok=True)
    ctx = context(build, out / "runs")
    path = out / "library.sqlite"
    lib = Library.create(path, name="demo", replace_existing=True)
    seen: dict[str, Any] = {"rebound": [], "versions": {}}
    try:
        episodes = read_episodes(training_episodes(ctx, 1, None, SAMPLE))
        work = Maintainer(lib).initialise(version_catalog(build, 1, ctx.worlds), episodes)
        levels = {level: len(lib.skills(level, active=True)) for level in LEVELS}
        console.print(f"v1: a library learned from {work.episodes} training episodes: "
                      + ", ".join(f"{n} {level} skills" for level, n in levels.items()) + f" ({path})", soft_wrap=True)  # fmt: skip
        table = Table(
            title="version by version: what the catalog changed, and what Steward did (no model called)"
        )
        for col in ("version", "training episodes", "skills revised", "rebound to renamed tools or fields",
                    "deactivated (tool retired)", "added", "active skills"):  # fmt: skip
            table.add_column(col, justify="left" if col == "version" else "right")
        for version in range(2, ctx.versions + 1):
            episodes = read_episodes(training_episodes(ctx, version, None, SAMPLE))
            work = Maintainer(lib).maintain(version_catalog(build, version, ctx.worlds), episodes)
            edits = [e for e in lib.edits() if e.catalog_version == version]
            ops = Counter(e.op for e in edits)
            rebound = [
                (e.skill_id, _renames(e.evidence)) for e in edits if e.op == "revise" and _renames(e.evidence)
            ]
            seen["rebound"] += [(version, skill, renamed) for skill, renamed in rebound]
            seen["versions"][version] = dict(ops)
            active = sum(len(lib.skills(level, active=True)) for level in LEVELS)
            table.add_row(f"v{version - 1} → v{version}", str(work.episodes), str(ops.get("revise", 0)),
                          str(len(rebound)), str(ops.get("deactivate", 0)), str(ops.get("add", 0)), str(active))  # fmt: skip
        console.print(table)
        rebinds = Table(title="skills rebound to the version's tools (a sample)")
        for col in ("version", "skill", "was → now"):
            rebinds.add_column(col)
        plans = [r for r in seen["rebound"] if r[1].startswith("plan-")] or seen["rebound"]
        for version, skill, renamed in plans[:SHOWN]:
            rebinds.add_row(f"v{version}", skill, "; ".join(f"{a} → {b}" for a, b in renamed.items()))
        console.print(rebinds)
    finally:
        lib.close()
    from toolshift.terminal import toolshift_command

    console.print(f"the library and its edit log: {toolshift_command()} steward show {path}", soft_wrap=True)
    return seen
