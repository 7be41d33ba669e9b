"""`toolshift harness`: the shipped harness specs, and a spec tried on one clinic task."""

from __future__ import annotations

import asyncio
import json

import typer
from rich.markup import escape
from rich.table import Table

from toolshift import terminal

app = typer.Typer(
    help="Agents that own their loop: harness CLIs from spec files, Python agents, agent SDKs.",
    no_args_is_help=True,
)
console = terminal.console()


@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout.")) -> None:
    """The shipped harness specs, what each speaks to its model, and where its program is (or is not)."""
    from toolshift.harness.spec import SHIPPED, find_executable, load_spec

    rows = []
    for name in SHIPPED:
        spec = load_spec(name)
        package = f"{spec.package.manager}:{spec.package.name}@{spec.package.version}" if spec.package else ""
        rows.append({"name": name, "title": spec.title, "package": package, "wire_api": spec.wire_api,
                     "program": find_executable(spec)})  # fmt: skip
    if as_json:
        terminal.print_json(rows)
        return
    table = Table(title=escape("harness specs (--model harness:<name>[@<model>])"), header_style="bold")
    for column in ("name", "title", "package", "wire API", "program"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["name"],
            r["title"],
            escape(r["package"]),
            r["wire_api"],
            r["program"] or "not installed (make harnesses)",
        )
    console.print(table)
    console.print(
        "Python agents: --model python:<module>:<factory>[@<model>] or python:openai-agents (docs/usage.md)"
    )


@app.command("show")
def show(name: str = typer.Argument(..., help="A shipped spec's name, or a spec file's path.")) -> None:
    """A spec as toolshift reads it (checked), with the program it would run."""
    from toolshift.harness.spec import find_executable, load_spec

    spec = load_spec(name)
    print(json.dumps(spec.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False))
    console.print(f"program: {find_executable(spec) or 'not installed'}")


@app.command("try")
def try_cmd(
    agent: str = typer.Argument(..., help="harness:<name>[@<model>] or python:<module>:<factory>[@<model>]"),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
) -> None:
    """One clinic task (cancel an appointment) with the scripted user: the transcript and the verdict. The
    quickest check of a new harness spec (docs/usage.md, "Bring your own agent")."""
    from toolshift.agents.config import RunConfig, check_model_spec, is_outside, make_agent, make_user
    from toolshift.agents.demo import demo_tasks, transcript
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener
    from toolshift.errors import BadInputError

    check_model_spec(agent, role="model")
    if not is_outside(agent):
        raise BadInputError(
            f"{agent!r} is not an agent that owns its loop (harness:… or python:…)", field="agent"
        )
    task = demo_tasks()[0]
    config = RunConfig(world="clinic", model=agent, max_turns=max_turns)
    made, user, opener = make_agent(config, task, 0), make_user(config, task, 0), world_opener("clinic")
    episode = asyncio.run(
        run_episode(task, made, user, opener, episode_id=f"try:{task.id}", limits=config.limits())
    )
    console.print(transcript(episode))
    outcome = episode.outcome
    console.print(
        f"{episode.harness} with {episode.model}: {episode.termination_reason}, success "
        f"{outcome.success if outcome else None}, {outcome.info.get('turns') if outcome else '?'} turns, "
        f"{episode.duration:.1f} s"
    )
