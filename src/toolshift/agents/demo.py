"""Demo step: the embedded model and the oracle on a few clinic tasks, a results table, and one embedded
episode that succeeded, message by message."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from toolshift.agents.config import RunConfig
from toolshift.agents.results import episode_tokens, summarize
from toolshift.agents.runner import plan_run, run_local
from toolshift.agents.tasks import task_from_path
from toolshift.models import Task, UserInstruction
from toolshift.traces.episode import Episode


def demo_tasks() -> list[Task]:
    """Three clinic tasks made by running their gold paths on a fresh world and recording Δgold."""
    return [
        task_from_path(
            "clinic",
            "demo-cancel",
            "I need to cancel my appointment.",
            UserInstruction(intent="Cancel appointment APT-00003.", facts={"appointment id": "APT-00003"}),
            [
                ("get_appointment", {"appointment_id": "APT-00003"}),
                ("cancel_appointment", {"appointment_id": "APT-00003"}),
            ],
        ),
        task_from_path(
            "clinic",
            "demo-email",
            "Please change the email on my file.",
            UserInstruction(
                intent="Change my email to ana@new.example.",
                facts={"full name": "Ana Abbott", "new email": "ana@new.example", "patient id": "PAT-00001"},
            ),
            [
                ("search_patients", {"full_name": "Ana Abbott"}),
                ("update_patient", {"patient_id": "PAT-00001", "email": "ana@new.example"}),
            ],
        ),
        task_from_path(
            "clinic",
            "demo-invoice",
            "I'd like to pay my open invoice.",
            UserInstruction(intent="Pay invoice INV-00004.", facts={"invoice id": "INV-00004"}),
            [("get_invoice", {"invoice_id": "INV-00004"}), ("pay_invoice", {"invoice_id": "INV-00004"})],
        ),
    ]


EMBEDDED_TURNS = 6


def transcript(episode: Episode) -> Table:
    """An episode's conversation as a table: who spoke, what they said or called, what came back."""
    table = Table(title=f"embedded episode {episode.task_id}: {episode.termination_reason}, "
                  f"success {episode.outcome.success if episode.outcome else None}", header_style="bold",
                  show_lines=False)  # fmt: skip
    table.add_column("who")
    table.add_column("said, called or returned", overflow="fold")
    for m in episode.messages:
        if m.role == "system":
            continue
        text = m.content or ""
        calls = [c for c in m.tool_calls or [] if c.name != "end_conversation"]
        if calls:
            text = "; ".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in calls)
        elif m.tool_calls:
            text = (text + " [ends the conversation]").strip()
        table.add_row(m.role if m.role != "tool" else f"  {m.name}", text[:160])
    return table


def run(console: Console) -> None:
    tasks = demo_tasks()
    table = Table(
        title=f"agents on clinic (3 tasks, scripted user, embedded capped at {EMBEDDED_TURNS} turns)",
        header_style="bold",
    )
    for name in ("model", "task", "success", "turns", "calls", "failed", "tokens", "seconds", "ended by"):
        table.add_column(name, justify="left" if name in ("model", "task", "ended by") else "right")
    summaries = []
    with tempfile.TemporaryDirectory() as tmp:
        shown: Episode | None = None
        for model, turns in (("oracle", 30), ("embedded", EMBEDDED_TURNS)):
            config = RunConfig(world="clinic", model=model, max_turns=turns)
            plan = plan_run(config, tasks, 1, Path(tmp))
            console.print(f"running [bold]{model}[/] on {len(tasks)} tasks over in-memory MCP ...")
            episodes = asyncio.run(run_local(plan, concurrency=1))
            for e in sorted(episodes, key=lambda e: e.task_id):
                info = e.outcome.info if e.outcome else {}
                ok = e.outcome.success if e.outcome else None
                table.add_row(
                    model,
                    e.task_id,
                    "–" if ok is None else ("[green]yes[/]" if ok else "[red]no[/]"),
                    str(info.get("turns", "")),
                    str(info.get("tool_calls", "")),
                    str(info.get("failed_calls", "")),
                    str(episode_tokens(e)),
                    f"{e.duration or 0:.1f}",
                    e.termination_reason or "",
                )
                if model == "embedded" and shown is None and e.outcome and e.outcome.success:
                    shown = e
            summaries.append((model, summarize(episodes, trials=1)))
    console.print(table)
    if shown is not None:
        console.print(transcript(shown))
    else:
        console.print("[yellow]no embedded episode succeeded this time[/]")
    for model, results in summaries:
        console.print(f"{model}: success {results.success.percent()} % over {results.judged_tasks} tasks")
