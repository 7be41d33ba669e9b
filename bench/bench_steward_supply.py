"""Benchmark: Steward's supply latency per step at 1,000 tools and 5,000 skills, and maintenance time per version.

The catalog is the 42 benchmark domains' real tools (892) plus renamed copies up to 1,000; the
library is 5,000 skills (planning and atomic, 1–4 tools each, in one domain) whose texts are made
from those tools' names and descriptions. A step is one planned step of `EpisodeSupply.plan`
(its atomic-skill retrieval and MMR, its share of the direct tool retrieval and the plan choice).
With `--run DIR` (a `toolshift steward eval` run folder) the maintenance CPU time per version of
the incremental and full-rebuild libraries is recorded too.

    .venv/bin/python bench/bench_steward_supply.py [--run runs/steward]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

from paired import percentile
from toolshift.report.benchlog import record
from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.library import Skill
from toolshift.steward.supply import Supply

TOOLS, SKILLS, REQUESTS = 1000, 5000, 300


def catalog() -> Catalog:
    from toolshift.bench.domains import bench_domain_names
    from toolshift.world.state.registry import load_domain

    tools: dict[str, CatalogTool] = {}
    for name in bench_domain_names():
        for t in load_domain(name).tools:
            tools[t.name] = CatalogTool(t.name, name, t.description, t.input_schema, str(t.effect))
    base = list(tools.values())
    k = 0
    while len(tools) < TOOLS:
        t = base[k % len(base)]
        copy = f"{t.name}_v{k // len(base) + 2}"
        tools[copy] = CatalogTool(copy, t.domain, t.description, t.input_schema, t.effect)
        k += 1
    return Catalog(1, tools)


def library(cat: Catalog, rng: random.Random) -> list[Skill]:
    by_domain: dict[str, list[CatalogTool]] = {}
    for t in cat.tools.values():
        by_domain.setdefault(t.domain, []).append(t)
    domains = sorted(by_domain)
    facts = ["name", "number", "email", "reason", "date", "status", "amount", "code"]
    skills = []
    for k in range(SKILLS):
        d = domains[k % len(domains)]
        tools = rng.sample(by_domain[d], rng.randint(1, min(4, len(by_domain[d]))))
        level = "planning" if k % 2 == 0 else "atomic"
        steps = [{"tool": t.name, "args": {}, "each": False} for t in tools]
        fs = sorted({f"{d.split('_')[0]} {rng.choice(facts)}" for _ in range(rng.randint(1, 3))})
        body = {"requests": [f"I need to {tools[-1].description[:80]}"], "facts": fs}
        body["steps" if level == "planning" else "calls"] = steps
        desc = f"In {d}: " + "; then ".join(t.description[:100] for t in tools)
        skills.append(Skill(f"s-{k}", level, d, desc, body, tuple(t.name for t in tools)))  # type: ignore[arg-type]
    return skills


def maintenance_rows(run: Path) -> list[tuple[str, str, str]]:
    body = json.loads((run / "results.json").read_text(encoding="utf-8"))
    rows = []
    for v in sorted(body["work"]["incremental"], key=int):
        i, f = body["work"]["incremental"][v], body["work"]["full"][v]
        rows.append(
            (f"maintenance v{v}: incremental / full rebuild CPU s (edits)",
             f"{i['seconds']:.2f} ({i['edits']}) / {f['seconds']:.2f} ({f['edits']})", "incremental < full")
        )  # fmt: skip
    return rows


def main() -> None:
    rng = random.Random(0)
    cat = catalog()
    skills = library(cat, rng)
    t0 = time.perf_counter()
    supply = Supply(skills, cat)
    index_s = time.perf_counter() - t0
    per_step, retrieve = [], []
    planned = 0
    plans = [s for s in skills if s.level == "planning"]
    for _ in range(REQUESTS):
        target = rng.choice(plans)
        request = target.body["requests"][0]
        facts = {f: "x" for f in target.body["facts"]}
        t = time.perf_counter()
        ep = supply.episode(request)
        view = ep.plan(facts)
        elapsed = time.perf_counter() - t
        if view.plan is not None:
            planned += 1
            per_step.append(1000 * elapsed / max(1, len(view.steps)))
        t = time.perf_counter()
        ep.retrieve_tools(request)
        retrieve.append(1000 * (time.perf_counter() - t))
    per_step.sort()
    rows = [
        ("tools / skills", f"{len(cat.tools)} / {len(skills)}", "1,000 / 5,000"),
        ("index build (BM25 over skills and tools)", f"{index_s:.2f} s", ""),
        ("requests planned", f"{planned} / {REQUESTS}", ""),
        ("supply latency per step, median", f"{statistics.median(per_step):.2f} ms", "< 20 ms"),
        ("supply latency per step, p95", f"{percentile(per_step, 0.95):.2f} ms", "< 20 ms"),
        ("retrieve_tools latency, median", f"{statistics.median(retrieve):.2f} ms", ""),
    ]
    if "--run" in sys.argv:
        run = Path(sys.argv[sys.argv.index("--run") + 1])
        if (run / "results.json").is_file():
            rows += maintenance_rows(run)
    record(
        "bench_steward_supply",
        rows,
        note="Single process; wall-clock per call (time.perf_counter) on a machine shared with other helpers.",
    )


if __name__ == "__main__":
    main()
