"""The flows step of `toolshift demo`: learn GPT-4o's lookups on τ-bench airline and replay held-out runs."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from toolshift.flows.results import AIRLINE_FILE, default_data_dir


def run(console: Console) -> None:
    from toolshift.flows.ceiling import anatomy
    from toolshift.flows.decide import Decider
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.replay import replay
    from toolshift.flows.results import ORDER, split
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.traces.taubench import convert_taubench_v1, taubench_domain

    path = default_data_dir() / AIRLINE_FILE
    if not path.exists():
        console.print(f"flows: {path} not found (the shared real data); skipping this step")
        return
    conv = convert_taubench_v1(path)
    catalog = Catalog.of(conv.catalogs[taubench_domain("airline")])
    sp = split(timelines(conv.episodes, catalog))
    flow = learn_flow(sp.train, catalog)
    total, _ = anatomy(sp.test)
    table = Table(title=f"τ-bench airline, GPT-4o: flow from {flow.learned_from.episodes} successful training runs, "
                  f"replayed on {len(sp.test)} held-out runs (θ = 0.3)")  # fmt: skip
    for col in ("decider", "turns", "ceiling", "saved", "lookups made", "detours/episode"):
        table.add_column(col)
    for kind in ORDER:
        r = replay(sp.test, Decider(flow, kind, 0.3, catalog))
        table.add_row(kind, str(r.turns), str(total.ceiling), f"{r.saved} ({100 * r.saved / r.turns:.1f}%)",
                      str(r.made), f"{r.detours / len(r.episodes):.2f}")  # fmt: skip
    console.print(table)
