"""Run a plan's episodes as Ray tasks: same episodes, same file, same resume; the driver does all writing.

Each Ray task runs one episode with `asyncio.run` in a worker process and returns it as JSON; the
driver keeps at most `concurrency` in flight, appends each episode durably as it arrives, and
narrows the window when workers report rate limits. Workers import toolshift: on a real cluster
install the same version on every node (or pass a `runtime_env`); see docs/formats.md. A local cluster
is owned by a watchdog process that stops all of it when the driver exits or is killed (`LocalCluster`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolshift.agents.loop import hung_episode
from toolshift.agents.runner import HUNG_GRACE, DurableLog, EpisodeListener, RunPlan, done_key, episode_id
from toolshift.errors import ToolshiftError
from toolshift.traces.episode import Episode

_recorded_cache: dict[str, Any] = {}


def episode_in_worker(
    config_json: dict[str, Any], task_json: dict[str, Any], trial: int, key: str
) -> tuple[str, int]:
    """Worker side: run one episode; returns (episode JSON, rate limits seen)."""
    from toolshift.agents.config import RunConfig, load_recorded, make_agent, make_user
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener
    from toolshift.models import Task

    config = RunConfig.model_validate(config_json)
    task = Task.model_validate(task_json)
    rate_limits = 0

    def saw_rate_limit() -> None:
        nonlocal rate_limits
        rate_limits += 1

    recorded = None
    if config.model == "replay" and config.replay_from:
        if config.replay_from not in _recorded_cache:
            _recorded_cache[config.replay_from] = load_recorded(config.replay_from)
        recorded = _recorded_cache[config.replay_from]
    agent = make_agent(config, task, trial, recorded=recorded, on_rate_limit=saw_rate_limit)
    user = make_user(config, task, trial, on_rate_limit=saw_rate_limit)
    episode = asyncio.run(
        run_episode(
            task,
            agent,
            user,
            world_opener(config.world),
            episode_id=episode_id(key, task.id, trial),
            trial=trial,
            limits=config.limits(),
            source={"run": key, "executor": "ray"},
        )
    )
    return episode.model_dump_json(exclude_none=True), rate_limits


class LocalCluster:
    """A local Ray cluster owned by a watchdog process (`ray_watchdog.py`) in a session of its own.

    The watchdog starts the cluster and stops every process of it, the dashboard and runtime-env agents
    included, when this driver closes its pipe or dies in any way (SIGKILL included): a killed run
    leaves nothing behind.
    """

    def __init__(self, num_cpus: int | None = None) -> None:
        src = str(Path(__file__).resolve().parents[2])
        # Token authentication with a token of this cluster's own, passed to its processes and this driver by
        # environment (Ray would otherwise read or write ~/.ray/auth_token, shared with every other cluster).
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, **self.auth, "PYTHONPATH": path}
        command = [sys.executable, str(Path(__file__).with_name("ray_watchdog.py"))]
        if num_cpus is not None:
            command.append(f"--num-cpus={num_cpus}")
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
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        return ray
    if _local is None or _local.watchdog.poll() is not None:
        _local = LocalCluster(num_cpus)
        atexit.register(_local.stop)
    _use_auth(_local.auth)
    with _keeping_signal_handlers():
        ray.init(address=_local.address, ignore_reinit_error=True, log_to_driver=False)
    return ray


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


def run_ray(
    plan: RunPlan,
    *,
    concurrency: int = 4,
    address: str | None = None,
    num_cpus: int | None = None,
    on_episode: EpisodeListener | None = None,
) -> list[Episode]:
    """Run the plan's missing episodes on Ray; returns them in the order they finished."""
    ray = connect(address, num_cpus=num_cpus)
    remote = ray.remote(num_cpus=1, max_retries=2)(episode_in_worker)
    config_json = plan.config.model_dump(mode="json")
    key = plan.files.key
    pending = list(plan.todo)
    window = max(1, concurrency)
    in_flight: dict[Any, tuple[Any, int, float]] = {}
    done: list[Episode] = []
    meta = {"run": key, **config_json}
    deadline = plan.config.episode_timeout + HUNG_GRACE

    def record(episode: Episode, log: DurableLog) -> None:
        log.write(episode)
        plan.finished[done_key(episode)] = episode
        done.append(episode)
        if on_episode is not None:
            on_episode(episode)

    with DurableLog(plan.files.episodes, meta) as log:
        try:
            while pending or in_flight:
                while pending and len(in_flight) < window:
                    task, trial = pending.pop(0)
                    ref = remote.remote(config_json, task.model_dump(mode="json"), trial, key)
                    in_flight[ref] = (task, trial, time.monotonic())
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                if not ready:
                    now = time.monotonic()
                    for ref, (task, trial, started) in list(in_flight.items()):
                        if now - started > deadline:  # the worker stopped answering: kill it, record the hang
                            ray.cancel(ref, force=True)
                            del in_flight[ref]
                            hung = hung_episode(
                                task,
                                episode_id=episode_id(key, task.id, trial),
                                trial=trial,
                                agent_name=plan.config.model,
                                reason=f"the Ray task did not finish within {deadline:g} s",
                                seconds=now - started,
                            )
                            hung.source.update({"run": key, "executor": "ray"})
                            record(hung, log)
                    continue
                ref = ready[0]
                del in_flight[ref]
                text, rate_limits = ray.get(ref)
                if rate_limits:
                    window = max(1, window // 2)
                elif window < concurrency:
                    window += 1
                record(Episode.model_validate_json(text), log)
        finally:
            # Interrupted: a local cluster goes with its watchdog. On a remote one, ask the tasks to stop;
            # force-cancelling tasks that are finishing at that moment aborts this driver (Ray 2.60).
            if in_flight and _local is None:
                for ref in in_flight:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref)
    return done
