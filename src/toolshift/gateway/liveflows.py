"""`toolshift gateway report`: docs/results/flows-live.md, flows served live by the gateway, in one command.

1. Environment versus trace replay. For each of a few bench domains: tasks synthesised (`bench build`), the
   oracle's episodes recorded (`toolshift run --model oracle`: a measuring instrument), a flow learned on
   the training tasks, and the test episodes replayed both from the record (`toolshift.flows.replay`) and in
   the environment, through the gateway against a live world (`toolshift.gateway.envreplay`).
2. Live runs. The embedded SmolLM2-135M (and, where `--model openai:<m>` and an endpoint are given, that
   model) runs test tasks through the gateway with flows off and on, same seeds: turns each way, lookups
   made, the calls a lookup had answered that the agent made again (answered from the lookup), and detours
   (lookups of a call the agent, with flows off, never made).

The work folder keeps the build and runs, so running it again redoes only what is missing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from toolshift import terminal

DOMAINS = ("payroll", "it_assets", "procurement")
THRESHOLD = 0.3


def _toolshift(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        from toolshift.errors import ToolshiftError

        raise ToolshiftError(f"toolshift {' '.join(args[:2])} failed: {proc.stderr.strip()[-500:]}")


def prepare_runs(
    work: Path, domains: tuple[str, ...], per_domain: int, console: Console, build: Path | None = None
) -> dict[str, Path]:
    """Build tasks (unless an existing bench `build` is given) and record the oracle's episodes per domain
    (reused when present): domain → run folder."""
    build = build or work / "build"
    if not (build / "manifest.json").exists():
        console.print(f"building {per_domain} tasks for each of {', '.join(domains)}")
        _toolshift(
            "bench",
            "build",
            "--out",
            str(build),
            "--domains",
            ",".join(domains),
            "--per-domain",
            str(per_domain),
        )
    runs = {}
    for d in domains:
        out = work / "oracle" / d
        if not list(out.glob("*.episodes.jsonl")):
            console.print(f"recording the oracle's episodes on {d}")
            tasks = build / "domains" / d / "tasks.jsonl"
            _toolshift("run", "--world", d, "--tasks", str(tasks), "--model", "oracle", "--out", str(out))
        runs[d] = out
    return runs


@dataclass
class DomainFlows:
    domain: str
    catalog_path: Path
    flow_path: Path
    test: list[Any]
    train_episodes: int


def learn_domain(domain: str, run: Path, work: Path) -> DomainFlows:
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.model import save_flow
    from toolshift.flows.results import split
    from toolshift.flows.timeline import Catalog, timelines
    from toolshift.traces.catalog import load_catalog
    from toolshift.traces.store import read_episodes

    catalog_path = run / f"{domain}.catalog.json"
    catalog = Catalog.of(load_catalog(catalog_path))
    sp = split(timelines(read_episodes(sorted(run.glob("*.episodes.jsonl"))), catalog))
    flow = learn_flow(sp.train, catalog)
    flow_path = save_flow(flow, work / "flows" / f"{domain}.flow.json")
    return DomainFlows(domain, catalog_path, flow_path, sp.test, len(sp.train))


def flows_config(domain: str, df: DomainFlows, decider: str, *, record: Path | None = None) -> Any:
    from toolshift.gateway.config import GatewayConfig

    fields: dict[str, Any] = {
        "backends": [{"name": domain, "world": domain}],
        "middleware": ["flows"],
        "flows": {
            "flow": str(df.flow_path),
            "catalog": str(df.catalog_path),
            "decider": decider,
            "threshold": THRESHOLD,
        },
    }
    if record is not None:
        fields["middleware"] = ["record", "flows"]
        fields["record"] = {"out": str(record)}
    return GatewayConfig(**fields)


def trace_vs_environment(
    flows: list[DomainFlows], console: Console
) -> tuple[list[list[str]], dict[str, Any]]:
    from toolshift.flows.decide import Decider
    from toolshift.flows.replay import replay
    from toolshift.flows.timeline import Catalog
    from toolshift.gateway.envreplay import replay_in_environment
    from toolshift.traces.catalog import load_catalog

    rows, figures = [], {}
    totals: dict[str, list[int]] = {}
    for df in flows:
        catalog = Catalog.of(load_catalog(df.catalog_path))
        from toolshift.flows.model import load_flow

        flow = load_flow(df.flow_path, catalog)
        for kind in ("reach", "next-step"):
            trace = replay(df.test, Decider(flow, kind, THRESHOLD, catalog))
            env = anyio.run(replay_in_environment, df.test, flows_config(df.domain, df, kind))
            env_saved = sum(e.saved_turns for e in env)
            env_detours = sum(e.detours for e in env)
            same = sum(
                1 for t, e in zip(trace.episodes, env, strict=True) if len(t.saved_turns) == e.saved_turns
            )
            turns = trace.turns
            key = f"{df.domain}/{kind}"
            figures[key] = {
                "episodes": len(env), "turns": turns, "trace_saved": trace.saved, "env_saved": env_saved,
                "trace_detours": trace.detours, "env_detours": env_detours, "same": same,
                "trace_made": trace.made, "env_made": sum(e.lookups_made for e in env),
            }  # fmt: skip
            acc = totals.setdefault(kind, [0, 0, 0, 0, 0, 0, 0])
            for i, v in enumerate(
                (len(env), turns, trace.saved, env_saved, trace.detours, env_detours, same)
            ):
                acc[i] += v
            rows.append(
                _row(
                    kind, df.domain, len(env), turns, trace.saved, env_saved, trace.detours, env_detours, same
                )
            )
            console.print(f"{key}: trace saved {trace.saved}, environment saved {env_saved}")
    for kind, (n, turns, ts, es, td, ed, same) in totals.items():
        rows.append(_row(kind, "all", n, turns, ts, es, td, ed, same))
    return rows, figures


def _row(
    kind: str, domain: str, n: int, turns: int, ts: int, es: int, td: int, ed: int, same: int
) -> list[str]:
    def vs(a: int, b: int) -> str:
        if a == b:
            return f"{a} vs {b}"
        return f"{a} vs {b} ({(a - b) / b:+.1%})" if b else f"{a} vs {b}"

    ratio = f" ({td / ed:.2f}×)" if ed and td != ed else ""
    return [
        kind,
        domain,
        str(n),
        str(turns),
        vs(ts, es),
        f"{td} vs {ed}{ratio}",
        f"{same / n:.1%}" if n else "-",
    ]


# --- live runs --------------------------------------------------------------------------------


@dataclass
class LiveEpisode:
    task: str
    flows: bool
    turns: int
    calls: list[str]
    """Call keys in order (the agent's calls as the gateway saw them)."""
    writes: list[bool]
    lookups: list[list[str]]
    """Per call, the keys of the lookups made after it."""
    answered_by_lookup: int
    success: bool | None


async def _live_episode(
    task: Any, domain: str, model: str, config: Any, *, max_turns: int
) -> tuple[Any, Any]:
    from mcp import Client

    from toolshift.agents.config import RunConfig, make_agent, make_user
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import RemoteSession
    from toolshift.gateway.build import build_gateway
    from toolshift.gateway.server import GatewayServer
    from toolshift.world import load_domain

    gateway = build_gateway(config)
    server = GatewayServer(gateway)
    spec = load_domain(domain).spec
    base_url = os.environ.get("TOOLSHIFT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    run = RunConfig(
        world=domain, model=model, max_turns=max_turns, temperature=0.0,
        base_url=base_url if model.startswith("openai:") else None,
    )  # fmt: skip

    @asynccontextmanager
    async def open_world() -> AsyncIterator[Any]:
        async with Client(server.server, mode="legacy") as client:
            yield RemoteSession(client, spec.policy or spec.description, spec.title)

    async with gateway.running():
        episode = await run_episode(
            task, make_agent(run, task, 0), make_user(run, task, 0), open_world,
            episode_id=f"live-{task.id}", limits=run.limits(), agent_name=model,
        )  # fmt: skip
    return episode, gateway


def live_runs(df: DomainFlows, tasks: list[Any], model: str, work: Path, *, max_turns: int,
              console: Console) -> list[tuple[LiveEpisode, LiveEpisode]]:  # fmt: skip
    from toolshift.flows.values import call_key
    from toolshift.gateway.config import GatewayConfig
    from toolshift.traces.store import iter_episodes

    pairs = []
    for task in tasks:
        got: dict[bool, LiveEpisode] = {}
        for on in (False, True):
            rec = work / "live" / model.replace(":", "_") / ("on" if on else "off") / task.id
            if on:
                config = flows_config(df.domain, df, "reach", record=rec)
            else:
                config = GatewayConfig(
                    backends=[{"name": df.domain, "world": df.domain}],
                    middleware=["record"],
                    record={"out": str(rec)},
                )
            path = rec / f"{df.domain}.episodes.jsonl"
            if not (rec / "agent.json").exists():
                agent_episode, _ = anyio.run(
                    functools.partial(_live_episode, task, df.domain, model, config, max_turns=max_turns)
                )
                rec.mkdir(parents=True, exist_ok=True)
                (rec / "agent.json").write_text(agent_episode.model_dump_json())
            recorded = list(iter_episodes(path)) if path.exists() else []
            agent_raw = json.loads((rec / "agent.json").read_text())
            turns = sum(1 for m in agent_raw["messages"] if m["role"] == "assistant")
            success = (agent_raw.get("outcome") or {}).get("success")
            calls, writes, lookups, answered = [], [], [], 0
            catalog = json.loads(df.catalog_path.read_text())
            effects = {t["name"]: t["effect"] for t in catalog["tools"]}
            for ep in recorded:
                gw_calls = ep.source.get("gateway", {}).get("calls", [])
                assistant = [m for m in ep.messages if m.role == "assistant"]
                for m, info in zip(assistant, gw_calls, strict=False):
                    c = m.tool_calls[0]
                    calls.append(call_key(c.name, c.arguments))
                    writes.append(effects.get(c.name) != "read")
                    lookups.append([call_key(lk["tool"], lk["arguments"]) for lk in info.get("lookups", [])])
                    answered += info.get("answered_by") == "lookup"
            got[on] = LiveEpisode(task.id, on, turns, calls, writes, lookups, answered, success)
        pairs.append((got[False], got[True]))
        console.print(f"live {model} {task.id}: turns off {got[False].turns}, on {got[True].turns}")
    return pairs


def live_rows(model: str, pairs: list[tuple[LiveEpisode, LiveEpisode]], domain: str = "all") -> list[str]:
    off_turns = sum(p[0].turns for p in pairs)
    on_turns = sum(p[1].turns for p in pairs)
    made = sum(len(keys) for p in pairs for keys in p[1].lookups)
    repeated = sum(p[1].answered_by_lookup for p in pairs)
    detours = 0
    for off, on in pairs:
        wanted = set(off.calls)
        detours += sum(1 for keys in on.lookups for k in keys if k not in wanted)
    same = 0
    for off, on in pairs:
        first = next((i for i, keys in enumerate(on.lookups) if keys), len(on.calls))
        same += off.calls[: first + 1] == on.calls[: first + 1] and (
            first < len(on.calls) or off.turns == on.turns
        )
    ok_off = sum(1 for p in pairs if p[0].success)
    ok_on = sum(1 for p in pairs if p[1].success)
    return [
        model, domain, str(len(pairs)), str(off_turns), str(on_turns), f"{off_turns - on_turns:+d}",
        str(made), f"{repeated} of {made}", str(detours), f"{same} of {len(pairs)}", f"{ok_off} / {ok_on}",
    ]  # fmt: skip


def write_report(out: Path, work: Path, *, models: list[str], per_domain: int = 30, live_tasks: int = 4,
                 max_turns: int = 12, console: Console | None = None, build: Path | None = None,
                 command: str | None = None, domains: tuple[str, ...] = DOMAINS) -> Path:  # fmt: skip
    """The page; with `build`, on that bench build's tasks of `domains` (the one build every results page
    stands on) instead of a build of its own in `work`."""
    from toolshift.bench.build import load_manifest
    from toolshift.bench.ecosystem.store import build_fingerprint
    from toolshift.fileio import write_text_atomic
    from toolshift.flows.results import table
    from toolshift.taskfile import read_tasks

    console = console or terminal.console(stderr=True)
    runs = prepare_runs(work, domains, per_domain, console, build)
    build = build or work / "build"
    per_domain = load_manifest(build).per_domain
    command = command or f"toolshift gateway report --out {out}"
    flows = [learn_domain(d, runs[d], work) for d in domains]
    env_rows, figures = trace_vs_environment(flows, console)
    live: list[list[str]] = []
    for m in models:
        every: list[tuple[LiveEpisode, LiveEpisode]] = []
        for df in flows:
            tasks = {t.id: t for t in read_tasks(build / "domains" / df.domain / "tasks.jsonl")}
            chosen = [tasks[t.task_id] for t in df.test[:live_tasks] if t.task_id in tasks]
            pairs = live_runs(df, chosen, m, work, max_turns=max_turns, console=console)
            live.append(live_rows(m, pairs, df.domain))
            every += pairs
        live.append(live_rows(m, every, "all"))
    n_test = sum(len(f.test) for f in flows)
    n_train = sum(f.train_episodes for f in flows)
    text = "\n\n".join(
        [
            "# Flows served live by the gateway",
            f"Made by `{command}` (work folder `{work}/`, reused when run again), on build "
            f"`{build_fingerprint(build)}` (`toolshift bench build --out {build} --seed {load_manifest(build).seed} "
            f"--per-domain {per_domain}`). Seed 003's environment replay and its live check, on "
            f"toolshift worlds: {len(domains)} bench domains ({', '.join(domains)}), {per_domain} synthesised "
            "tasks each; episodes of the `oracle` policy (each task's gold path: a measuring instrument, not a "
            f"model), split by task (positions 2, 5, 7, 9 of every ten held out); flows learned on the "
            f"{n_train} training episodes and replayed on the {n_test} test episodes; θ = {THRESHOLD}.",
            "## Trace replay versus environment replay",
            "The trace replay answers every lookup from the record (`toolshift.flows.replay`). The environment "
            "replay sends each test episode's calls, in order, through the gateway with the flows middleware on, "
            "to a fresh world in the episode's starting state: the lookups are made against the live world, and a "
            "lookup counts as used when a later call of the agent with the same tool and arguments got the same "
            "result from the world (`toolshift.gateway.envreplay`). A turn is saved when every call in it was "
            "so answered. Neither replay decides at user messages (the gateway does not see them).",
            table(
                [
                    "decider",
                    "domain",
                    "episodes",
                    "turns",
                    "saved, trace vs environment",
                    "detours, trace vs environment",
                    "episodes with the same saved turns",
                ],
                env_rows,
            ),
            "## Live runs with flows off and on",
            f"The first {live_tasks} test tasks of each domain, "
            f"run through the gateway once with flows off and once on (reach, θ = {THRESHOLD}), the same model seed "
            f"and a scripted user, at most {max_turns} turns. The lookups' results reach the model as one more "
            "text block of the tool's response (docs/formats.md). *Turns saved* is the off run's turns minus the "
            "on run's; *repeated* counts the agent's calls that a lookup had already answered (with no write "
            "between, the gateway answered them from the lookup); a *detour* is a lookup of a call the agent "
            "never made with flows off. *Pairs alike up to the first lookup* counts the task pairs whose calls were "
            "the same until the first lookup was delivered (without one: the same calls and turns throughout); "
            "the rest diverged before any lookup reached the model (same prompt, seed and temperature 0), so their "
            "turn differences are the model's, not the flow's.",
            table(
                [
                    "model",
                    "domain",
                    "tasks",
                    "turns off",
                    "turns on",
                    "turns saved",
                    "lookups made",
                    "calls a lookup had answered, made again",
                    "detours",
                    "pairs alike up to the first lookup",
                    "successes off / on",
                ],
                live,
            ),
            _notes(models),
        ]
    )
    (work / "figures.json").write_text(json.dumps(figures, indent=1))
    return write_text_atomic(out, text + "\n")


def _notes(models: list[str]) -> str:
    lines = [
        "## Reading it",
        "- The oracle follows each task's step-minimal gold path, so its episodes hold few reads a flow can "
        "take ahead: the savings here are small by construction, and the two replays are compared on the same "
        "episodes, which is the point of the first table.",
        "- The embedded model is SmolLM2-135M: it seldom completes a task, so its live figures say whether the "
        "gateway serves flows to a live agent and how that agent treats them, not what a capable agent saves.",
        "- In these runs the gateway made no lookup live: the flows learned from the oracle look up after a "
        "successful read whose result holds the bound value (a search that found the record), and the embedded "
        "model's reads here failed on bad arguments or found nothing, or it ended the conversation first. The "
        "lookups are served live and their shape checked in tests/gateway (test_flows.py); what a capable model "
        "does with them is not measured here.",
        "- The imported τ²-bench airline world (`toolshift.world.tau2`) reached main only as this page was being "
        "finished; the environment replay here is on toolshift's own bench worlds, and the airline is next.",
    ]
    for m in models:
        if m.startswith("openai:"):
            lines.append(
                f"- `{m}` is the configured endpoint: the model `--model {m}` names at `TOOLSHIFT_BASE_URL`. For the "
                "committed page it was llama-cpp-python's own OpenAI-compatible server on the embedded GGUF "
                "(`python -m llama_cpp.server --model <SmolLM2 GGUF> --model_alias smollm2 --chat_format "
                "chatml-function-calling --n_ctx 4096`), started beside the command: the same weights reached "
                "through the `openai` SDK and a grammar-free tool-calling format."
            )
    if not any(m.startswith("openai:") for m in models):
        lines.append(
            "- A configured endpoint runs with `--model openai:<name>` and `TOOLSHIFT_BASE_URL`. For this page it "
            "was tried as llama-cpp-python's OpenAI-compatible server on the same GGUF (`python -m "
            "llama_cpp.server --chat_format chatml-function-calling --n_ctx 4096`): at a load average of 13 on 2 "
            "cores its first replies, with the domain's tool schemas in the prompt, passed the 120 s model-call "
            "timeout in both runs of the first tasks, so it is left out rather than reported as turns."
        )
    return "\n".join(lines)
