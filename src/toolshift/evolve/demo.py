"""Demo step: task evolution, one generation on the built-in clinic world: each seed task is solved N times,
the structural proposer writes one child per seed (a task program, parsed and never run), the child is verified
on a fresh world and solved N times, and the demo shows what changed in each child and how its completion moved.

The solver is the noisy-oracle instrument (the gold path with each later call kept with probability q: a
measuring instrument, not a model), so the step takes seconds; `toolshift evolve run --solver embedded` runs
the same loop with the embedded model.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

SOLVER = "noisy-oracle:0.5"
ATTEMPTS = 4
DOMAIN = "clinic"


def _block(program: str) -> list[str]:
    """The lines between the EVOLVE-BLOCK markers (what a proposer may change)."""
    lines = program.splitlines()
    start = next((k for k, line in enumerate(lines) if "EVOLVE-BLOCK-START" in line), -1)
    end = next((k for k, line in enumerate(lines) if "EVOLVE-BLOCK-END" in line), len(lines))
    return lines[start + 1 : end]


def run(console: Console, out: Path) -> list[dict[str, Any]]:
    """Evolve the clinic seeds one generation into `out` (an evolve run folder); return each child's change."""
    from toolshift.evolve.engine import Engine
    from toolshift.evolve.seeds import builtin_world_tasks
    from toolshift.evolve.solver import SolverConfig
    from toolshift.evolve.store import EvolveConfig, RunStore

    shutil.rmtree(out, ignore_errors=True)
    seeds = [t for t in builtin_world_tasks() if t.domain == DOMAIN]
    config = EvolveConfig(generations=1, solver=SolverConfig(model=SOLVER, attempts=ATTEMPTS))
    store = RunStore(out)
    store.create(config, seeds)
    console.print(f"{len(seeds)} seed tasks of the {DOMAIN} world, {ATTEMPTS} attempts each by the {SOLVER} "
                  "instrument; one child per seed from the structural proposer", soft_wrap=True)  # fmt: skip
    records = {r.id: r for r in Engine(store, config).run()}
    children = [r for r in records.values() if r.parent]
    table = Table(title="one generation: each child, what changed and how its completion moved")
    for col in ("child", "move", "status", "completion: parent → child", "solved path length"):
        table.add_column(col, justify="left" if col in ("child", "move", "status") else "right")
    shown: list[dict[str, Any]] = []
    for child in children:
        parent = records[child.parent or ""]
        before = "–" if parent.completion is None else f"{parent.completion:.2f}"
        after = "–" if child.completion is None else f"{child.completion:.2f}"
        status = child.status if child.status == "evaluated" else f"rejected: {child.reason or child.stage}"
        calls = f"{parent.length or 0:.0f} → {child.length or 0:.0f}" if child.length is not None else "–"
        table.add_row(
            child.id, child.mutation.operator or child.mutation.kind, status, f"{before} → {after}", calls
        )
        diff = [line for line in difflib.unified_diff(_block(parent.program), _block(child.program), lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]  # fmt: skip
        shown.append({"child": child.id, "parent": parent.id, "move": child.mutation.operator,
                      "description": child.mutation.description, "diff": diff})  # fmt: skip
    console.print(table)
    first = max(shown, key=lambda s: len(s["diff"]), default=None)  # the child that changed most
    if first is not None and first["diff"]:
        console.print(f"[bold]{first['child']}[/]: {escape(first['description'])}")
        for line in first["diff"][:14]:
            colour = "green" if line.startswith("+") else "red"
            console.print(f"  [{colour}]{escape(line)}[/]", highlight=False, soft_wrap=True)
    return shown
