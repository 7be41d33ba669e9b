"""Agent runs: loop overhead per turn (model time excluded), oracle episodes/s over in-memory MCP, Ray vs local."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from paired import interleave
from toolshift.agents.config import RunConfig
from toolshift.agents.demo import demo_tasks
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.policies import ScriptedCall, ScriptedPolicy
from toolshift.agents.runner import plan_run, run_local
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.report.benchlog import record

TURNS = 200
RAY_BATCH = 60
RAY_ROUNDS = 3


def per_turn_overhead() -> float:
    """Milliseconds per turn of a zero-time agent making one real read call over MCP per turn."""
    task = demo_tasks()[0]
    calls = [
        ScriptedCall("get_appointment", {"appointment_id": f"APT-{i % 400 + 1:05d}"}) for i in range(TURNS)
    ]
    opener = world_opener("clinic")

    async def once() -> float:
        agent = ScriptedPolicy("reader", calls)
        start = time.perf_counter()
        episode = await run_episode(
            task, agent, ScriptedUser(task.public_request, task.instruction), opener, episode_id="b",
            limits=EpisodeLimits(max_turns=TURNS + 5),
        )  # fmt: skip
        assert episode.outcome.info["tool_calls"] == TURNS
        return (time.perf_counter() - start) / episode.outcome.info["turns"]

    asyncio.run(once())
    return 1000 * min(asyncio.run(once()) for _ in range(3))


def oracle_throughput(episodes: int, executor: str) -> float:
    tasks = demo_tasks()
    trials = max(1, episodes // len(tasks))
    with tempfile.TemporaryDirectory() as tmp:
        plan = plan_run(RunConfig(world="clinic", model="oracle"), tasks, trials, Path(tmp))
        start = time.perf_counter()
        if executor == "ray":
            from toolshift.agents.ray_executor import run_ray

            done = run_ray(plan, concurrency=4, num_cpus=2)
        else:
            done = asyncio.run(run_local(plan, concurrency=4))
        elapsed = time.perf_counter() - start
    assert all(e.outcome.success for e in done)
    return len(done) / elapsed


def main() -> None:
    overhead = per_turn_overhead()
    oracle_throughput(30, "local")  # compile the domain and warm caches
    local = oracle_throughput(150, "local")
    rows = [
        ("runner overhead per turn, model time excluded (one MCP read call)", f"{overhead:.2f} ms", "< 5 ms"),
        ("oracle episodes/s, in-memory MCP, written durably", f"{local:.1f}", ">= 20"),
    ]
    try:
        import ray

        from toolshift.agents.ray_executor import connect

        connect(None, num_cpus=2)
        oracle_throughput(12, "ray")  # start the workers
        both = interleave(lambda _: oracle_throughput(RAY_BATCH, "ray"), lambda _: oracle_throughput(RAY_BATCH, "local"),
                          range(RAY_ROUNDS), names=("Ray", "local"))  # fmt: skip
        ray.shutdown()
        rows += both.rows(
            f"{RAY_BATCH} oracle episodes (Ray with num_cpus=2, or local asyncio)", scale=1, unit="s"
        )
        rows.append(
            (
                "Ray / local throughput, same machine (local / Ray seconds, p50/p50)",
                f"{both.ratio(0.5):.2f}",
                "—",
            )
        )
    except ImportError:
        rows.append(("Ray / local throughput", "ray not installed", "—"))
    record(
        "agents: runner overhead and throughput",
        rows,
        note="Clinic world, demo tasks, scripted user. Local runs asyncio in one process (one core for the GIL); "
        "Ray spreads episodes over 2 worker processes, one Ray task per episode; Ray and local batches of the "
        f"same {RAY_BATCH} episodes interleaved (bench/paired.py).",
    )


if __name__ == "__main__":
    main()
