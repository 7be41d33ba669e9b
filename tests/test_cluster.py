"""Every command that runs episodes, on a real two-node Ray cluster on this machine, against its local run.

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
    head = LocalCluster(1, resources={"ts_head": 1}, env={"TOOLSHIFT_ASSET_CACHE": str(caches / "head")})
    try:
        second = LocalCluster(
            1, join=head, resources={"ts_second": 1}, env={"TOOLSHIFT_ASSET_CACHE": str(caches / "second")}
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


def _fetched(cluster: Cluster) -> dict[str, list[str]]:
    """The assets each node fetched, one line per fetch."""
    out = {}
    for node in ("head", "second"):
        log = cluster.caches / node / "fetched.log"
        out[node] = log.read_text().split("\n")[:-1] if log.exists() else []
    return out


def test_bench_baseline_on_two_nodes_is_the_local_run(cluster, build, tmp_path):
    from toolshift.bench.ecosystem.baselines import run_baseline

    local = run_baseline(build, "oracle", tmp_path / "local", split=None)
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
