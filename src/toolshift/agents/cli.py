"""`toolshift run` (tasks × trials of one agent against a world) and `toolshift agents` (model listing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from toolshift import terminal
from toolshift.agents.chat import DEFAULT_MAX_TOKENS
from toolshift.errors import BadInputError

app = typer.Typer(help="Agent models, user simulators and scripted policies.", no_args_is_help=True)
console = terminal.console()


@app.command("models")
def models() -> None:
    """List the agent kinds `toolshift run --model` accepts."""
    table = Table(title="agent models", header_style="bold")
    table.add_column("--model")
    table.add_column("what it is")
    table.add_row(
        "embedded",
        "SmolLM2-135M-Instruct (GGUF, in-process); each turn's grammar copies identifiers from the conversation; no key",
    )
    table.add_row(
        "embedded:recent", "the same, every copied value the most recent span of its shape (a rule)"
    )
    table.add_row("oracle", "executes each task's gold path (validates tasks and metrics)")
    table.add_row("replay", "re-executes a recorded episode's calls (--replay-from EPISODES.jsonl)")
    table.add_row(
        "openai:<name>", "any OpenAI-compatible endpoint: OPENAI_API_KEY, TOOLSHIFT_BASE_URL or --base-url"
    )
    table.add_row(
        "anthropic:<name>",
        escape("Anthropic Messages API (pip install 'toolshift[anthropic]'; ANTHROPIC_API_KEY)"),
    )
    table.add_row(
        escape("harness:<name>[@<model>]"),
        escape(
            "a harness CLI run from its spec (codex, qwen-code, or a spec file's path); toolshift harness list"
        ),
    )
    table.add_row(
        escape("python:<module>:<factory>[@<model>]"),
        escape(
            "a Python agent that owns its loop; python:openai-agents, python:chat-loop are shipped examples"
        ),
    )
    console.print(table)


@app.command("results")
def results(
    folder: Path = typer.Argument(..., help="A run folder (toolshift run --out)."),
    tasks: Path = typer.Option(
        None,
        "--tasks",
        help="The run's task file: episodes recorded without a strict verdict get one from their world diff.",
    ),
    episodes_too: bool = typer.Option(
        False, "--episodes", help="Also list every episode: success, strict success, collateral rows."
    ),
    as_json: bool = typer.Option(False, "--json", help=terminal.JSON_HELP),
) -> None:
    """Print the results table of every run in a folder, recomputed from its episodes: success and strict
    success (no collateral write), pass^k and strict pass^k, collateral writes."""
    from toolshift.agents.config import RUN_FORMAT
    from toolshift.agents.results import episode_rows, episodes_table, results_table, summarize
    from toolshift.agents.runner import read_finished
    from toolshift.fileio import read_json
    from toolshift.taskfile import read_tasks

    by_id = {t.id: t for t in read_tasks(tasks)} if tasks is not None else None

    configs = sorted(Path(folder).glob("run-*.json"))
    configs = [c for c in configs if not c.name.endswith(".results.json")]
    if not configs:
        raise BadInputError("no run-<key>.json files here", source=str(folder))
    found: list[dict] = []
    for path in configs:
        run_info = read_json(path, what="run configuration")
        try:
            key, config = run_info["key"], run_info["config"]
            label = f"{key}: {config['model']} on {config['world']}"
        except (KeyError, TypeError) as exc:
            raise BadInputError(
                f"not a run configuration ({RUN_FORMAT}): {type(exc).__name__}: {exc}", source=str(path)
            ) from None
        episodes_path = path.with_name(f"run-{key}.episodes.jsonl")
        if not episodes_path.exists():
            continue
        latest = {(e.task_id, e.trial): e for e in read_finished(episodes_path).values()}
        episodes = list(latest.values())
        stored = path.with_name(f"run-{key}.results.json")
        invalid: set[str] = set()
        if stored.exists():
            try:
                invalid = set(read_json(stored, what="results file")["invalid_tasks"])
            except (KeyError, TypeError) as exc:
                raise BadInputError(
                    f"unreadable results file: {type(exc).__name__}: {exc}", source=str(stored)
                ) from None
        trials = 1 + max((e.trial for e in episodes), default=0)
        summary = summarize(episodes, trials=trials, invalid_tasks=invalid, tasks=by_id)
        if as_json:
            run_json = {"key": key, "model": config["model"], "world": config["world"], "config": config,
                        "episodes_file": str(episodes_path), "results": summary.as_dict()}  # fmt: skip
            if episodes_too:
                run_json["episodes"] = episode_rows(episodes, by_id)
            found.append(run_json)
            continue
        console.print(results_table(label, summary))
        if episodes_too:
            console.print(episodes_table(f"{key}: episodes", episodes, by_id))
    if as_json:
        terminal.print_json({"folder": str(folder), "runs": found})


def run(
    world: str = typer.Option(..., "--world", help="Built-in domain, spec YAML path, or http(s) MCP URL."),
    tasks: Path = typer.Option(..., "--tasks", help="Task file (toolshift.tasks/1 JSONL)."),
    model: str = typer.Option(
        "embedded",
        "--model",
        help="embedded | embedded:recent | oracle | replay | openai:<name> | anthropic:<name> | "
        "harness:<name>[@<model>] | python:<module>:<factory>[@<model>] (docs/usage.md, Bring your own agent)",
    ),
    trials: int = typer.Option(1, "--trials", min=1, help="Trials per task."),
    out: Path = typer.Option(..., "--out", help="Run folder (resumable)."),
    user: str = typer.Option(
        "scripted", "--user", help="scripted | embedded | openai:<name> | anthropic:<name>"
    ),
    concurrency: int = typer.Option(
        4, "--concurrency", min=1, help="Episodes in flight (shrinks on rate limits)."
    ),
    executor: str = typer.Option("local", "--executor", help="local (asyncio) or ray."),
    ray_address: str = typer.Option(
        None, "--ray-address", help="Ray cluster address (default: a local cluster)."
    ),
    max_turns: int = typer.Option(30, "--max-turns", min=1),
    model_timeout: float = typer.Option(120.0, "--model-timeout", help="Seconds per model call."),
    tool_timeout: float = typer.Option(30.0, "--tool-timeout", help="Seconds per tool call."),
    episode_timeout: float = typer.Option(900.0, "--episode-timeout", help="Seconds per episode."),
    temperature: float = typer.Option(None, "--temperature"),
    max_tokens: int = typer.Option(
        DEFAULT_MAX_TOKENS,
        "--max-tokens",
        min=1,
        help="Cap on one reply's output tokens (openai and anthropic models).",
    ),
    seed: int = typer.Option(0, "--seed"),
    base_url: str = typer.Option(
        None,
        "--base-url",
        help="OpenAI-compatible endpoint of openai:<name> (else TOOLSHIFT_BASE_URL, else OPENAI_BASE_URL).",
    ),
    replay_from: Path = typer.Option(None, "--replay-from", help="Episodes to replay (--model replay)."),
    skills: Path = typer.Option(
        None,
        "--skills",
        help="A folder of Agent Skills (SKILL.md) offered to the agent; a harness's own folder.",
    ),
    limit: int = typer.Option(None, "--limit", min=1, help="Run only the first N tasks."),
    check: bool = typer.Option(
        True, "--check/--no-check", help="Mark tasks the oracle cannot solve as invalid."
    ),
) -> None:
    """Run tasks × trials of an agent against a world; one episode per line; re-run to resume."""
    from pydantic import ValidationError

    from toolshift.agents.chat import ModelConfigError
    from toolshift.agents.config import RunConfig, resolve_endpoints
    from toolshift.agents.executor import Executor
    from toolshift.agents.results import results_table, summarize
    from toolshift.agents.runner import check_models, find_invalid_tasks, plan_run, run_local, write_catalog
    from toolshift.agents.worlds import world_opener
    from toolshift.fileio import dumps_strict, write_text_atomic
    from toolshift.taskfile import read_tasks
    from toolshift.terminal import finite_or_null

    Executor.choose(executor, 1, ray_address)  # an unknown executor, or an address without Ray: exit 2
    if model == "replay" and replay_from is None:
        raise BadInputError("--model replay needs --replay-from EPISODES_FILE", field="replay_from")
    endpoints = resolve_endpoints(model, user, base_url)
    if base_url and endpoints["base_url"] is None:
        raise BadInputError(
            "--base-url is the endpoint of openai:<name> models, and none is used", field="base_url"
        )
    try:
        config = RunConfig(
            world=world,
            model=model,
            user=user,
            max_turns=max_turns,
            model_timeout=model_timeout,
            tool_timeout=tool_timeout,
            episode_timeout=episode_timeout,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            **endpoints,
            replay_from=str(replay_from.resolve()) if replay_from else None,
            skills=str(skills.resolve()) if skills else None,
        )
    except ValidationError as exc:
        raise BadInputError.from_validation(exc) from None
    if (
        executor == "local"
        and ("embedded" in (model, user) or model == "embedded:recent")
        and concurrency > 1
    ):
        console.print("[dim]embedded model: one episode at a time in this process (it keeps one KV cache)[/]")
        concurrency = 1
    task_list = read_tasks(tasks)[:limit]
    world_opener(world)  # an unknown domain fails here, before anything is written
    from toolshift.world.external import is_external

    if is_external(world):
        from toolshift.world.external import FAMILIES, world_of_task

        family = world if world in FAMILIES else world.split(":", 1)[0]
        for k, t in enumerate(task_list):
            name = world_of_task(family, t)
            if world not in FAMILIES and name != world:
                raise BadInputError(
                    f"task {t.id!r} runs in world {name}, not {world} (use --world {family} for many tasks)",
                    source=str(tasks),
                    record=k,
                    field="id",
                )
    elif not world.startswith(("http://", "https://")):
        from toolshift.world import load_domain

        name = load_domain(world).spec.name
        for k, t in enumerate(task_list):
            if t.domain != name:
                raise BadInputError(
                    f"task {t.id!r} is a {t.domain!r} task, but --world {world} is domain {name!r}",
                    source=str(tasks),
                    record=k,
                    field="domain",
                )
    if out.exists() and not out.is_dir():
        raise BadInputError("--out must be a folder, and this is a file", source=str(out), field="out")
    check_models(config, task_list)  # a missing API key fails here, before the run folder is made
    new_folder = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    # Opens the world once: an unreachable MCP URL fails here, before a run file is written.
    asyncio.run(write_catalog(world, {t.domain for t in task_list}, out, task_list))
    plan = plan_run(config, task_list, trials, out)
    console.print(
        f"run [bold]{plan.files.key}[/] · {len(task_list)} tasks × {trials} trials · "
        f"{len(plan.todo)} to run, {len(task_list) * trials - len(plan.todo)} already done · {plan.files.episodes}"
    )
    remote_world = world.startswith(("http://", "https://"))
    invalid: set[str] = set()
    if check and model != "oracle" and not remote_world:
        invalid = asyncio.run(find_invalid_tasks(world, task_list, plan.files.folder))
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ok {task.fields[ok]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        bar = progress.add_task(config.model, total=len(plan.todo), ok=0)
        ok = 0

        def finished(episode) -> None:  # type: ignore[no-untyped-def]
            nonlocal ok
            ok += bool(episode.outcome and episode.outcome.success)
            progress.update(bar, advance=1, ok=ok)

        try:
            if plan.todo and executor == "ray":
                from toolshift.agents.executor import NodeBars
                from toolshift.agents.ray_executor import run_ray

                run_ray(plan, concurrency=concurrency, address=ray_address, on_episode=finished,
                        progress=NodeBars(progress, ok="-"))  # fmt: skip
            elif plan.todo:
                asyncio.run(run_local(plan, concurrency=concurrency, on_episode=finished))
        except ModelConfigError:
            # A refused key or a wrong model name before the first episode: leave no run behind.
            if plan.discard_if_empty() and new_folder:
                import shutil

                shutil.rmtree(out, ignore_errors=True)
            raise
    episodes = plan.current_episodes()
    if model == "oracle":
        invalid = {e.task_id for e in episodes if e.outcome is not None and e.outcome.success is False}
    results = summarize(episodes, trials=trials, invalid_tasks=invalid, tasks={t.id: t for t in task_list})
    write_text_atomic(
        plan.files.results,
        dumps_strict(finite_or_null({"run": plan.files.key, **results.as_dict()})[0], indent=2) + "\n",
    )
    console.print(results_table(f"{config.model} on {world}", results))
    if invalid:
        console.print(
            f"[yellow]invalid tasks (the oracle cannot produce their expected changes):[/] {', '.join(sorted(invalid))}"
        )
    console.print(f"episodes: {plan.files.episodes}")
