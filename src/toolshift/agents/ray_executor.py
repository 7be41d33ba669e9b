"""Run a command's episodes on a Ray cluster: the driver places each item on a live node, writes every result
itself, and tries an item whose worker process or node died again elsewhere.

`run_on_ray` is `toolshift.agents.executor.Executor.run` on Ray: one Ray task per item (named after it in
Ray's dashboard), pinned by the driver to a node that has a CPU free (as many at once per node as its
`--num-cpus`), so the driver always knows what runs where (the per-node progress lines) and new nodes are
used as they join. A worker process opens the job once (`Job.open`) and keeps it for the job's other
items; it refuses to run when its toolshift code differs from the driver's (`code_digest`). The files a
job reads travel as `Asset`s, put in the object store once and fetched once per node. A task that fails
because its worker process or node died (Ray's system errors) is tried again on another node up to
`Executor.retries` times, then reported lost; an exception of the job itself stops the run, as it does
locally. `run_ray` runs `toolshift run`'s plan this way. Workers import toolshift: on a real cluster
install the same version on every node. A local cluster is owned by a watchdog process that stops all of
it when the driver exits or is killed (`LocalCluster`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolshift.agents.assets import Asset
from toolshift.agents.executor import Executor, Job, Lost, NodeCount, NodeProgress, code_digest, lost_episode
from toolshift.agents.loop import hung_episode
from toolshift.agents.runner import (
    HUNG_GRACE,
    DurableLog,
    EpisodeListener,
    RunPlan,
    done_key,
    episode_id,
    skill_shelf,
)
from toolshift.errors import ToolshiftError
from toolshift.models import Task
from toolshift.traces.episode import Episode

NODE_REFRESH = 2.0
"""Seconds between readings of the cluster's live nodes while items run."""
NO_NODE_WAIT = 300.0
"""Seconds a run waits for a live node with a CPU before it stops, saying so."""
SUSPECT_SECONDS = 30.0
"""After a task failed for its worker's or node's death, how long its node gets new tasks only when no other
node is free (a SIGKILLed node looks alive until the cluster's health checks miss it)."""
OPENED_KEPT = 4
"""Jobs a worker process keeps open (the loop sends one per version and condition)."""


class LocalCluster:
    """A local Ray node owned by a watchdog process (`ray_watchdog.py`) in a session of its own: a head, or
    with `join` (another `LocalCluster`) a node that joins that head.

    The watchdog starts the node and stops every process of it, the dashboard and runtime-env agents
    included, when this driver closes its pipe or dies in any way (SIGKILL included): a killed run
    leaves nothing behind. `resources` are the node's custom resources; `env` more environment for its
    processes (a node's own model endpoint, `TOOLSHIFT_NODE_BASE_URL`).
    """

    def __init__(
        self,
        num_cpus: int | None = None,
        *,
        join: LocalCluster | None = None,
        resources: dict[str, float] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        import json

        src = str(Path(__file__).resolve().parents[2])
        # Token authentication with a token of this cluster's own, passed to its processes and this driver by
        # environment (Ray would otherwise read or write ~/.ray/auth_token, shared with every other cluster).
        self.auth = (
            join.auth
            if join is not None
            else {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        )
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, **(env or {}), **self.auth, "PYTHONPATH": path}
        command = [sys.executable, str(Path(__file__).with_name("ray_watchdog.py"))]
        if num_cpus is not None:
            command.append(f"--num-cpus={num_cpus}")
        if join is not None:
            command.append(f"--address={join.address}")
        if resources:
            command.append(f"--resources={json.dumps(resources)}")
        self.watchdog = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True, text=True
        )
        assert self.watchdog.stdout is not None
        line = self.watchdog.stdout.readline().strip()
        if not line.startswith("ready "):
            self.watchdog.wait()
            raise ToolshiftError(f"could not start a local Ray cluster: {line or 'the watchdog exited'}")
        self.address = line.split(" ", 1)[1]

    def stop(self) -> None:
        """Disconnect this driver, then let the watchdog stop the cluster and wait until it has."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        for name, value in self.auth.items():
            if os.environ.get(name) == value:
                del os.environ[name]
        if self.watchdog.poll() is None:
            assert self.watchdog.stdin is not None
            with contextlib.suppress(OSError):
                self.watchdog.stdin.close()
            self.watchdog.wait()


_local: LocalCluster | None = None


def connect(address: str | None, *, num_cpus: int | None = None) -> Any:
    """Join the cluster at `address`, or start a local one owned by a watchdog (this package on the
    workers' path), stopped when this process exits in any way."""
    import ray

    global _local
    if ray.is_initialized():
        return ray
    if address:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, **_forwarded())
        return ray
    if _local is None or _local.watchdog.poll() is not None:
        _local = LocalCluster(num_cpus)
        atexit.register(_local.stop)
    _use_auth(_local.auth)
    with _keeping_signal_handlers():
        ray.init(address=_local.address, ignore_reinit_error=True, log_to_driver=False, **_forwarded())
    return ray


FORWARDED = ("TOOLSHIFT_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
"""The driver's endpoints, given to every worker of its job (Ray's `runtime_env`); API keys are not sent:
each node reads its own from the environment its `ray start` ran in."""


def _forwarded() -> dict[str, Any]:
    env = {name: os.environ[name] for name in FORWARDED if os.environ.get(name)}
    return {"runtime_env": {"env_vars": env}} if env else {}


@contextlib.contextmanager
def _keeping_signal_handlers() -> Iterator[None]:
    """Keep this process's SIGTERM and SIGINT handlers across `ray.init`, whose own end the driver at once
    (SIGTERM aborts it, SIGINT exits 0): `toolshift`'s end the run by an exception, so its files are
    closed and the cluster stopped."""
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if callable(handler):
                signal.signal(sig, handler)


def _use_auth(auth: dict[str, str]) -> None:
    """Present the local cluster's token from this driver: Ray reads its auth mode when it is imported, so
    refresh its config and token cache the way Ray's own local start does (versions without token
    authentication have neither)."""
    os.environ.update(auth)
    try:
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def shutdown() -> None:
    """Disconnect from Ray and stop the local cluster, if this process started one."""
    import ray

    global _local
    if _local is not None:
        _local.stop()
        _local = None
    elif ray.is_initialized():
        ray.shutdown()


def ship(path: str | Path, digest: str, data: bytes, address: str | None = None) -> Asset:
    """`path`, packed (`assets.pack`), put in the cluster's object store; nodes fetch it by digest when a job
    opens."""
    ray = connect(address)
    return Asset(str(path), digest, ray.put(data))


_opened: OrderedDict[str, tuple[Job, Any]] = OrderedDict()


def _ray_item(job_box: list[Any], token: str, code: str, item: Any) -> str:
    """Worker side: the job opened once per process (kept for its next items), then one item run."""
    import ray

    if code != code_digest():
        node = ray.get_runtime_context().get_node_id()[:8]
        raise ToolshiftError(
            f"node {node} runs other toolshift code (digest {code_digest()}) than the driver ({code}): "
            "install the same toolshift on every node"
        )
    if token not in _opened:
        job = ray.get(job_box[0])
        _opened[token] = (job, job.open(job.spec))
        while len(_opened) > OPENED_KEPT:
            _opened.popitem(last=False)
    job, opened = _opened[token]
    _opened.move_to_end(token)
    return job.run(opened, item)


@dataclass
class _Node:
    label: str
    cpus: int


def live_nodes(ray: Any) -> dict[str, _Node]:
    """The cluster's live nodes with a CPU, by node id: `head 1a2b3c4d`, `node 5e6f7a8b (gpu_box)` (its own
    resources named)."""
    out = {}
    for n in ray.nodes():
        res = n.get("Resources", {})
        if not n.get("Alive") or res.get("CPU", 0) < 1:
            continue
        own = sorted(k for k in res if k not in ("CPU", "GPU", "memory", "object_store_memory")
                     and not k.startswith(("node:", "accelerator_type:")))  # fmt: skip
        kind = "head" if "node:__internal_head__" in res else "node"
        label = f"{kind} {n['NodeID'][:8]}" + (f" ({', '.join(own)})" if own else "")
        out[n["NodeID"]] = _Node(label, int(res["CPU"]))
    return out


def _place(
    pending: deque[int], nodes: dict[str, _Node], busy: Counter[str], avoid: dict[int, set[str]],
    suspect: dict[str, float], now: float,
) -> tuple[int, str] | None:  # fmt: skip
    """The next item to start and its node (taken off `pending`), or None when none can start now.

    An item never goes back to a node where it failed while another live node could take it (it waits for
    that one); a node where a worker or the node died lately (a SIGKILLed node looks alive for seconds)
    gets new items only when no other node is free; among the rest, the least loaded node."""
    free = [nid for nid, n in nodes.items() if busy[nid] < n.cpus]
    if not free:
        return None
    for pos, index in enumerate(pending):
        failed = avoid.get(index, set())
        choice = [nid for nid in free if nid not in failed]
        if not choice:
            if set(nodes) - failed:
                continue  # a node it has not failed on is busy: wait for it
            choice = free
        fresh = [nid for nid in choice if suspect.get(nid, 0.0) < now] or choice
        del pending[pos]
        return index, min(fresh, key=lambda nid: (busy[nid] / nodes[nid].cpus, nid))
    return None


def run_on_ray(
    executor: Executor,
    job: Job,
    items: Sequence[Any],
    *,
    key: Callable[[Any], str],
    on_result: Callable[[Any, str], None],
    on_lost: Callable[[Any, Lost], None] | None = None,
    progress: NodeProgress | None = None,
    deadline: float | None = None,
    throttle: Callable[[str], bool] | None = None,
) -> None:
    """`Executor.run` on Ray (see the module's docstring)."""
    ray = connect(executor.address)
    from ray.exceptions import RayError, RayTaskError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_item)
    box, token, code = [ray.put(job)], secrets.token_hex(8), code_digest()
    names = [key(item) for item in items]
    pending = deque(range(len(items)))
    tries: Counter[int] = Counter()
    avoid: dict[int, set[str]] = {}
    suspect: dict[str, float] = {}
    in_flight: dict[Any, tuple[int, str, float]] = {}
    accepted: set[str] = set()
    cap = executor.max_in_flight or len(items)
    window = cap
    nodes = live_nodes(ray)
    labels = {nid: n.label for nid, n in nodes.items()}
    counts: dict[str, NodeCount] = {n.label: NodeCount() for n in nodes.values()}
    refreshed = nodeless = time.monotonic()

    def report() -> None:
        if progress is not None:
            progress(counts)

    def lose(index: int, lost: Lost) -> None:
        if on_lost is None:
            raise ToolshiftError(f"{job.name} {names[index]} could not be run: {lost.reason}")
        on_lost(items[index], lost)

    report()
    try:
        while pending or in_flight:
            now = time.monotonic()
            if now - refreshed > NODE_REFRESH:
                nodes, refreshed = live_nodes(ray), now
                for nid, n in nodes.items():
                    labels.setdefault(nid, n.label)
                    counts.setdefault(n.label, NodeCount())
            busy = Counter(node for _, node, _ in in_flight.values())
            while pending and len(in_flight) < window:
                placed = _place(pending, nodes, busy, avoid, suspect, now)
                if placed is None:
                    break
                index, node = placed
                ref = remote.options(
                    name=f"{job.name} {names[index]}",
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                ).remote(box, token, code, items[index])
                in_flight[ref] = (index, node, now)
                busy[node] += 1
                counts[labels[node]].in_flight += 1
                report()
            if not in_flight:
                if time.monotonic() - nodeless > NO_NODE_WAIT:
                    raise ToolshiftError(f"no live Ray node with a free CPU for {NO_NODE_WAIT:g} s")
                time.sleep(0.5)
                refreshed = 0.0
                continue
            nodeless = time.monotonic()
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            if not ready:
                if deadline is not None:
                    for ref, (index, node, started) in list(in_flight.items()):
                        if now - started > deadline:  # the worker stopped answering: kill it, report the item
                            ray.cancel(ref, force=True)
                            del in_flight[ref]
                            counts[labels[node]].in_flight -= 1
                            counts[labels[node]].lost += 1
                            lose(index, Lost(f"did not finish within {deadline:g} s on {labels[node]}",
                                             tries[index] + 1, now - started, hung=True))  # fmt: skip
                            report()
                continue
            for ref in ready:
                index, node, started = in_flight.pop(ref)
                count = counts[labels[node]]
                count.in_flight -= 1
                try:
                    text = ray.get(ref)
                except RayTaskError as exc:  # the job's own exception: the run stops, as a local one does
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, ToolshiftError):  # bad input, a refused key: what a local run says
                        raise cause from None
                    raise ToolshiftError(
                        f"{job.name} {names[index]} failed on {labels[node]}:\n{exc}"
                    ) from None
                except RayError as exc:  # its worker process or node died, or its result was lost with it
                    tries[index] += 1
                    reason = f"{type(exc).__name__} on {labels[node]}"
                    if tries[index] > executor.retries:
                        count.lost += 1
                        lose(index, Lost(f"{reason} (tried {tries[index]} times)", tries[index],
                                         time.monotonic() - started))  # fmt: skip
                    else:
                        count.retried += 1
                        avoid.setdefault(index, set()).add(node)
                        pending.appendleft(index)
                    suspect[node] = time.monotonic() + SUSPECT_SECONDS
                    refreshed = 0.0
                    report()
                    continue
                if names[index] in accepted:  # never expected: one result per item, whatever happened
                    continue
                accepted.add(names[index])
                on_result(items[index], text)
                count.done += 1
                if throttle is not None and throttle(text):
                    window = max(1, window // 2)
                elif window < cap:
                    window += 1
                report()
    finally:
        # Interrupted: a local cluster goes with its watchdog. On a remote one, ask the tasks to stop;
        # force-cancelling tasks that are finishing at that moment aborts this driver (Ray 2.60).
        if in_flight and _local is None:
            for ref in in_flight:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)


# --- `toolshift run` on Ray ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _RunSpec:
    config: dict[str, Any]
    key: str
    world: Asset | None
    replay: Asset | None
    skills: Asset | None = None


def _open_run(spec: _RunSpec) -> tuple[Any, Any, Any]:
    from toolshift.agents.config import RunConfig, load_recorded
    from toolshift.agents.worlds import world_opener

    config = RunConfig.model_validate(spec.config)
    if spec.skills is not None:  # the skills folder as this node has it (shipped once, by digest)
        config = config.model_copy(update={"skills": str(spec.skills.local())})
    recorded = load_recorded(str(spec.replay.local())) if spec.replay is not None else None
    world = str(spec.world.local()) if spec.world is not None else config.world
    return config, recorded, world_opener(world)


def _run_one(opened: tuple[Any, Any, Any], item: tuple[Task, int, str]) -> str:
    """One episode of `toolshift run` (its rate limits beside it, for the driver's window)."""
    from toolshift.agents.config import make_agent, make_user
    from toolshift.agents.loop import run_episode

    config, recorded, opener = opened
    task, trial, key = item
    rate_limits = 0

    def saw_rate_limit() -> None:
        nonlocal rate_limits
        rate_limits += 1

    agent = make_agent(config, task, trial, recorded=recorded, on_rate_limit=saw_rate_limit)
    user = make_user(config, task, trial, on_rate_limit=saw_rate_limit)
    episode = asyncio.run(
        run_episode(
            task, agent, user, opener, episode_id=episode_id(key, task.id, trial), trial=trial,
            limits=config.limits(), source={"run": key, "executor": "ray"}, skills=skill_shelf(config),
        )
    )  # fmt: skip
    return json.dumps({"episode": episode.model_dump_json(exclude_none=True), "rate_limits": rate_limits})


def run_ray(
    plan: RunPlan,
    *,
    concurrency: int = 4,
    address: str | None = None,
    num_cpus: int | None = None,
    on_episode: EpisodeListener | None = None,
    progress: NodeProgress | None = None,
) -> list[Episode]:
    """Run the plan's missing episodes on Ray; returns them in the order they finished."""
    connect(address, num_cpus=num_cpus)
    executor = Executor("ray", address=address, max_in_flight=max(1, concurrency))
    config = plan.config
    world = Path(config.world)
    spec = _RunSpec(
        config.model_dump(mode="json"), plan.files.key,
        executor.asset(world) if world.is_file() else None,
        executor.asset(config.replay_from) if config.model == "replay" and config.replay_from else None,
        executor.asset(config.skills) if config.skills else None,
    )  # fmt: skip
    key = plan.files.key
    done: list[Episode] = []

    def record(episode: Episode, log: DurableLog) -> None:
        log.write(episode)
        plan.finished[done_key(episode)] = episode
        done.append(episode)
        if on_episode is not None:
            on_episode(episode)

    def lost(item: tuple[Task, int, str], why: Lost, log: DurableLog) -> None:
        task, trial, _ = item
        eid = episode_id(key, task.id, trial)
        if why.hung:
            episode = hung_episode(task, episode_id=eid, trial=trial, agent_name=config.model,
                                   reason=f"the Ray task {why.reason}", seconds=why.seconds)  # fmt: skip
        else:
            episode = lost_episode(task, episode_id=eid, trial=trial, agent_name=config.model, lost=why)
        episode.source.update({"run": key, "executor": "ray"})
        record(episode, log)

    with DurableLog(plan.files.episodes, {"run": key, **spec.config}) as log:
        executor.run(
            Job(_open_run, _run_one, spec, name=f"run {key}"),
            [(task, trial, key) for task, trial in plan.todo],
            key=lambda item: f"{item[0].id}:{item[1]}",
            on_result=lambda _item, text: record(
                Episode.model_validate_json(json.loads(text)["episode"]), log
            ),
            on_lost=lambda item, why: lost(item, why, log),
            progress=progress,
            deadline=config.episode_timeout + HUNG_GRACE,
            throttle=lambda text: json.loads(text)["rate_limits"] > 0,
        )
    return done
