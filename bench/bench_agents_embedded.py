"""The embedded model: seconds for a 10-turn episode on a real world, per-turn latency and tokens/s."""

from __future__ import annotations

import asyncio
import time

from toolshift.agents.demo import demo_tasks
from toolshift.agents.embedded import EmbeddedModel, load_llama
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.users import UserTurn
from toolshift.agents.worlds import world_opener
from toolshift.report.benchlog import record

TURNS = 10


class PatientUser:
    """A user who never ends the conversation, so the episode runs its full ten turns."""

    name = "patient"

    def __init__(self, opening: str) -> None:
        self.text = opening

    async def opening(self) -> UserTurn:
        return UserTurn(self.text)

    async def respond(self, agent_text: str) -> UserTurn:
        return UserTurn("Please go on with my request.")


def main() -> None:
    started = time.perf_counter()
    load_llama()
    load_seconds = time.perf_counter() - started
    task = demo_tasks()[0]
    runs = []
    for seed in range(2):
        start = time.perf_counter()
        episode = asyncio.run(
            run_episode(
                task, EmbeddedModel(seed=seed), PatientUser(task.public_request), world_opener("clinic"),
                episode_id=f"bench-{seed}", limits=EpisodeLimits(max_turns=TURNS),
            )
        )  # fmt: skip
        runs.append((time.perf_counter() - start, episode))
    seconds = [s for s, _ in runs]
    turns = [e.outcome.info["turns"] for _, e in runs]
    assistant = [m for _, e in runs for m in e.messages if m.role == "assistant"]
    completion = sum(m.usage.completion_tokens or 0 for m in assistant)
    model_time = sum(m.generation_time_seconds or 0 for m in assistant)
    calls = sum(e.outcome.info["tool_calls"] for _, e in runs)
    failed = sum(e.outcome.info["failed_calls"] for _, e in runs)
    record(
        "agents: embedded SmolLM2-135M episode",
        [
            ("model load (GGUF, in-process)", f"{load_seconds:.2f} s", "—"),
            (
                f"{TURNS}-turn episode, clinic world (mean of 2)",
                f"{sum(seconds) / len(seconds):.1f} s",
                "< 30 s",
            ),
            ("turns reached", ", ".join(map(str, turns)), f"{TURNS}"),
            ("seconds per model turn", f"{model_time / len(assistant):.2f} s", "—"),
            ("completion tokens/s (grammar-constrained)", f"{completion / model_time:.1f}", "—"),
            ("tool calls / failed calls", f"{calls} / {failed}", "—"),
        ],
        note="One llama.cpp thread (n_ctx 2048, ≤64 new tokens/turn, ≤8 tools shown), JSON-schema grammar over "
        "call-or-reply.",
    )


if __name__ == "__main__":
    main()
