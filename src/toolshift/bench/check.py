"""Check one domain spec end to end for authors: `python -m toolshift.bench.check SPEC.yaml`.

Validates the spec, compiles it, builds its dependency graph, synthesises tasks and prints what it
made and why attempts were rejected. Exits non-zero below the per-domain floor of 10 tasks.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console

from toolshift import terminal
from toolshift.bench.build import MIN_TASKS_PER_DOMAIN, replay_problems
from toolshift.bench.graph import graph_summary
from toolshift.bench.synthesis import Synthesizer
from toolshift.errors import ToolshiftError
from toolshift.world.language.spec import load_spec
from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.registry import resolve_spec_path
from toolshift.world.state.world import World


def check_spec(spec_ref: str, *, target: int = 20, console: Console | None = None) -> int:
    """Return the number of validated tasks; raise ToolshiftError when below the floor."""
    console = console or terminal.console()
    path = resolve_spec_path(spec_ref)
    spec = load_spec(path)
    started = time.perf_counter()
    compiled = compile_domain(spec, str(path))
    rows = sum(compiled.row_counts().values())
    tools = len(compiled.tools)
    console.print(
        f"{spec.name}: prefix {spec.tool_prefix!r}, {len(spec.entities)} entities, {tools} tools, {rows} rows"
    )
    world = World(compiled)
    synth = Synthesizer(world, seed=0)
    g = graph_summary(synth.graph)
    console.print(
        f"graph: {g['edges']} edges, {g['query_starts']} query starts, {g['reachable_writes']}/{g['writes']} writes reachable"
    )
    tasks, rep = synth.synthesize(target)
    fresh = World(compiled)
    bad = sum(1 for t in tasks if replay_problems(fresh, t))
    used = sorted({f for t in tasks for f in t.base_functions})
    console.print(
        f"tasks: {len(tasks)} made in {rep.attempts} attempts ({time.perf_counter() - started:.2f} s); "
        f"{bad} failed the independent replay; {len(used)}/{tools} tools used"
    )
    if rep.rejections:
        console.print("rejections: " + ", ".join(f"{k} {v}" for k, v in rep.rejections.most_common()))
    for reason, example in sorted(synth.error_examples.items()):
        if reason.startswith("call_error:"):
            console.print(f"[yellow]{reason}[/] (a spec bug?) e.g. {example}", highlight=False)
    unused = sorted({t.name for t in compiled.tools} - set(used))
    if unused:
        console.print("tools no task uses: " + ", ".join(unused))
    if tasks:
        t = tasks[0]
        console.print(f"example: {t.public_request}\n  intent: {t.instruction.intent}")
    good = len(tasks) - bad
    if good < MIN_TASKS_PER_DOMAIN:
        raise ToolshiftError(f"FAIL: {spec.name} made {good} validated tasks (< {MIN_TASKS_PER_DOMAIN})")
    console.print(f"[green]OK[/]: {good} validated tasks")
    return good


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m toolshift.bench.check SPEC.yaml [...]", file=sys.stderr)
        sys.exit(2)
    code = 0
    for ref in args:
        try:
            check_spec(ref)
        except ToolshiftError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = max(code, exc.exit_code)
    sys.exit(code)


if __name__ == "__main__":
    main()
