"""The loop's harness hands Steward's plan to a model (D196): the embedded model, a real library, the gateway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from toolshift.bench.ecosystem.settings import VersionWorlds
from toolshift.loop.serve import Served, serve_episode
from toolshift.steward.experiment import build_libraries, context, library_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def library(tmp_path_factory, evolved_build) -> tuple[Path, Path, object]:
    out = evolved_build(tmp_path_factory.mktemp("build"), ["payroll"], 20, 2)
    ctx = context(out, out / "steward")
    build_libraries(ctx)
    task = next(t for t in sorted(ctx.tasks.values(), key=lambda t: t.id) if t.split == "test")
    return out, library_path(ctx, "incremental", 1), task


def _serve(library, tmp_path: Path, handoff: bool):
    build, lib, task = library
    return asyncio.run(
        serve_episode(
            build, task, 1, Served(library=lib), tmp_path / "rec", model="embedded",
            episode_id=f"e:{task.id}:v1", max_turns=1, handoff=handoff,
        )
    )  # fmt: skip


def test_the_harness_asks_steward_and_the_model_reads_the_plan(library, tmp_path):
    episode, recording, _ = _serve(library, tmp_path, handoff=True)
    handed = episode.source["handoff"]
    assert handed and handed["steps"] >= 1
    system = episode.messages[0].content
    assert "Steps for this request: 1. " in system
    # it leads the policy, so a prompt that clips the policy keeps it
    assert system.split("# Policy\n", 1)[1].startswith(("Ask the customer for: ", "Steps for this request: "))
    assert not {"steward_plan", "retrieve_tools", "explore_capabilities"} & set(
        episode.source["exposed_tools"]
    )
    # the harness's own steward_plan is answered by the steward middleware, never recorded as the agent's
    assert recording is None or all(
        c.name != "steward_plan" for m in recording.messages for c in m.tool_calls or []
    )


def test_without_the_handoff_the_model_is_shown_stewards_tools(library, tmp_path):
    episode, _, _ = _serve(library, tmp_path, handoff=False)
    assert "handoff" not in episode.source
    assert "Steps for this request" not in episode.messages[0].content
    assert "steward_plan" in episode.source["exposed_tools"]


def test_a_request_steward_has_no_plan_for_is_served_the_backends_own_tools(library, tmp_path):
    """D214: the handoff finds no plan (an empty library): the session gets the domain's tools, as without
    Steward, never a few retrieved tools and no way to ask for more."""
    from toolshift.steward.library import Library

    build, _, task = library
    empty = tmp_path / "empty.sqlite"
    Library.create(empty, name="empty").close()
    episode, _, _ = asyncio.run(
        serve_episode(
            build, task, 1, Served(library=empty), tmp_path / "rec", model="embedded",
            episode_id=f"e:{task.id}:v1", max_turns=1,
        )
    )  # fmt: skip
    assert episode.source["handoff"] is None
    assert "Steps for this request" not in episode.messages[0].content
    domain_tools = set(VersionWorlds(build).catalog(task.domain, 1).tools)
    assert set(episode.source["exposed_tools"]) == domain_tools
