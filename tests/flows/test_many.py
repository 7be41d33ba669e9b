"""The many-agents page, end to end on a slice of the published runs: every section from real runs, every choice
made over agents, nothing chosen on a replayed target."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolshift.flows.many import Scope, run_study
from toolshift.flows.many_page import render
from toolshift.traces.agentdojo import convert_agentdojo
from toolshift.traces.conversion import Conversion
from toolshift.traces.tau2 import convert_tau2
from toolshift.traces.taubench import convert_taubench_v1

TAU2 = ("sierra_model_training_gpt-4.1", "sierra_model_training_ft-gpt-4.1-sft", "bogoliubon_gpt-4o")
PIPELINES = ("gpt-4o-2024-05-13", "claude-3-opus-20240229", "command-r-plus")
PER_FILE = 12


def _first(convert):
    """The converter, keeping a file's first `PER_FILE` episodes (a slice, so the test stays small)."""

    def run(path: Path) -> Conversion:
        conv = convert(path)
        conv.episodes = conv.episodes[:PER_FILE]
        return conv

    return run


@pytest.mark.shared
def test_the_page_from_a_slice_of_the_published_runs(shared_data) -> None:
    runs = shared_data / "published-runs"
    if not runs.is_dir():
        pytest.skip(f"the published runs are not in {runs}")
    retail = [f for name in TAU2 for f in sorted((runs / "tau2" / name).glob("*retail*.json"))]
    taubench = sorted((runs / "taubench" / "grok-4-fast-reasoning").glob("retail_*.json"))
    dojo = [
        f for p in PIPELINES for f in sorted((runs / "agentdojo" / "runs" / p / "banking").rglob("*.json"))
    ]
    jobs = [("τ²-bench", _first(convert_tau2), retail), ("τ-bench", _first(convert_taubench_v1), taubench),
            ("AgentDojo", convert_agentdojo, dojo)]  # fmt: skip
    study = run_study(jobs, Scope(tau2_domains=("retail",), transfer=("retail",), rules=False))
    within = study.within["τ²-bench/retail"]
    assert (
        within.cv.agents == tuple(sorted({t.agent for t in within.runs.timelines}))
        and len(within.cv.agents) == 3
    )
    # nothing chosen on the target: the τ-bench agent is in no fold of the choice
    moved = study.transfers["retail"]
    assert {t.agent for t in moved.timelines} == {"grok-4-fast-reasoning"}
    assert not set(within.cv.agents) & {t.agent for t in moved.timelines}
    # each agent's held-out replay is its own episodes, every one replayed once per decider
    for result in within.held_out.values():
        assert sorted(e.episode for e in result.episodes) == sorted(
            t.episode_id for t in within.runs.timelines
        )
    page = render(study)
    for heading in ("## The runs", "## Read-only ceilings, beside the seed's", "### retail",
                    "## Across agents within τ²-bench", "### AgentDojo/agentdojo-banking", "## Against the goals"):  # fmt: skip
        assert heading in page, heading
    assert "| reach | θ = " in page and "Reach minus next-step, paired over tasks" in page
    assert "τ-bench retail, reach | ≥ 76% of the ceiling" in page
