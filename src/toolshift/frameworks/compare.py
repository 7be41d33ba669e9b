"""`toolshift frameworks compare`: the same Δτ-Bench instances through inspect's `react()` and toolshift's own loop.

Both paths run the same task instances (`instances.delta_tau`: one version and setting, a seeded sample of the
test split) with the embedded model. toolshift's path runs it in process, as `toolshift bench baseline --agent
embedded` does. inspect's path is the real `inspect eval toolshift/delta_tau` CLI with inspect's OpenAI provider
against `toolshift model serve --model embedded`, in chunks of samples so that a killed run resumes. Its logs
are read back by `traces convert inspect`. The page gives SR with bootstrap intervals side by side, their paired
difference, and the wall time per episode of each path: the episode itself, and the whole command's time per
episode.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic
from toolshift.frameworks.instances import Instance, delta_tau, seed_of
from toolshift.intervals import bootstrap_mean
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

CHUNK = 5
"""Samples per `inspect eval` invocation: a killed comparison loses at most one chunk."""


@dataclass
class Side:
    """One path's episodes by instance id, and the wall time its commands took in all."""

    name: str
    episodes: dict[str, Episode]
    command_seconds: float


def _bin(name: str) -> str:
    found = Path(sys.executable).parent / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def run_toolshift(
    found: list[Instance], out: Path, max_turns: int, tick: Callable[[], None], *, run: bool = True
) -> Side:
    """toolshift's own loop with the embedded model, one episode at a time, appended as each ends (resumable).
    `run=False`: only what `out` holds."""
    from toolshift.agents.config import RunConfig, make_model

    path = out / "toolshift.episodes.jsonl"
    timing = out / "toolshift.seconds.json"
    done = {e.source.get("instance"): e for e in iter_episodes(path)} if path.exists() else {}
    seconds = float(read_json(timing, what="timing")["seconds"]) if timing.exists() else 0.0
    if not run:
        return Side("toolshift", {i.id: done[i.id] for i in found if i.id in done}, seconds)
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        write_episodes(path, [], meta={"path": "toolshift", "model": "embedded", "max_turns": max_turns})
    config = RunConfig(world="frameworks-compare", model="embedded", max_turns=max_turns)
    with EpisodeWriter(path, append=True) as writer:
        for inst in found:
            if inst.id in done:
                tick()
                continue
            clock = time.perf_counter()
            agent = make_model("embedded", config, seed=seed_of(inst.id))
            ep = asyncio.run(inst.run(agent, seed_of(inst.id)))
            ep.source["instance"] = inst.id
            writer.write(ep)
            writer.sync()
            done[inst.id] = ep
            seconds += time.perf_counter() - clock
            write_text_atomic(timing, f'{{"seconds": {seconds:.3f}}}\n')
            tick()
    return Side("toolshift", done, seconds)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_inspect(
    found: list[Instance], build: Path, version: int, setting: str, sample: int, seed: int, max_turns: int,
    out: Path, tick: Callable[[], None], *, run: bool = True,
) -> Side:  # fmt: skip
    """inspect's `react()` through the real `inspect eval` CLI, the embedded model served over the OpenAI API.
    `run=False`: only what `out` holds."""
    import httpx

    from toolshift.traces.inspect_log import convert_inspect

    logs = out / "inspect-logs"
    logs.mkdir(parents=True, exist_ok=True)
    timing = out / "inspect.seconds.json"
    seconds = float(read_json(timing, what="timing")["seconds"]) if timing.exists() else 0.0

    def recorded() -> dict[str, Episode]:
        got: dict[str, Episode] = {}
        for log in sorted(logs.glob("*.json")):
            for ep in convert_inspect(log).episodes:
                got[ep.source["inspect"]["sample"]] = ep
        return got

    done = recorded()
    for _ in done:
        tick()
    todo = [i.id for i in found if i.id not in done] if run else []
    if todo:
        port = _free_port()
        server = subprocess.Popen(
            [_bin("toolshift"), "model", "serve", "--model", "embedded", "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(1200):
                try:
                    httpx.get(f"{url}/health", timeout=2)
                    break
                except httpx.HTTPError:
                    time.sleep(0.25)
            for k in range(0, len(todo), CHUNK):
                chunk = todo[k : k + CHUNK]
                cmd = [
                    _bin("inspect"), "eval", "toolshift/delta_tau", "-T", f"build={build}", "-T", f"version={version}",
                    "-T", f"setting={setting}", "-T", f"sample={sample}", "-T", f"seed={seed}", "-T", f"max_turns={max_turns}",
                    "--sample-id", ",".join(chunk), "--model", "openai/embedded", "--model-base-url", f"{url}/v1",
                    "--log-dir", str(logs), "--log-format", "json", "--display", "none", "--max-samples", "1",
                ]  # fmt: skip
                clock = time.perf_counter()
                ran = subprocess.run(
                    cmd,
                    capture_output=True,
                    text=True,
                    env={**os.environ, "OPENAI_API_KEY": "toolshift-local"},
                )
                if ran.returncode != 0:
                    raise BadInputError(f"inspect eval failed: {(ran.stderr or ran.stdout)[-800:]}")
                seconds += time.perf_counter() - clock
                write_text_atomic(timing, f'{{"seconds": {seconds:.3f}}}\n')
                for _ in chunk:
                    tick()
        finally:
            server.terminate()
            server.wait(30)
        done = recorded()
    return Side("inspect", {i: done[i] for i in (x.id for x in found) if i in done}, seconds)


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def page(found: list[Instance], sides: list[Side], command: str, header: dict[str, object]) -> str:
    """The results page: SR and strict SR per path with 95% bootstrap intervals, the paired difference, timings."""
    ids = [i.id for i in found]
    lines = [
        "# toolshift inside inspect_ai: the same Δτ-Bench tasks through inspect's react() and toolshift's loop",
        "",
        f"Generated by `{command}`.",
        "",
    ]
    missing = {s.name: len(ids) - sum(1 for i in ids if i in s.episodes) for s in sides}
    if any(missing.values()):
        counts = ", ".join(f"{s.name} {len(ids) - missing[s.name]} of {len(ids)}" for s in sides)
        lines += [
            f"**Incomplete: this page shows the episodes finished so far ({counts}).** The figures below are over "
            "those episodes only, not the whole sample. The same command without `--no-run` runs what is "
            "missing (finished episodes are kept) and writes the whole page.",
            "",
        ]
    lines += [
        (
            f"Ecosystem `{header['ecosystem']}`, version {header['version']}, setting `{header['setting']}`: "
            f"{len(ids)} test tasks (the seeded sample `toolshift bench baseline --sample {header['sample']} "
            f"--seed {header['seed']}` takes), the embedded SmolLM2-135M, scripted user, at most "
            f"{header['max_turns']} model calls per episode on both paths (inspect's `react()` is held to them, "
            "D425). **inspect** is the real `inspect eval toolshift/delta_tau` CLI. Its "
            "`react()` agent calls the model over the OpenAI API (`toolshift model serve --model embedded`), "
            "one user message per run. **toolshift** is toolshift's own loop with the model in process, as "
            "`toolshift bench baseline --agent embedded` runs it. Both paths have the same world, user and judge "
            "(D420). The model samples at temperature 0.7, seeded per episode in process and per server over "
            "the API, so the two paths do not draw the same samples."
        ),
        "",
        "| path | episodes | SR | strict SR | F1 | Step-SPE | model calls / episode | episode wall p50 (s) | command wall / episode (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    per: dict[str, dict[str, float]] = {}
    by = {i.id: i for i in found}
    for side in sides:
        eps = [side.episodes[i] for i in ids if i in side.episodes]
        judged = [e for e in eps if e.outcome is not None and e.outcome.success is not None]
        sr = [float(bool(e.outcome.success)) for e in judged]  # type: ignore[union-attr]
        strict = [
            float(bool(e.outcome.success) and not e.outcome.info.get("collateral_changes")) for e in judged
        ]  # type: ignore[union-attr]
        extra = [
            by[i].scores(side.episodes[i]) for i in ids if i in side.episodes and by[i].scores is not None
        ]  # type: ignore[misc]
        calls = [float(e.outcome.info.get("turns") or 0) for e in eps if e.outcome is not None]
        walls = [float(e.duration or 0) for e in eps]
        per[side.name] = {
            i: float(bool(side.episodes[i].outcome and side.episodes[i].outcome.success))
            for i in ids
            if i in side.episodes
        }
        lines.append(
            f"| {side.name} | {len(eps)} ({len(eps) - len(judged)} unjudged) | {bootstrap_mean(sr).percent()} | "
            f"{bootstrap_mean(strict).percent()} | {bootstrap_mean([x['F1'] for x in extra]).percent()} | "
            f"{bootstrap_mean([x['Step-SPE'] for x in extra]).percent()} | {statistics.fmean(calls) if calls else 0:.1f} | "
            f"{_p50(walls):.1f} | {side.command_seconds / max(1, len(eps)):.1f} |"
        )
    both = [i for i in ids if all(i in p for p in per.values())]
    if len(sides) == 2 and both:
        diff = bootstrap_mean([per["inspect"][i] - per["toolshift"][i] for i in both])
        walls = {s.name: {i: float(s.episodes[i].duration or 0) for i in both} for s in sides}
        wall_diff = [walls["inspect"][i] - walls["toolshift"][i] for i in both]
        lines += [
            "",
            f"SR through inspect minus SR through toolshift, paired by task over {len(both)} tasks: "
            f"{diff.percent()} points (95% bootstrap interval).",
            f"Episode wall time through inspect minus through toolshift, paired by task: p50 {_p50(wall_diff):+.1f} s.",
        ]
    lines += [
        "",
        "Episode wall is the episode as `run_episode` times it (world, user, judge and every model call). Command "
        "wall per episode also counts what each path spends around its episodes: inspect's start-up and log "
        f"writing (one `inspect eval` per {CHUNK} samples, one sample at a time) and loading the embedded model "
        "per episode in process. F1 is the tool retrieval F1 of the exposed tools against the reference path. "
        "Step-SPE is the reference steps over the agent's steps on solved tasks. Both are as `toolshift bench "
        "eval` defines them.",
        "",
        f"Machine load as this command began and ended (`uptime`, 1-minute average): {header['load']}; a command "
        "that resumed a run gives its own load, not the run's. The machine has 2 cores shared with other work, and "
        "the paths' episodes need not have run at the same load (one after the other under one command, or "
        "resumed in parts), so the wall times are indicative, not a benchmark (docs/benchmarks.md).",
        "",
    ]
    return "\n".join(lines)


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


def compare(
    build: Path, *, version: int, setting: str, sample: int, seed: int, max_turns: int, out: Path,
    paths: tuple[str, ...] = ("inspect", "toolshift"), tick: Callable[[], None] = lambda: None, run: bool = True,
) -> tuple[list[Instance], list[Side], float]:  # fmt: skip
    """Both paths on the same instances, each resuming what `out` holds; `run=False` runs nothing (the page of
    what is there)."""
    found = delta_tau(build, version=version, setting=setting, sample=sample, seed=seed, max_turns=max_turns)
    if not found:
        raise BadInputError("no test task of this build at that version", source=str(build))
    start = load_average()
    sides = []
    for name in paths:
        if name == "inspect":
            sides.append(
                run_inspect(found, build, version, setting, sample, seed, max_turns, out, tick, run=run)
            )
        else:
            sides.append(run_toolshift(found, out, max_turns, tick, run=run))
    return found, sides, start
