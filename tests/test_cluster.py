"""Every command that runs episodes (run, bench baseline, steward eval, loop, evolve), on a real two-node Ray
cluster on this machine, against its local run; and the faults: a worker process, a whole node, the driver.

The cluster is a head and a second node, each a `ray start` process of its own (owned by a watchdog in a
session of its own, `toolshift.agents.ray_executor.LocalCluster`), one CPU and a custom resource each, and
each its own asset cache; the driver is this process. One cluster serves the whole module and is stopped
with it (nothing of it outlives the module: the watchdogs stop their sessions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolshift.agents.executor import Executor, NodeCount
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.slow

DOMAINS = ["payroll", "it_assets"]
VERSIONS = 2


@dataclass
class Cluster:
    head: object
    second: object
    caches: Path
    address: str

    def executor(self) -> Executor:
        return Executor("ray", address=self.address)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray")
    from toolshift.agents.ray_executor import LocalCluster, _use_auth, connect, shutdown

    caches = tmp_path_factory.mktemp("assets")
    # a node SIGKILLed is declared dead after 3 missed health checks a second apart (Ray's default: 5 of 3 s)
    fast = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
    head = LocalCluster(
        1, resources={"ts_head": 1}, env={**fast, "TOOLSHIFT_ASSET_CACHE": str(caches / "head")}
    )
    try:
        second = LocalCluster(
            1,
            join=head,
            resources={"ts_second": 1},
            env={**fast, "TOOLSHIFT_ASSET_CACHE": str(caches / "second")},
        )
    except BaseException:
        head.stop()
        raise
    try:
        _use_auth(head.auth)
        connect(head.address)
        yield Cluster(head, second, caches, head.address)
    finally:
        shutdown()
        second.stop()
        head.stop()


@pytest.fixture(scope="module")
def build(tmp_path_factory, evolved_build) -> Path:
    return evolved_build(tmp_path_factory.mktemp("build"), DOMAINS, 10, VERSIONS)


def _what_happened(path: Path) -> dict:
    """Each episode as what its agent did and what came of it (no clocks: those differ by run)."""
    out = {}
    for ep in iter_episodes(path):
        calls = [(c.name, c.arguments) for m in ep.messages for c in m.tool_calls or []]
        texts = [m.content for m in ep.messages]
        loop = {k: v for k, v in ep.source.get("loop", {}).items() if k != "seconds"}
        assert ep.id not in out, f"{ep.id} twice in {path}"
        out[ep.id] = (calls, texts, ep.outcome, ep.world_diff, ep.source.get("exposed_tools"), loop)
    return out


def _without(value: object, name: str) -> object:
    """`value` with every `name` key left out, at any depth (wall times differ between any two runs), and floats
    to 9 places (numpy's sums of the same numbers can differ in the last bits with the memory they sit in)."""
    if isinstance(value, dict):
        return {k: _without(v, name) for k, v in value.items() if k != name}
    if isinstance(value, list):
        return [_without(v, name) for v in value]
    return round(value, 9) if isinstance(value, float) else value


def _fetched(cluster: Cluster) -> dict[str, list[str]]:
    """The assets each node fetched, one line per fetch."""
    out = {}
    for node in ("head", "second"):
        log = cluster.caches / node / "fetched.log"
        out[node] = log.read_text().split("\n")[:-1] if log.exists() else []
    return out


@pytest.fixture(scope="module")
def local_oracle(build, tmp_path_factory) -> Path:
    """The oracle baseline on every task × version of the build, run in this process."""
    from toolshift.bench.ecosystem.baselines import run_baseline

    return run_baseline(build, "oracle", tmp_path_factory.mktemp("local-oracle"), split=None)


def test_bench_baseline_on_two_nodes_is_the_local_run(cluster, build, local_oracle, tmp_path):
    from toolshift.bench.ecosystem.baselines import run_baseline

    local = local_oracle
    seen: dict[str, NodeCount] = {}
    on_ray = run_baseline(build, "oracle", tmp_path / "ray", split=None, executor=cluster.executor(),
                          nodes=lambda counts: seen.update(counts))  # fmt: skip
    assert _what_happened(on_ray) == _what_happened(local)
    assert len(seen) == 2 and all(c.done > 0 and c.in_flight == 0 for c in seen.values()), seen
    assert sum(c.done for c in seen.values()) == len(_what_happened(local))
    # the build reached each node once, whatever number of episodes ran there
    fetched = _fetched(cluster)
    assert all(len(lines) == 1 for lines in fetched.values()), fetched
    assert fetched["head"][0].split()[0] == fetched["second"][0].split()[0]
    again = run_baseline(build, "oracle", tmp_path / "ray", split=None, executor=cluster.executor())
    assert _what_happened(again) == _what_happened(local)  # resumed: nothing run twice
    assert json.loads(json.dumps(sorted(_what_happened(local)))) == sorted(_what_happened(again))


def test_run_on_two_nodes_is_the_local_run_and_resumes(cluster, tmp_path):
    """`toolshift run --executor ray`: the same episodes, the same file, the same resume."""
    import asyncio

    from typer.testing import CliRunner

    from toolshift.agents.config import RunConfig
    from toolshift.agents.demo import demo_tasks
    from toolshift.agents.ray_executor import run_ray
    from toolshift.agents.runner import plan_run, run_local
    from toolshift.cli import app
    from toolshift.errors import BadInputError
    from toolshift.models import RowChange
    from toolshift.taskfile import write_tasks

    def outcomes(episodes):
        return sorted(
            (e.task_id, e.trial, e.outcome.success, tuple(c.identity() for c in e.world_diff))
            for e in episodes
        )

    tasks = demo_tasks()[:2]
    config = RunConfig(world="clinic", model="oracle")
    local = plan_run(config, tasks, 2, tmp_path / "local")
    asyncio.run(run_local(local))
    remote = plan_run(config, tasks, 2, tmp_path / "ray")
    remote.todo = remote.todo[:1]
    run_ray(remote, concurrency=2, address=cluster.address)  # an interrupted run: one episode finished
    resumed = plan_run(config, tasks, 2, tmp_path / "ray")
    assert len(resumed.todo) == 3
    done = run_ray(resumed, concurrency=2, address=cluster.address)
    assert len(done) == 3 and all(e.source["executor"] == "ray" for e in done)
    final = plan_run(config, tasks, 2, tmp_path / "ray")
    assert final.todo == []
    assert outcomes(final.current_episodes()) == outcomes(local.current_episodes())
    assert {e.id for e in final.current_episodes()} == {e.id for e in local.current_episodes()}
    # the command itself, with a task the oracle cannot solve (an invalid task)
    wrong = RowChange(table="patient", key="PAT-00001", field="email", op="update", before="x", after="no@x")
    impossible = tasks[1].model_copy(update={"id": "impossible", "expected_changes": [wrong]})
    tasks_file = write_tasks(tmp_path / "clinic.tasks.jsonl", [*tasks, impossible])
    args = ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(tmp_path / "cli"),
            "--executor", "ray", "--ray-address", cluster.address, "--concurrency", "2"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (path,) = (tmp_path / "cli").glob("run-*.episodes.jsonl")
    assert len(list(iter_episodes(path))) == 3
    assert "invalid tasks" in result.output
    # bad input met on a worker is what a local run says: one line naming it, exit 2 (the replay file is shipped)
    other = write_tasks(tmp_path / "other.tasks.jsonl", [impossible])
    (recorded,) = (tmp_path / "ray").glob("run-*.episodes.jsonl")  # the two clinic tasks' episodes only
    args = ["run", "--world", "clinic", "--tasks", str(other), "--model", "replay", "--replay-from", str(recorded),
            "--no-check", "--out", str(tmp_path / "replay"), "--executor", "ray", "--ray-address", cluster.address]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, BadInputError) and result.exception.exit_code == 2, result.output
    assert "\n" not in str(result.exception) and "no recorded episode for task 'impossible'" in str(
        result.exception
    )
    assert str(result.exception).startswith(str(recorded))  # the driver's file, named as a local run names it


def _steward(build: Path, run: Path, *extra: str) -> dict:
    from typer.testing import CliRunner

    from toolshift.cli import app

    args = ["steward", "eval", str(build), "--run", str(run), "--resamples", "20", "--train-sample", "4",
            "--sample", "3", "--model", "embedded", "--model-sample", "1", "--max-turns", "1",
            "--model-rows", "plan", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads((run / "results.json").read_text())


def test_steward_eval_on_two_nodes_is_the_local_run(cluster, build, tmp_path):
    """Every row of the experiment — training episodes, the instrument with each library, frozen-v1, the model
    behind Steward and on its domain's tools — run on the cluster, with the same episodes and scores."""
    local = _steward(build, tmp_path / "local")
    on_ray = _steward(build, tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address)
    files = sorted(p.relative_to(tmp_path / "local") for p in (tmp_path / "local").rglob("*.episodes.jsonl"))
    assert {"train", "follow", "model"} <= {f.parts[0] for f in files}
    for f in files:
        assert _what_happened(tmp_path / "ray" / f) == _what_happened(tmp_path / "local" / f), f
    for part in ("supply", "follow", "model"):
        assert on_ray[part] == local[part], part
    # the libraries are maintained on the driver alone, the same on both
    assert [w["edits"] for w in on_ray["work"]["incremental"].values()] == [
        w["edits"] for w in local["work"]["incremental"].values()
    ]


def _loop(build: Path, out: Path, *extra: str) -> dict:
    from typer.testing import CliRunner

    from toolshift.cli import app

    args = ["loop", str(build), "--model", "plan-follower", "--out", str(out), "--resamples", "20",
            "--versions", "1,2", "--conditions", "off,all", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads((out / "results.json").read_text())


def test_loop_on_two_nodes_is_the_local_run(cluster, build, tmp_path):
    """Each version's episodes and evolution's children served on the cluster, the library, flows and children
    learned on the driver between versions: the same episodes, recordings, learning and figures."""
    local = _loop(build, tmp_path / "local")
    on_ray = _loop(build, tmp_path / "ray", "--executor", "ray", "--ray-address", cluster.address)
    compared = 0
    for c in ("off", "all"):
        for v in (1, 2):
            for name in ("episodes.jsonl", "recordings.jsonl", "children.jsonl", "children.recordings.jsonl"):
                one, two = tmp_path / "local" / c / f"v{v}" / name, tmp_path / "ray" / c / f"v{v}" / name
                assert one.exists() == two.exists(), (c, v, name)
                if one.exists():
                    assert _what_happened(two) == _what_happened(one), (c, v, name)
                    compared += len(_what_happened(one))
    assert compared > 0
    learned = (tmp_path / "local" / "all" / "v1" / "learned.json").read_text()
    assert (tmp_path / "ray" / "all" / "v1" / "learned.json").read_text() == learned

    assert _without(on_ray["conditions"], "seconds") == _without(local["conditions"], "seconds")
    assert not list((tmp_path / "ray").rglob("gateway"))  # the gateways' scratch stayed on the nodes


def test_evolve_solver_attempts_on_two_nodes_are_the_local_run(cluster, tmp_path):
    from typer.testing import CliRunner

    from toolshift.cli import app

    runner = CliRunner()
    seeds = tmp_path / "seeds.jsonl"
    assert runner.invoke(app, ["evolve", "seeds", "--out", str(seeds)]).exit_code == 0
    runs = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray", "--ray-address", cluster.address])):
        out = tmp_path / name
        args = ["evolve", "run", "--seeds", str(seeds), "--out", str(out), "--solver", "noisy-oracle:0.7",
                "--attempts", "4", "--generations", "1", "--max-steps", "3", *extra]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        runs[name] = out
    files = sorted(
        p.relative_to(runs["local"]) for p in runs["local"].rglob("*.jsonl") if "episodes" in p.parts
    )
    assert files
    for f in files:
        assert _what_happened(runs["ray"] / f) == _what_happened(runs["local"] / f), f
    for record in sorted((runs["local"] / "programs").glob("*.json")):
        local, ray = (
            json.loads(record.read_text()),
            json.loads((runs["ray"] / "programs" / record.name).read_text()),
        )
        assert [a["strict_success"] for a in ray["attempts"]] == [
            a["strict_success"] for a in local["attempts"]
        ]
        assert ray.get("completion") == local.get("completion")


# --- faults: a worker process, a whole node, the driver -------------------------------------------------


def _members(watchdog_pid: int) -> dict[int, str]:
    """The processes of a node (its watchdog's session, the watchdog left out), by pid, with their titles."""
    import os

    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == watchdog_pid:
            continue
        try:
            if os.getsid(int(entry.name)) != watchdog_pid:
                continue
            out[int(entry.name)] = (
                (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
    return out


def _wait(condition, what: str, guard: float = 600.0) -> None:
    """Wait for `condition`; `guard` seconds is only ever reached when something is broken, never a speed limit."""
    import time

    deadline = time.monotonic() + guard
    while not condition():
        assert time.monotonic() < deadline, f"hung waiting for {what}"
        time.sleep(0.05)


def _running(node, job: str) -> list[int]:
    """The node's worker processes running an item of `job` right now (Ray titles them after the task)."""
    return [pid for pid, cmd in _members(node.watchdog.pid).items() if cmd.startswith(f"ray::{job} ")]


def test_an_item_whose_worker_dies_on_every_try_is_recorded_lost_with_the_reason(cluster, build, tmp_path):
    import os
    import signal
    import threading

    from toolshift.bench.ecosystem.baselines import run_baseline

    done: list[BaseException | None] = []
    executor = Executor("ray", address=cluster.address, retries=0)
    args = dict(split=None, sample=1, max_turns=1, executor=executor)
    thread = threading.Thread(
        target=lambda: done.append(run_baseline(build, "embedded", tmp_path / "lost", **args) and None)
    )
    thread.start()
    _wait(
        lambda: bool(_running(cluster.head, "bench embedded")) or not thread.is_alive(),
        "an episode on the head",
    )
    for pid in _running(cluster.head, "bench embedded"):
        os.kill(pid, signal.SIGKILL)
    thread.join()
    assert done == [None]
    (path,) = (tmp_path / "lost").glob("*.episodes.jsonl")
    eps = list(iter_episodes(path))
    lost = [e for e in eps if e.outcome and "lost" in e.outcome.info]
    assert len(lost) == 1 and len(eps) == VERSIONS, [e.id for e in eps]
    assert lost[0].termination_reason == "world_error" and lost[0].outcome.success is None
    assert "WorkerCrashedError on head" in lost[0].outcome.info["lost"]
    assert lost[0].outcome.info["charged_to"] == "harness"


def test_a_driver_killed_mid_run_resumes_without_redoing_or_losing_an_episode(
    cluster, build, local_oracle, tmp_path
):
    import os
    import signal
    import subprocess
    import sys

    from toolshift.bench.ecosystem.baselines import run_baseline

    local = local_oracle
    out = tmp_path / "ray"
    args = [sys.executable, "-m", "toolshift", "bench", "baseline", str(build), "--agent", "oracle", "--split", "all",
            "--out", str(out), "--executor", "ray", "--ray-address", cluster.address]  # fmt: skip
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, **cluster.head.auth, "PYTHONPATH": src}
    driver = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        path = out / "oracle.episodes.jsonl"

        def started() -> bool:
            assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
            return path.exists() and sum(1 for _ in iter_episodes(path)) >= 1

        _wait(started, "the driver's first episodes")
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    kept = len(_what_happened(path))
    total = len(_what_happened(local))
    assert 1 <= kept < total  # killed mid-run, with what finished kept
    run_baseline(build, "oracle", out, split=None, executor=cluster.executor())
    assert _what_happened(path) == _what_happened(local)  # every episode once: none redone, none lost


def test_a_worker_process_and_a_whole_node_killed_mid_run_lose_and_duplicate_nothing(
    cluster, build, tmp_path
):
    """Last in the module: the second node does not come back."""
    import os
    import signal
    import threading

    from toolshift.bench.ecosystem.baselines import run_baseline

    seen: dict[str, NodeCount] = {}
    done: list[object] = []
    args = dict(split=None, sample=2, max_turns=1)
    thread = threading.Thread(target=lambda: done.append(run_baseline(
        build, "embedded", tmp_path / "ray", executor=cluster.executor(), nodes=lambda c: seen.update(c), **args
    )))  # fmt: skip
    thread.start()
    job = "bench embedded"
    _wait(lambda: bool(_running(cluster.head, job)) or not thread.is_alive(), "an episode on the head")
    for pid in _running(cluster.head, job):  # a worker process, mid-episode
        os.kill(pid, signal.SIGKILL)
    _wait(
        lambda: bool(_running(cluster.second, job)) or not thread.is_alive(), "an episode on the second node"
    )
    for pid in _members(cluster.second.watchdog.pid):  # the whole second node: raylet, workers, agents
        os.kill(pid, signal.SIGKILL)
    thread.join()
    assert len(done) == 1
    path = Path(str(done[0]))
    retried = {label: c.retried for label, c in seen.items()}
    assert sum(c.lost for c in seen.values()) == 0 and sum(retried.values()) >= 2, seen
    assert any(label.startswith("head") and n >= 1 for label, n in retried.items()), seen
    on_ray = _what_happened(path)
    assert not [k for k, v in on_ray.items() if v[2] and "lost" in v[2].info]
    local = run_baseline(build, "embedded", tmp_path / "local", **args)
    assert on_ray == _what_happened(local)
    run_baseline(
        build, "embedded", tmp_path / "ray", executor=cluster.executor(), **args
    )  # resumed: nothing to do
    assert _what_happened(path) == on_ray
