"""toolshift's own time in a harness episode: the hosted episode against the same harness turn run bare, interleaved.

Side A is a whole episode as `toolshift run --model harness:<h>@oracle` runs it: the episode's MCP door and model
server started and stopped, the simulated user, every call recorded, the world diffed and judged. Side B is the
same harness on the same task's message with nothing of that: the same spec, the same model server (the harness
needs one either way), a plain `world serve` HTTP server started once (a fresh world per connection), one turn.
The oracle drives both, so both make the same calls. A − B is what toolshift adds; the target is ≤ 5% of A.

Beside it, the accounting of the episodes of side A themselves (no second run): the episode's wall time minus the
harness processes' time, plus the time the door spent answering calls and the model server spent reading and
writing requests (its model's own time left out). And the same accounting on the embedded model, whose episodes
are what the harness page runs.

    python bench/bench_harness_overhead.py [--rounds 3] [--harnesses codex,qwen-code] [--embedded 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from paired import Sample, interleave, percentile
from toolshift.agents.config import RunConfig, make_agent, make_user
from toolshift.agents.demo import demo_tasks
from toolshift.agents.loop import run_episode
from toolshift.agents.outside import EpisodeContext
from toolshift.agents.worlds import world_opener
from toolshift.report.benchlog import record


def own_time(episode: Any) -> tuple[float, float]:
    """(toolshift's own seconds, the episode's wall seconds) by the episode's own accounting."""
    info = episode.outcome.info
    harness = sum(float(t.get("seconds", t.get("turn_seconds", 0.0))) for t in info.get("agent_turns", []))
    wire = sum(
        max(0.0, float(t["model"].get("served_seconds", 0.0)) - float(t["model"].get("seconds", 0.0)))
        for t in info.get("agent_turns", [])
        if "model" in t
    )
    wall = float(episode.duration)
    return wall - harness + float(info.get("door_seconds", 0.0)) + wire, wall


def hosted(spec: str, accounted: list[tuple[float, float]]):
    def side(task: Any) -> Sample:
        config = RunConfig(world="clinic", model=spec, max_turns=10)
        clock, cpu = time.perf_counter(), time.process_time()
        agent, user, opener = make_agent(config, task, 0), make_user(config, task, 0), world_opener("clinic")
        episode = asyncio.run(
            run_episode(task, agent, user, opener, episode_id="bench", limits=config.limits())
        )
        accounted.append(own_time(episode))
        if spec.endswith("@oracle") and (episode.outcome is None or episode.outcome.success is not True):
            raise SystemExit(f"{spec} did not solve {task.id}: {episode.termination_reason}")
        return Sample(time.perf_counter() - clock, time.process_time() - cpu)

    return side


def bare(spec: str, url: str):
    """The harness alone on the task's opening message, against a plain world server."""
    from toolshift.harness.process import ProcessHarness

    def side(task: Any) -> Sample:
        import tempfile

        async def go() -> None:
            with tempfile.TemporaryDirectory() as folder:
                harness = ProcessHarness(spec, RunConfig(world="clinic", model=spec), seed=0, task=task)
                context = EpisodeContext(
                    episode_id="bare", task_id=task.id, mcp_url=url, tools=[], title="clinic", policy="",
                    workdir=Path(folder), max_turns=10, extra={"instructions": "Help the customer."},
                )  # fmt: skip
                await harness.start(context)
                try:
                    await harness.turn(task.public_request)
                finally:
                    await harness.close()

        clock, cpu = time.perf_counter(), time.process_time()
        asyncio.run(go())
        return Sample(time.perf_counter() - clock, time.process_time() - cpu)

    return side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--harnesses", default="codex,qwen-code")
    parser.add_argument(
        "--embedded", type=int, default=2, help="Embedded-model episodes per harness (accounting)."
    )
    args = parser.parse_args()

    from toolshift.world import World
    from toolshift.world.mcp.serve import WorldServer, http_server_thread

    tasks = demo_tasks()
    rows = []
    notes = []
    with http_server_thread(WorldServer(World.load("clinic"))) as url:
        for name in args.harnesses.split(","):
            spec = f"harness:{name}@oracle"
            accounted: list[tuple[float, float]] = []
            paired = interleave(hosted(spec, accounted), bare(spec, url), tasks, rounds=args.rounds,
                                names=("hosted episode", "bare harness turn"))  # fmt: skip
            a, b = paired.p("a", 0.5), paired.p("b", 0.5)
            shares = [own / wall for own, wall in accounted]
            rows += [
                (f"{name}, oracle: hosted episode / bare turn, wall p50", f"{a:.2f} / {b:.2f} s", "—"),
                (f"{name}, oracle: toolshift's share of the episode, (A − B) / A at p50", f"{(a - b) / a:.1%}", "≤ 5%"),
                (f"{name}, oracle: toolshift's own time by the episode's accounting, p50 / p90 of the episode",
                 f"{percentile(shares, 0.5):.1%} / {percentile(shares, 0.9):.1%}", "≤ 5%"),
                (f"{name}, oracle: episodes per side; load (1 min) at start → end", paired.load_text(), "—"),
            ]  # fmt: skip
            notes.append(paired.note())
            if args.embedded:
                embedded: list[tuple[float, float]] = []
                side = hosted(f"harness:{name}@embedded", embedded)
                for task in tasks[: args.embedded]:
                    side(task)  # whatever the verdict: the time is what is measured
                shares = [own / wall for own, wall in embedded]
                if shares:
                    rows.append(
                        (f"{name}, embedded: toolshift's own time by the episode's accounting, p50 over {len(shares)}",
                         f"{percentile(shares, 0.5):.1%} of {percentile([w for _, w in embedded], 0.5):.1f} s", "≤ 5%")
                    )  # fmt: skip
    record(
        "harness: toolshift's own time per harness episode (hosted episode vs the bare harness turn, interleaved)",
        rows,
        note=" ".join(notes),
    )


if __name__ == "__main__":
    main()
