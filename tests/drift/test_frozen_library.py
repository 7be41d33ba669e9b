"""The frozen library is learned where the first training trajectory is (D370): on real filesystem versions, a
capability the oldest station lacks (`edit_file`, absent at 0.6.2, there at 2026.8.31) leaves that station with
nothing to learn from, so the frozen library is the one learned at 2026.8.31, and the instrument runs with it only
from there on."""

from __future__ import annotations

from toolshift.drift.experiment import ServerRun, build_libraries, follow, oracle, training
from toolshift.drift.history import History, ServerHistory
from toolshift.drift.servers import SERVERS
from toolshift.drift.suite import build_suite
from toolshift.traces.store import iter_episodes

from .servers import listing

OLD, NEW = "0.6.2", "2026.8.31"


def test_the_frozen_library_is_learned_at_the_first_station_with_a_training_trajectory(tmp_path):
    spec = SERVERS["filesystem"]
    history = History(
        servers={
            "filesystem": ServerHistory(
                package=spec.package, registry=spec.registry, versions=[listing("filesystem", OLD),
                                                                        listing("filesystem", NEW)],
            )
        }
    )  # fmt: skip
    suite = build_suite("filesystem", history, only={"fs-edit-1", "fs-edit-3"})  # a train and a test task
    assert suite.stations == [OLD, NEW]
    assert {(c.task, c.version): c.status for c in suite.cases} == {
        ("fs-edit-1", OLD): "absent", ("fs-edit-1", NEW): "ok", ("fs-edit-3", OLD): "absent", ("fs-edit-3", NEW): "ok",
    }  # fmt: skip
    sr = ServerRun(tmp_path, history, suite)
    oracle(sr)
    assert training(sr, OLD) == [] and [e.task_id for e in training(sr, NEW)] == ["fs-edit-1"]
    assert sr.first_learned() == NEW
    assert sr.library("frozen", OLD) == sr.library("frozen", NEW) == sr.library("incremental", NEW)

    work = build_libraries(sr)
    assert work["incremental"][OLD]["active"] == 0 < work["incremental"][NEW]["active"]

    [path] = follow(sr, kinds=("frozen",))
    episodes = list(iter_episodes(path))
    assert [e.id for e in episodes] == [f"steward-frozen:fs-edit-3:{NEW}"]  # none on the station before it
    assert episodes[0].outcome.success, episodes[0].source["failure"]
    calls = [
        c.name
        for m in episodes[0].messages
        if m.tool_calls
        for c in m.tool_calls
        if c.requestor == "assistant"
    ]
    assert "edit_file" in calls
