"""Demo step for traces: a catalog from a live MCP server, a τ²-bench run through the episode store and back."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from toolshift.errors import ToolshiftError
from toolshift.traces.anatomy import anatomy
from toolshift.traces.catalog import catalog_path, load_catalog, save_catalog
from toolshift.traces.cli import anatomy_table
from toolshift.traces.store import iter_episodes
from toolshift.traces.tau2 import convert_tau2, read_results
from toolshift.traces.tau2_write import run_from_episodes, write_results

EXAMPLE_RUN = Path(__file__).parent / "examples" / "tau2_airline_results.json"
"""A small synthetic τ²-bench airline run (2 simulations) in the real Results format: parallel calls, an
error result, costs, usage, reward_info, two termination reasons."""

_DROPPED = {"raw_data", "is_audio", "turn_taking_action", "contains_speech"}


def _mcp_catalog(console: Console, out: Path) -> None:
    from toolshift.traces.mcp_catalog import catalog_of_world

    catalog = anyio.run(lambda: catalog_of_world("clinic"))
    path = save_catalog(catalog, catalog_path(out, "clinic"))
    effects = catalog.effects()
    reads = sorted(n for n, e in effects.items() if e == "read")
    writes = sorted(n for n, e in effects.items() if e == "write")
    console.print(
        f"catalog of the clinic world from MCP tools/list of `toolshift world serve clinic` (stdio): "
        f"{len(reads)} read, {len(writes)} write (labels from readOnlyHint) → {path.name}"
    )


def run(console: Console) -> None:
    """Build a catalog over MCP, convert the example τ²-bench run, show its anatomy, write it back and compare."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        _mcp_catalog(console, out)
        conv = convert_tau2(EXAMPLE_RUN)
        written = conv.write(out)
        console.print(
            f"τ²-bench example run: {conv.records} simulations, kept {conv.kept}; wrote "
            + ", ".join(p.name for p in written)
        )
        episodes_file = out / "airline.episodes.jsonl"
        groups = anatomy(
            iter_episodes(episodes_file), {"airline": load_catalog(catalog_path(out, "airline")).effects()}
        )
        overall = next(iter(groups.values()))
        console.print(anatomy_table(groups, ("domain", "agent"), overall))
        original = json.loads(EXAMPLE_RUN.read_text(encoding="utf-8"))
        episodes = list(iter_episodes(episodes_file))
        run_back = run_from_episodes(
            episodes, policy=original["info"]["environment_info"]["policy"], tasks=original["tasks"]
        )
        back = json.loads(write_results(run_back, out / "back.json").read_text(encoding="utf-8"))
        expected = [
            {
                **{k: v for k, v in sim.items() if k != "ticks"},
                "messages": [{k: v for k, v in m.items() if k not in _DROPPED} for m in sim["messages"]],
            }
            for sim in original["simulations"]
        ]
        same = back["simulations"] == expected and back["info"] == original["info"]
        table = Table(title="τ²-bench → episodes JSONL → τ²-bench")
        for col in ("simulations", "messages", "tool calls", "every modelled field equal"):
            table.add_column(col)
        calls = sum(len(m.tool_calls or []) for e in episodes for m in e.messages)
        table.add_row(
            str(len(back["simulations"])),
            str(sum(len(s["messages"]) for s in back["simulations"])),
            str(calls),
            "[green]yes" if same else "[red]no",
        )
        console.print(table)
        if not same or [e.id for e in read_results(out / "back.json").episodes] != [e.id for e in episodes]:
            raise ToolshiftError("the τ²-bench round trip changed a modelled field")
