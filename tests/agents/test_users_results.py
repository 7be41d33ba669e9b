"""User simulators (disclosure, structured ending, retries) and the variance figures of a run."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolshift.agents.chat import ModelReply, ProposedCall
from toolshift.agents.loop import run_episode
from toolshift.agents.policies import ScriptedPolicy
from toolshift.agents.results import pass_hat_k, summarize
from toolshift.agents.users import LLMUser, ScriptedUser, fact_asked
from toolshift.agents.worlds import world_opener
from toolshift.models import UserInstruction
from toolshift.traces.episode import Episode, Outcome

INSTRUCTION = UserInstruction(
    intent="Change my email.",
    facts={"full name": "Ana Abbott", "date of birth": "1963-10-24", "new email": "a@b"},
)


def test_fact_matching_is_loose_about_form():
    assert fact_asked("date of birth", "Could you give me your birth date?")
    assert fact_asked("full name", "What is your full name?")
    assert fact_asked("new email", "Which new e-mail address? The emails must match.")
    assert not fact_asked("date of birth", "What is your email?")


def test_scripted_user_discloses_progressively_and_ends():
    user = ScriptedUser("Change my email please.", INSTRUCTION)

    async def talk() -> list[Any]:
        return [
            await user.opening(),
            await user.respond("Sure. What is your full name?"),
            await user.respond("And your date of birth?"),
            await user.respond("How can I help?"),
            await user.respond("Your email has been updated."),
        ]

    opening, name, born, unclear, done = asyncio.run(talk())
    assert opening.text == "Change my email please."
    assert "Ana Abbott" in name.text and "1963" not in name.text  # one fact at a time
    assert "1963-10-24" in born.text
    assert not unclear.ends and "Change my email." in unclear.text
    assert done.ends


class ScriptedModel:
    """A chat model test double that plays back replies (the loop under test is real)."""

    name = "script"

    def __init__(self, replies: list[ModelReply]) -> None:
        self.replies = replies
        self.calls = 0

    async def complete(self, messages, tools):
        self.calls += 1
        return self.replies.pop(0)


def test_llm_user_retries_empty_replies_and_ends_with_a_tool_call():
    model = ScriptedModel(
        [
            ModelReply(text="  "),
            ModelReply(calls=[ProposedCall("x", "update_patient", {})]),
            ModelReply(text="It is a@b."),
            ModelReply(calls=[ProposedCall("e", "end_conversation", {"message": "Thanks!"})]),
        ]
    )
    user = LLMUser(model, "Change my email.", INSTRUCTION)
    turn = asyncio.run(user.respond("Which email?"))
    assert turn.text == "It is a@b." and turn.retries == 2 and not turn.ends
    end = asyncio.run(user.respond("Done."))
    assert end.ends and end.text == "Thanks!"


def test_a_failing_simulator_is_not_charged_to_the_agent(tasks):
    task = tasks[0]
    user = LLMUser(ScriptedModel([ModelReply(text="")] * 3), task.public_request, task.instruction)
    agent = ScriptedPolicy("talker", [])
    episode = asyncio.run(run_episode(task, agent, user, world_opener("clinic"), episode_id="u"))
    assert episode.termination_reason == "user_error"
    assert episode.outcome.success is None and episode.outcome.info["charged_to"] == "user"
    results = summarize([episode], trials=1)
    assert results.not_charged == 1 and results.judged_tasks == 0


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_pass_hat_k_falls_with_k_and_starts_at_the_rate(case):
    successes, trials = case
    values = [pass_hat_k(successes, trials, k) for k in range(1, trials + 1)]
    assert abs(values[0] - successes / trials) < 1e-12
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[-1] == (1.0 if successes == trials else 0.0)


def _episode(task: str, trial: int, ok: bool) -> Episode:
    return Episode(id=f"{task}:{trial}", task_id=task, trial=trial, domain="d",
                   outcome=Outcome(success=ok, reward=float(ok), info={"turns": 2}))  # fmt: skip


def test_summary_flips_and_intervals():
    episodes = [_episode("a", 0, True), _episode("a", 1, True), _episode("b", 0, True), _episode("b", 1, False),
                _episode("c", 0, False), _episode("c", 1, False), _episode("bad", 0, False)]  # fmt: skip
    results = summarize(episodes, trials=2, invalid_tasks={"bad"})
    assert results.judged_tasks == 3 and results.invalid_tasks == ["bad"]
    assert abs(results.success.mean - 0.5) < 1e-12
    assert abs(results.pass_k[2].mean - 1 / 3) < 1e-12
    assert abs(results.flip_share.mean - 1 / 3) < 1e-12
    assert results.success.low <= results.success.mean <= results.success.high


def test_an_abandoned_episode_is_a_timeout_not_charged_to_the_agent(tasks):
    from toolshift.agents.loop import hung_episode

    episode = hung_episode(tasks[0], episode_id="x", trial=0, agent_name="m", reason="blocked", seconds=31.0)
    assert episode.termination_reason == "timeout" and episode.outcome.info["charged_to"] == "harness"
    results = summarize([episode, _episode(tasks[0].id, 1, True)], trials=2)
    assert results.not_charged == 1 and results.success.mean == 1.0


# --- strict success and collateral writes (issue 21) -----------------------------------------------------


def test_strict_success_and_collateral_beside_success_on_the_real_clinic_world():
    """Trial 0 cancels the appointment asked for; trial 1 also cancels another: success 1 and pass^2 1,
    strict success ½ and strict pass^2 0, one collateral change, named."""
    from collateral import COLLATERAL_ROW, cancel_episode
    from toolshift.agents.results import episode_collateral

    careful, greedy = cancel_episode(greedy=False, trial=0), cancel_episode(greedy=True, trial=1)
    assert greedy.outcome.success is True and greedy.outcome.info["strict_success"] is False
    results = summarize([careful, greedy], trials=2)
    assert results.success.mean == 1.0 and results.pass_k[2].mean == 1.0
    assert results.strict_success.mean == 0.5 and results.strict_pass_k[2].mean == 0.0
    assert results.mean_collateral == 0.5 and results.collateral_episodes == 1
    assert results.successes_with_collateral == 1 and results.strict_unknown == 0
    assert episode_collateral(greedy).rows == (COLLATERAL_ROW,)
    body = results.as_dict()
    assert body["strict_success"]["mean"] == 0.5 and body["strict_pass_k"]["2"]["mean"] == 0.0


def test_an_episode_without_the_verdict_fields_is_unknown_unless_its_task_is_given():
    from rich.console import Console

    from collateral import COLLATERAL_ROW, cancel_episode, cancel_task, without_verdict_fields
    from toolshift.agents.results import episodes_table, results_table

    old = without_verdict_fields(cancel_episode(greedy=True))
    unknown = summarize([old], trials=1)
    assert unknown.strict_unknown == 1 and unknown.mean_collateral is None and unknown.strict_success.n == 0
    task = cancel_task()
    known = summarize([old], trials=1, tasks={task.id: task})
    assert known.strict_unknown == 0 and known.strict_success.mean == 0.0 and known.mean_collateral == 1.0
    stale = task.model_copy(update={"public_request": "something else"})  # another fingerprint: not its Δgold
    assert summarize([old], trials=1, tasks={task.id: stale}).strict_unknown == 1

    def text(table) -> str:
        console = Console(width=250, record=True)
        console.print(table)
        return console.export_text()

    shown = text(results_table("r", unknown))
    assert "strict verdict unknown (episodes)" in shown and "unknown" in shown.split("collateral writes")[1]
    listing = text(episodes_table("e", [old]))
    assert "unknown" in listing and COLLATERAL_ROW not in listing
    listing = text(episodes_table("e", [old], {task.id: task}))
    assert f"1: {COLLATERAL_ROW}" in listing


def test_agents_results_lists_strict_success_and_collateral_rows(tasks_file, tmp_path, monkeypatch):
    """`agents results --episodes`: a run whose episode predates the verdict fields shows unknown, and with
    `--tasks` the collateral row computed from its world diff."""
    from typer.testing import CliRunner

    from collateral import COLLATERAL_ROW, cancel_episode, without_verdict_fields
    from toolshift.agents import cli as agents_cli
    from toolshift.cli import app
    from toolshift.traces.store import write_episodes

    monkeypatch.setattr(agents_cli.console, "width", 250)  # rows on one line each
    runner = CliRunner()
    out = tmp_path / "run"
    ran = runner.invoke(app, ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle",
                              "--out", str(out), "--no-check"])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    (episodes,) = out.glob("run-*.episodes.jsonl")
    write_episodes(episodes, [without_verdict_fields(cancel_episode(greedy=True))])
    plain = runner.invoke(app, ["agents", "results", str(out), "--episodes"], terminal_width=250)
    assert plain.exit_code == 0, plain.output
    assert "strict verdict unknown (episodes)" in plain.output and COLLATERAL_ROW not in plain.output
    full = runner.invoke(
        app, ["agents", "results", str(out), "--episodes", "--tasks", str(tasks_file)], terminal_width=250
    )
    assert full.exit_code == 0, full.output
    assert f"1: {COLLATERAL_ROW}" in full.output
    assert "strict success % (no collateral write)" in full.output
    assert "0.0 [0.0, 0.0]" in full.output.split("strict success % (no collateral write)")[1].splitlines()[0]
