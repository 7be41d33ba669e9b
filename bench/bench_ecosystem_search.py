"""The standard setting on a full build: building one version's whole catalog, and search_tools latency
(the ranker alone, and a search over in-memory MCP that also grows the session's listing)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from paired import percentile
from toolshift.bench.ecosystem.server import Served, opener
from toolshift.bench.ecosystem.settings import SEARCH_TOOL, EcosystemVersion, VersionWorlds, exposure_for
from toolshift.bench.ecosystem.store import load_ecosystem
from toolshift.report.benchlog import record

QUERIES = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, default=Path("runs/eco/bench"), help="an evolved full build")
    parser.add_argument("--version", type=int, default=4)
    args = parser.parse_args()
    eco = load_ecosystem(args.build)
    worlds = VersionWorlds(args.build)
    start = time.perf_counter()
    whole = EcosystemVersion(worlds, eco.domains, args.version)
    built = time.perf_counter() - start
    requests = [t.public_request for d in eco.domains for t in worlds.tasks(d)][:QUERIES]
    ranker = []
    for q in requests:
        t0 = time.perf_counter()
        whole.search.search(q, 5)
        ranker.append((time.perf_counter() - t0) * 1000)
    served = Served(eco.id, args.version, "standard")
    open_session = opener(worlds, served, exposure_for("standard", version=whole), whole)

    async def over_mcp() -> list[float]:
        out = []
        async with open_session() as session:
            for q in requests:
                t0 = time.perf_counter()
                result = await session.client.call_tool(SEARCH_TOOL, {"query": q, "k": 5})
                out.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error
        return out

    mcp = asyncio.run(over_mcp())
    rows = [
        (f"v{args.version} catalog: tools of {len(eco.domains)} domains", str(len(whole.tools)), "799–892"),
        ("building the version's whole catalog and its index (s)", f"{built:.1f}", "–"),
        (
            "search_tools ranker, p50 / p99 (ms)",
            f"{percentile(ranker, 0.5):.1f} / {percentile(ranker, 0.99):.1f}",
            "–",
        ),
        (
            "search_tools over in-memory MCP, p50 / p99 (ms)",
            f"{percentile(mcp, 0.5):.1f} / {percentile(mcp, 0.99):.1f}",
            "–",
        ),
    ]
    record(
        "bench_ecosystem_search",
        rows,
        note=f"{len(requests)} queries: the tasks' opening requests, k = 5; single process.",
    )


if __name__ == "__main__":
    main()
