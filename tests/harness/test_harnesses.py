"""Real harnesses and agent SDKs on toolshift's tasks: Codex CLI and Qwen Code (npm), the OpenAI Agents SDK and
the documented chat-loop agent (Python), each driven by a model toolshift serves.

Two models drive them: the oracle (the measuring instrument, served as a model that reads its next gold step
off the conversation: any loss is the plumbing's, so every valid task must be solved) and the embedded
SmolLM2 (what a user without a key gets). Episodes are run by `bench baseline` on a small benchmark build and
scored by `bench eval`; a two-turn task checks that a harness run once per user message finds its earlier
writes, and that nothing carries over to the next episode.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from toolshift.harness.spec import find_executable, load_spec

HARNESSES = ["harness:codex", "harness:qwen-code", "python:openai-agents", "python:chat-loop"]


def _skip_unless_installed(agent: str) -> None:
    kind, _, name = agent.partition(":")
    if kind == "harness":
        spec = load_spec(name)
        if find_executable(spec) is None:
            pytest.skip(f"{spec.executable} is not installed (make harnesses; needs npm)")
    elif name == "openai-agents":
        try:
            distribution("openai-agents")
        except PackageNotFoundError:
            pytest.skip("the OpenAI Agents SDK is not installed (make extras: openai-agents)")


@pytest.fixture(scope="module")
def build(evolved_build, tmp_path_factory):
    return evolved_build(tmp_path_factory.mktemp("harness-build"), ["payroll"], per_domain=6, versions=2)


@pytest.fixture(scope="module")
def first_version(evolved_build, tmp_path_factory):
    """v1 alone: the embedded model's episodes are the slow ones."""
    return evolved_build(tmp_path_factory.mktemp("harness-v1"), ["payroll"], per_domain=6, versions=1)


def _toolshift(*args: str) -> str:
    """The command as a user runs it, in its own process (where `import agents` is the Agents SDK, not tests/agents)."""
    done = subprocess.run(
        [sys.executable, "-m", "toolshift", *args], capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _baseline(build: Path, agent: str, out: Path, *, setting: str, sample: int, max_turns: int) -> Path:
    _toolshift(
        "bench", "baseline", str(build), "--agent", agent, "--out", str(out), "--split", "all",
        "--sample", str(sample), "--setting", setting, "--max-turns", str(max_turns),
    )  # fmt: skip
    (path,) = out.glob("*.episodes.jsonl")
    return path


def _scores(build: Path, runs: Path) -> dict:
    """`bench eval`'s scores over all versions (JSON), by the agent's label (its setting where not standard)."""
    out = runs.parent / f"{runs.name}.scores.json"
    _toolshift("bench", "eval", str(runs), "--build", str(build), "--json-out", str(out), "--resamples", "50")
    return {agent: body["all"] for agent, body in json.loads(out.read_text())["agents"].items()}


def _episodes(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.mark.slow
@pytest.mark.parametrize("agent", HARNESSES)
def test_driven_by_the_oracle_every_harness_solves_every_task(agent, build, tmp_path):
    """The plumbing check: the harness's own MCP client and model client carry the gold path through, on every
    version (the tools of v2 renamed, split and merged), judged and scored as toolshift's own agent is."""
    _skip_unless_installed(agent)
    tasks = (
        1 if agent.startswith("harness:") else 2
    )  # a harness costs a CLI start per user turn; one task, two versions
    path = _baseline(
        build, f"{agent}@oracle", tmp_path / "runs", setting="domain-tools", sample=tasks, max_turns=12
    )
    episodes = _episodes(path)
    assert len(episodes) == 2 * tasks  # every task sampled, on both versions
    for e in episodes:
        assert e["outcome"]["success"] is True, (e["task_id"], e["termination_reason"], e["outcome"]["info"])
        assert e["harness"] != "toolshift.agents/1" and e["model"] == "oracle"
        assert e["ecosystem_version"].endswith(("/v1", "/v2")) and e["source"]["exposed_tools"]
    scores = _scores(build, tmp_path / "runs")[f"{agent}@oracle [domain-tools]"]
    assert scores["Strict-SR"]["mean"] == 1.0 and scores["Collateral"]["mean"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("agent", HARNESSES)
def test_every_harness_runs_on_the_embedded_model_and_is_scored(agent, first_version, tmp_path):
    """SmolLM2 behind each harness, on 2 tasks in the standard setting: every episode judged, its model calls,
    prompt size and tools recorded, and `bench eval` scores the file (whatever the SR)."""
    _skip_unless_installed(agent)
    runs = tmp_path / "runs"
    path = _baseline(first_version, f"{agent}@embedded", runs, setting="standard", sample=2, max_turns=2)
    episodes = _episodes(path)
    assert len(episodes) == 2
    for e in episodes:
        info = e["outcome"]["info"]
        assert e["outcome"]["success"] in (True, False), info  # judged: never unknown
        assert e["termination_reason"] in ("agent_stop", "user_stop", "max_turns"), info
        model = [t["model"] for t in info["agent_turns"] if "model" in t]
        assert model and model[0]["calls"] >= 1 and model[0]["system_chars"] > 0 and model[0]["tools"] >= 1
        assert e["messages"][1]["role"] == "user"  # the simulated user opened
        assert any(
            m["role"] == "assistant" and m.get("content") for m in e["messages"]
        )  # a reply was recorded
    assert f"{agent}@embedded" in _scores(first_version, runs)


def _two_turn_task():
    from toolshift.agents.tasks import task_from_path
    from toolshift.models import ScriptedTurn, UserInstruction

    task = task_from_path(
        "clinic",
        "two-turns",
        "Please cancel appointment APT-00003.",
        UserInstruction(intent="Cancel APT-00003, then check it.", facts={"appointment id": "APT-00003"}),
        [
            ("cancel_appointment", {"appointment_id": "APT-00003"}),
            ("get_appointment", {"appointment_id": "APT-00003"}),
        ],
    )
    turns = [
        ScriptedTurn(text=task.public_request, gold_calls=1, reply="It is cancelled."),
        ScriptedTurn(text="What is its status now?", gold_calls=1, reply="Its status is cancelled."),
    ]
    return task.model_copy(update={"turns": turns})


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["harness:codex", "harness:qwen-code"])
def test_a_harness_run_once_per_message_keeps_its_world_and_finds_skills_in_its_own_folder(agent, tmp_path):
    """Turn 2 is a new harness process resumed on its session: it reads what turn 1 wrote. The next episode, on a
    fresh world, reads the appointment as scheduled again; it is run with Agent Skills (`toolshift run --skills
    DIR`), which the harness finds where its users' skills live (Codex's `$CODEX_HOME/skills`, Qwen Code's
    `~/.qwen/skills`) and lists to its model, as what it sends shows."""
    _skip_unless_installed(agent)
    from toolshift.agents.config import RunConfig, make_agent, make_user
    from toolshift.agents.loop import run_episode
    from toolshift.agents.runner import skill_shelf
    from toolshift.agents.worlds import world_opener

    skill = tmp_path / "library" / "cancel-appointment"
    skill.mkdir(parents=True)
    description = "Cancel a patient's appointment, looking it up by its id first, then cancelling it. " * 4
    (skill / "SKILL.md").write_text(f"---\nname: cancel-appointment\ndescription: {description.strip()}\n---\n"
                                    "1. get_appointment\n2. cancel_appointment\n")  # fmt: skip
    task = _two_turn_task()

    async def episode(eid: str, config: RunConfig):
        return await run_episode(
            task, make_agent(config, task, 0), make_user(config, task, 0), world_opener("clinic"),
            episode_id=eid, limits=config.limits(), skills=skill_shelf(config),
        )  # fmt: skip

    plain = RunConfig(world="clinic", model=f"{agent}@oracle", max_turns=10)
    first = asyncio.run(episode("one", plain))
    turns = first.outcome.info["agent_turns"]
    assert len(turns) == 2 and turns[0]["session"] == turns[1]["session"]  # two processes, one session
    users = [m.content for m in first.messages if m.role == "user"]
    assert users[:2] == ["Please cancel appointment APT-00003.", "What is its status now?"]
    reads = [m.content for m in first.messages if m.role == "tool" and m.name.endswith("get_appointment")]
    assert reads and '"status": "cancelled"' in reads[-1]  # turn 2 saw turn 1's write
    assert first.outcome.success is True and first.outcome.info["strict_success"] is True
    assert first.source.get("skills") is None

    second = asyncio.run(episode("two", plain.model_copy(update={"skills": str(tmp_path / "library")})))
    cancels = [
        m.content for m in second.messages if m.role == "tool" and m.name.endswith("cancel_appointment")
    ]
    assert cancels and '"status": "cancelled"' in cancels[0] and "conflict" not in cancels[0]  # a fresh world
    assert second.outcome.success is True
    record = second.source["skills"]
    assert (
        record["native"] is True and record["offered"] == ["cancel-appointment"] and record["opened"] is None
    )
    # the harness put the skill in what it sends its model (Qwen Code as a user message, Codex as instructions)
    if agent == "harness:codex":
        sent = [next(t["model"]["system_chars"] for t in e.outcome.info["agent_turns"] if "model" in t)
                for e in (first, second)]  # fmt: skip
        assert sent[1] - sent[0] >= len(description.strip())


def test_a_spec_with_an_unknown_placeholder_is_refused_naming_it(tmp_path):
    from toolshift.errors import BadInputError

    bad = tmp_path / "mine.yaml"
    bad.write_text(
        "format: toolshift.harness/1\nname: mine\ntitle: Mine\nexecutable: mine\nwire_api: chat\n"
        "start: ['${mesage}']\nresume: ['${message}']\nsession: {from: made}\nreply: {from: stdout_text}\n"
    )
    with pytest.raises(BadInputError) as caught:
        load_spec(str(bad))
    assert "${mesage}" in str(caught.value) and "mine.yaml" in str(caught.value)


def test_the_shipped_specs_pin_the_versions_make_installs():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    for name, variable in (("codex", "CODEX_VERSION"), ("qwen-code", "QWEN_CODE_VERSION")):
        spec = load_spec(name)
        assert spec.package is not None and f"{variable} := {spec.package.version}" in makefile


@pytest.mark.slow
def test_a_harness_behind_the_loops_gateway_is_recorded_and_steward_learns_from_it(evolved_build, tmp_path):
    """`toolshift loop --model harness:codex@oracle`: Codex's calls reach the world through the loop's gateway,
    whose recordings carry the task's id (toolshift's client sends it), and Steward learns v1's library from them."""
    _skip_unless_installed("harness:codex")
    build = evolved_build(tmp_path / "build", ["payroll"], per_domain=6, versions=2)
    out = tmp_path / "loop"
    _toolshift("loop", str(build), "--model", "harness:codex@oracle", "--out", str(out), "--versions", "1,2",
               "--sample", "2", "--conditions", "off,steward", "--resamples", "50")  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    episodes = _episodes_of(out / "steward" / "v1" / "episodes.jsonl")
    recordings = _episodes_of(out / "steward" / "v1" / "recordings.jsonl")
    assert episodes and all(e["harness"] == "codex@0.171.0" for e in episodes)
    assert all(
        e["source"]["loop"]["success"] for e in episodes
    )  # the oracle through Codex, through the gateway
    assert recordings and {r["task_id"] for r in recordings} == {e["task_id"] for e in episodes}
    learned = results["learned"]["steward"]["v1"]["steward"]
    assert learned["episodes"] >= 1 and learned["skills_written"] >= 1


def _episodes_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["python:chat-loop"])
def test_scripted_users_turns_reach_an_outside_agent_and_the_benchmarks_own_checks_judge_it(agent):
    """BFCL's multi-turn entries (one of each category, a held-out function among them) and an AgentDojo task:
    each scripted user turn goes to the agent in its turn, and BFCL's checker and AgentDojo's utility judge."""
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    _skip_unless_installed(agent)
    from toolshift.agents.config import RunConfig, make_agent, make_user
    from toolshift.agents.loop import run_episode
    from toolshift.agents.worlds import world_opener
    from toolshift.world.external import export_tasks

    for family, limit, judge in (
        ("bfcl", 1, "bfcl-multi-turn-checker"),
        ("agentdojo", 1, "agentdojo-utility"),
    ):
        for task in export_tasks(family, limit=limit).tasks[:4]:
            config = RunConfig(world=family, model=f"{agent}@oracle", max_turns=30)
            episode = asyncio.run(
                run_episode(
                    task,
                    make_agent(config, task, 0),
                    make_user(config, task, 0),
                    world_opener(family),
                    episode_id=task.id,
                    limits=config.limits(),
                )
            )
            info = episode.outcome.info
            assert episode.outcome.judged_by == judge and episode.outcome.success is True, (task.id, info)
            said = [m.content for m in episode.messages if m.role == "user" and not m.tool_calls]
            assert said == [t.text for t in task.turns]  # every scripted turn, in order, each after a reply
