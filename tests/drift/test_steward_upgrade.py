"""Steward across a real upgrade (D364–D366, D369): a skill learned on the filesystem server's 0.6.2 is rebound to
`read_text_file` on 2026.8.31, where `read_file` is deprecated, and still does the job there; the gateway in front
of the server picks the upgrade up live and has Steward re-check and maintain the library without a restart."""

from __future__ import annotations

import pytest

from toolshift.drift.capabilities import resolve
from toolshift.drift.deploy import watch_upgrades
from toolshift.drift.replay import PathReplay, real_world, replay
from toolshift.drift.tasks import DriftTask, make_tasks
from toolshift.steward.check import catalog_from_tools, check_library
from toolshift.steward.library import Library, copy_library
from toolshift.steward.maintain import Maintainer

from .servers import listing, real, run


async def _episode(inst, task, agent, eid):
    from toolshift.agents.loop import EpisodeLimits, run_episode
    from toolshift.agents.users import ScriptedUser

    return await run_episode(
        task.task, agent, ScriptedUser(task.task.public_request, task.task.instruction), real_world(inst),
        episode_id=eid, limits=EpisodeLimits(max_turns=20, result_chars=100_000),
    )  # fmt: skip


def _with_gold(inst, task: DriftTask, listed) -> tuple[DriftTask, tuple]:
    res = resolve("filesystem", list(task.program), listed)
    made = run(replay(inst, res))
    return DriftTask(
        task.task.model_copy(update={"expected_changes": made.changes}), task.program, task.template
    ), res.steps


@pytest.fixture(scope="module")
def old_library(tmp_path_factory):
    """The copy plan learned on filesystem 0.6.2 from the template's two training instances, built once; each
    test takes its own copy of the file."""
    old = real("filesystem", "0.6.2")
    listed = listing("filesystem", "0.6.2")
    copies = [t for t in make_tasks("filesystem") if t.template == "fs-copy"]
    episodes = []
    for task in copies[:2]:  # the template's training instances
        gold, steps = _with_gold(old, task, listed)
        ep = run(
            _episode(old, gold, PathReplay(list(task.task.instruction.facts), steps), f"train:{task.id}")
        )
        assert ep.outcome.success
        episodes.append(ep)
    path = tmp_path_factory.mktemp("old") / "lib.sqlite"
    with Library.create(path) as lib:
        Maintainer(lib, templates=True).initialise(
            catalog_from_tools("filesystem", listed.tools, 1), episodes
        )
        plan = lib.skills("planning")[0]
        assert plan.tools == ("read_file", "write_file")
    return path, plan, copies


def _library_on_old(old_library, tmp_path):
    path, plan, copies = old_library
    return copy_library(path, tmp_path / "lib.sqlite"), plan, copies


def test_a_skill_learned_on_an_old_version_is_rebound_to_read_text_file_and_still_works(
    old_library, tmp_path
):
    from toolshift.steward.instruments import SkillFollower
    from toolshift.steward.supply import Supply

    lib, plan, copies = _library_on_old(old_library, tmp_path)
    new = real("filesystem", "2026.8.31")
    listed = listing("filesystem", "2026.8.31")
    catalog = catalog_from_tools("filesystem", listed.tools, 2)
    checked = {c.skill: c for c in check_library(lib, catalog)}
    assert checked[plan.id].status == "rebound" and checked[plan.id].reasons == ["read_file → read_text_file"]
    Maintainer(lib, templates=True).maintain(catalog, [])
    moved = lib.get(plan.id)
    assert moved.active and moved.tools == ("read_text_file", "write_file")
    edit = next(e for e in lib.edits() if e.skill_id == plan.id and e.catalog_version == 2)
    assert edit.evidence["deprecated"] == ["read_file"]
    test = copies[-1]  # a test instance: facts the library never saw
    gold, _ = _with_gold(new, test, listed)
    follower = SkillFollower(Supply(lib, catalog))
    ep = run(_episode(new, gold, follower, f"follow:{test.id}"))
    calls = [c.name for m in ep.messages if m.tool_calls for c in m.tool_calls if c.requestor == "assistant"]
    assert calls[:2] == ["read_text_file", "write_file"], (calls, follower.failure)
    assert ep.outcome.success and ep.outcome.info["strict_success"]
    lib.close()


def test_the_gateway_picks_a_real_upgrade_up_live_and_steward_rechecks(old_library, tmp_path):
    lib, plan, _ = _library_on_old(old_library, tmp_path)
    lib.close()
    log = run(
        watch_upgrades("filesystem", ["0.6.2", "2026.8.31"], tmp_path / "deploy", tmp_path / "lib.sqlite")
    )
    first, second = log["versions"]
    assert (first["version"], len(first["tools"]), second["version"], len(second["tools"])) == (1, 9, 2, 14)
    assert first["fingerprint"] != second["fingerprint"] and second["how"] == "session"
    assert "maintained" not in first and first["check"]["counts"].get("broken", 0) == 0
    rebound = {s["skill"]: s for s in second["check"]["skills"] if s["status"] == "rebound"}
    assert rebound[plan.id]["reasons"] == ["read_file → read_text_file"]
    assert (
        second["maintained"]["catalog_version"] == 2 and second["maintained"]["by_op"].get("rename", 0) >= 1
    )
    with Library.open(tmp_path / "deploy" / "library.sqlite") as kept:
        assert kept.get(plan.id).tools == ("read_text_file", "write_file") and kept.catalog_version == 2
    again = run(watch_upgrades("filesystem", ["2026.8.31"], tmp_path / "deploy"))  # the run made again
    assert [v["version"] for v in again["versions"]] == [1] and len(again["versions"][0]["tools"]) == 14
