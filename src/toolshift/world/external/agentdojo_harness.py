"""The oracle through AgentDojo's own harness: `benchmark_suite_without_injections` with a ground-truth pipeline.

AgentDojo's `GroundTruthPipeline` plays one task's ground truth; `OracleByPrompt` picks the task by the
prompt it is given, so AgentDojo's own benchmark loop (`benchmark_suite_without_injections`: environment
loading, utility checks, `TraceLogger` files) runs the whole suite. It measures AgentDojo's harness and
writes real AgentDojo logs for the converter (`toolshift traces convert agentdojo`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from toolshift.world.external import agentdojo

PIPELINE_NAME = "toolshift-oracle"


def run_oracle(suite_name: str, task_ids: list[str] | None, logdir: Path) -> dict[str, Any]:
    """Run the ground truth of a suite's user tasks through AgentDojo's benchmark loop, logging to `logdir`.

    Returns `{"tasks": n, "seconds": wall time, "utility": {task id: bool}}`.
    """
    from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.benchmark import benchmark_suite_without_injections
    from agentdojo.logging import OutputLogger

    suite = agentdojo.suite(suite_name)
    by_prompt = {t.PROMPT: t for t in suite.user_tasks.values()}

    class OracleByPrompt(BasePipelineElement):  # type: ignore[misc]
        """The ground truth of whichever user task's prompt this is."""

        def query(self, query, runtime, env, messages=(), extra_args=None):  # type: ignore[no-untyped-def]
            return GroundTruthPipeline(by_prompt[query]).query(
                query, runtime, env, messages, extra_args or {}
            )

    pipeline = AgentPipeline([SystemMessage(agentdojo.system_message()), InitQuery(), OracleByPrompt()])
    pipeline.name = PIPELINE_NAME
    started = time.perf_counter()
    with OutputLogger(str(logdir), live=None):
        results = benchmark_suite_without_injections(
            pipeline, suite, logdir=Path(logdir), force_rerun=True, user_tasks=task_ids,
            benchmark_version=agentdojo.BENCHMARK_VERSION,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    utility = {task: bool(ok) for (task, _), ok in results["utility_results"].items()}
    return {"tasks": len(utility), "seconds": seconds, "utility": utility}
