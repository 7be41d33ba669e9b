"""τ²-bench results: reading both layouts, writing them back, and what a round trip keeps."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.traces.demo import EXAMPLE_RUN
from toolshift.traces.episode import Episode, Message, Outcome
from toolshift.traces.store import iter_episodes, write_episodes
from toolshift.traces.tau2 import Tau2Run, convert_tau2, read_results
from toolshift.traces.tau2_write import run_from_episodes, write_results

DATA = Path(__file__).parent / "data"
AIRLINE = EXAMPLE_RUN
TELECOM = DATA / "tau2_telecom_run"
DROPPED_MESSAGE_KEYS = {"raw_data", "is_audio", "turn_taking_action", "contains_speech"}
DROPPED_SIM_KEYS = {"ticks"}


def _without_dropped(sim: dict) -> dict:
    sim = {k: v for k, v in sim.items() if k not in DROPPED_SIM_KEYS}
    sim["messages"] = [{k: v for k, v in m.items() if k not in DROPPED_MESSAGE_KEYS} for m in sim["messages"]]
    return sim


def test_json_round_trip_keeps_every_modelled_field(tmp_path):
    original = json.loads(AIRLINE.read_text())
    out = write_results(read_results(AIRLINE), tmp_path / "results.json")
    written = json.loads(out.read_text())
    assert written["info"] == original["info"]
    assert written["tasks"] == original["tasks"]
    assert written["timestamp"] == original["timestamp"]
    assert [s for s in written["simulations"]] == [_without_dropped(s) for s in original["simulations"]]


def test_round_trip_through_the_episode_store(tmp_path):
    original = json.loads(AIRLINE.read_text())
    run = read_results(AIRLINE)
    write_episodes(tmp_path / "airline.episodes.jsonl", run.episodes)
    episodes = list(iter_episodes(tmp_path / "airline.episodes.jsonl"))
    rebuilt = run_from_episodes(
        episodes, policy=original["info"]["environment_info"]["policy"], tasks=original["tasks"]
    )
    written = json.loads(write_results(rebuilt, tmp_path / "again.json").read_text())
    assert written["info"] == original["info"]
    assert written["simulations"] == [_without_dropped(s) for s in original["simulations"]]


def test_episode_fields_from_a_simulation():
    first, second = read_results(AIRLINE).episodes
    assert (first.domain, first.agent, first.model, first.harness) == (
        "airline",
        "llm_agent",
        "gpt-4.1",
        "tau2",
    )
    assert first.task_id == "1" and second.trial == 1
    assert first.outcome.reward == 1.0 and first.outcome.success is True
    assert first.outcome.judged_by == "tau2-reward"
    assert [a["name"] for a in first.outcome.info["gold_actions"]] == [
        "get_user_details",
        "cancel_reservation",
    ]
    assert second.outcome.success is False and second.termination_reason == "max_steps"
    assert second.agent_cost is None and first.agent_cost == pytest.approx(0.006)
    parallel = first.messages[2]
    assert [c.name for c in parallel.tool_calls] == ["get_user_details", "get_reservation_details"]
    tool_names = [(m.name, m.error) for m in first.messages if m.role == "tool"]
    assert tool_names == [
        ("get_user_details", False),
        ("get_reservation_details", False),
        ("cancel_reservation", True),
        ("cancel_reservation", False),
    ]
    assert first.messages[2].usage.prompt_tokens == 1200
    assert first.source["tau2_sim"]["seed"] == 300
    assert "policy" not in first.source["tau2_info"]["environment_info"]


def test_dir_layout_round_trip_with_user_tool_calls(tmp_path):
    run = read_results(TELECOM)
    assert run.layout == "dir" and len(run.episodes) == 1
    episode = run.episodes[0]
    user_calls = [c for m in episode.messages if m.role == "user" for c in m.tool_calls or []]
    assert [(c.name, c.requestor) for c in user_calls] == [
        ("check_status_bar", "user"),
        ("toggle_airplane_mode", "user"),
    ]
    assert [m.requestor for m in episode.messages if m.role == "tool"] == ["assistant", "user", "user"]
    out = write_results(run, tmp_path / "run")
    sim_file = next((TELECOM / "simulations").glob("*.json"))
    written_sim = json.loads((out / "simulations" / sim_file.name).read_text())
    assert written_sim == _without_dropped(json.loads(sim_file.read_text()))
    index = json.loads((out / "results.json").read_text())["simulation_index"]
    assert index == json.loads((TELECOM / "results.json").read_text())["simulation_index"]
    again = read_results(out)
    assert again.episodes == run.episodes


def test_results_json_alone_of_a_dir_run_reads_its_simulations():
    assert len(read_results(TELECOM / "results.json").episodes) == 1


def test_converter_catalogs_and_counts():
    conv = convert_tau2(AIRLINE)
    assert (conv.kept, conv.records, dict(conv.skipped)) == (2, 2, {})
    effects = conv.catalogs["airline"].effects()
    assert effects["get_flight_status"] == "read" and effects["cancel_reservation"] == "write"
    assert effects["think"] == "neither" and not conv.unknown_tools
    telecom = convert_tau2(TELECOM).catalogs["telecom"]
    labels = {t.name: (t.effect, t.origin) for t in telecom.tools}
    # τ²'s own telecom table: the agent's tools and the user's phone tools, as τ² marks them (ToolType)
    assert {n: labels[n] for n in ("check_status_bar", "get_customer_by_phone", "toggle_airplane_mode")} == {
        "check_status_bar": ("read", "source"),
        "get_customer_by_phone": ("read", "source"),
        "toggle_airplane_mode": ("write", "source"),
    }
    assert len(labels) == 43 and labels["run_speed_test"] == ("read", "source")
    assert labels["refuel_data"] == ("write", "source")


def _broken(tmp_path: Path, mutate) -> Path:
    doc = json.loads(AIRLINE.read_text())
    mutate(doc)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_malformed_simulation_names_file_record_and_field(tmp_path):
    def drop_task_id(doc):
        del doc["simulations"][1]["task_id"]

    path = _broken(tmp_path, drop_task_id)
    with pytest.raises(BadInputError) as err:
        read_results(path)
    assert (err.value.source, err.value.record, err.value.field) == (str(path), 1, "task_id")
    conv = convert_tau2(path, skip_bad=True)
    assert conv.kept == 1 and sum(conv.skipped.values()) == 1


def test_a_tool_call_whose_arguments_are_not_json_is_kept_malformed(tmp_path):
    def bad_args(doc):
        doc["simulations"][0]["messages"][2]["tool_calls"][1]["arguments"] = "{not json"

    run = read_results(_broken(tmp_path, bad_args))
    calls = [c for m in run.episodes[0].messages for c in m.tool_calls or []]
    (bad,) = [c for c in calls if c.malformed]
    assert bad.arguments == {"_raw": "{not json"} and len(run.episodes) == 2

    def bad_call(doc):
        doc["simulations"][0]["messages"][2]["tool_calls"][1] = "not a call"

    with pytest.raises(BadInputError) as err:
        read_results(_broken(tmp_path, bad_call))
    assert err.value.field == "messages[2].tool_calls[1]" and err.value.record == 0


def test_full_duplex_simulations_are_skipped_with_a_reason(tmp_path):
    def to_ticks(doc):
        doc["simulations"][1]["messages"] = None
        doc["simulations"][1]["ticks"] = [{"tick_id": 0, "timestamp": "2026-07-31T01:29:00"}]

    conv = convert_tau2(_broken(tmp_path, to_ticks))
    assert conv.kept == 1 and dict(conv.skipped) == {"full-duplex simulation (ticks, no messages)": 1}


def test_index_ids_must_match_simulation_files(tmp_path):
    run_dir = tmp_path / "run"
    write_results(read_results(TELECOM), run_dir)
    doc = json.loads((run_dir / "results.json").read_text())
    doc["simulation_index"][0]["id"] = "someone-else"
    (run_dir / "results.json").write_text(json.dumps(doc))
    with pytest.raises(BadInputError, match="simulation_index"):
        read_results(run_dir)


def test_a_failed_dir_write_leaves_the_old_run(tmp_path):
    run_dir = write_results(read_results(TELECOM), tmp_path / "run")
    before = sorted(p.name for p in run_dir.rglob("*"))
    bad = copy.deepcopy(read_results(TELECOM))
    bad.info = {"environment_info": {"domain_name": "telecom"}, "unserialisable": object()}
    with pytest.raises(TypeError):
        write_results(Tau2Run(info=bad.info, episodes=bad.episodes), run_dir, layout="dir")
    assert sorted(p.name for p in run_dir.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_dir_layout_refuses_ids_that_cannot_name_a_file(tmp_path):
    run = read_results(TELECOM)
    run.episodes[0] = run.episodes[0].model_copy(update={"id": "tau-bench-v1/airline/gpt-4o/task0/trial0"})
    with pytest.raises(BadInputError) as err:
        write_results(run, tmp_path / "run", layout="dir")
    assert (err.value.record, err.value.field) == (0, "id") and "--layout json" in str(err.value)
    assert list(tmp_path.iterdir()) == []
    assert write_results(run, tmp_path / "run.json", layout="json").is_file()


def _set(path: str, value):
    """A mutation setting `a.b[0].c` (dots and [i]) of the Results document to `value`."""

    def mutate(doc):
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        target = doc
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return mutate


@pytest.mark.parametrize(
    ("where", "value", "record", "field"),
    [
        ("simulations.1.trial", "second", 1, "trial"),
        ("simulations.1.trial", [1], 1, "trial"),
        ("simulations.0.messages.2.usage", 5, 0, "messages[2].usage"),
        ("simulations.0.messages.2.usage.prompt_tokens", "many", 0, "messages[2].usage.prompt_tokens"),
        ("simulations.0.messages.2.tool_calls", 3, 0, "messages[2].tool_calls"),
        (
            "simulations.0.messages.2.tool_calls.0.requestor",
            "robot",
            0,
            "messages[2].tool_calls[0].requestor",
        ),
        ("simulations.0.reward_info.reward", True, 0, "reward_info.reward"),
        ("simulations.0.id", {"a": 1}, 0, "id"),
        ("info.environment_info", "airline", None, "info.environment_info"),
        ("info.agent_info", ["llm_agent"], None, "info.agent_info"),
        ("info.environment_info.domain_name", 7, None, "info.environment_info.domain_name"),
        ("tasks", 5, None, "tasks"),
        ("tasks", {"1": {}}, None, "tasks"),
        ("tasks.0", "task one", None, "tasks[0]"),
        ("tasks.1.id", None, None, "tasks[1].id"),
        ("tasks.0.evaluation_criteria.actions", {"name": "x"}, None, "tasks[0].evaluation_criteria.actions"),
        ("simulation_index", 3, None, "simulation_index"),
    ],
)
def test_wrong_typed_fields_are_bad_input_naming_file_record_and_field(tmp_path, where, value, record, field):
    path = _broken(tmp_path, _set(where, value))
    with pytest.raises(BadInputError) as err:
        read_results(path)
    assert (err.value.source, err.value.record, err.value.field) == (str(path), record, field)


def test_a_run_keeps_its_tasks_through_the_episode_store(tmp_path):
    original = json.loads(AIRLINE.read_text())
    write_episodes(tmp_path / "airline.episodes.jsonl", read_results(AIRLINE).episodes)
    episodes = list(iter_episodes(tmp_path / "airline.episodes.jsonl"))
    assert [e.source["tau2_task"]["id"] for e in episodes] == ["1", "7"]
    policy = original["info"]["environment_info"]["policy"]
    written = json.loads(
        write_results(run_from_episodes(episodes, policy=policy), tmp_path / "r.json").read_text()
    )
    assert written["tasks"] == original["tasks"] and written["info"] == original["info"]


def _episode(eid: str, reason: str | None, **outcome_info) -> Episode:
    return Episode(
        id=eid,
        task_id="t1",
        domain="clinic",
        agent="oracle",
        messages=[Message(role="user", content="hi"), Message(role="assistant", content="done")],
        termination_reason=reason,
        outcome=Outcome(reward=1.0, success=True, judged_by="delta-cover", info=outcome_info),
        source={"max_steps": 30},
    )


TASK = {"id": "t1", "user_scenario": {"instructions": "hi"}}


@pytest.mark.parametrize(
    ("reason", "info", "tau2"),
    [
        ("max_turns", {}, "max_steps"),
        ("world_error", {"charged_to": "harness"}, "infrastructure_error"),
        ("timeout", {"charged_to": "harness", "hung": "blocked"}, "infrastructure_error"),
        ("timeout", {"timeout": "model_call"}, "timeout"),
        ("user_stop", {}, "user_stop"),
        ("user_error", {"charged_to": "user"}, "user_error"),
    ],
)
def test_termination_reasons_in_tau2_vocabulary_and_back(tmp_path, reason, info, tau2):
    episode = _episode("e1", reason, **info)
    out = write_results(run_from_episodes([episode], tasks=[TASK]), tmp_path / "r.json")
    (sim,) = json.loads(out.read_text())["simulations"]
    assert sim["termination_reason"] == tau2
    assert (sim["info"] or {}).get("toolshift", {}).get("termination_reason") == (
        None if tau2 == reason else reason
    )
    (back,) = read_results(out).episodes
    assert back.termination_reason == reason and back.source["tau2_sim"]["info"] is None


@pytest.mark.parametrize("reason", [None, "gave_up"])
def test_a_termination_reason_tau2_has_no_word_for_is_refused(tmp_path, reason):
    with pytest.raises(BadInputError) as err:
        write_results(run_from_episodes([_episode("e1", reason)], tasks=[TASK]), tmp_path / "r.json")
    assert (err.value.record, err.value.field) == ("e1", "termination_reason")
    assert not (tmp_path / "r.json").exists()


def test_unrecorded_times_are_filled_for_tau2_and_read_back_as_null(tmp_path):
    out = write_results(run_from_episodes([_episode("e1", "agent_stop")], tasks=[TASK]), tmp_path / "r.json")
    doc = json.loads(out.read_text())
    (sim,) = doc["simulations"]
    assert doc["timestamp"] and sim["timestamp"] == sim["start_time"] == sim["end_time"] == doc["timestamp"]
    assert sim["duration"] == 0.0 and sim["info"] == {
        "toolshift": {"unrecorded": ["start_time", "end_time", "duration"]}
    }
    assert (doc["info"]["max_steps"], doc["info"]["max_errors"]) == (30, 30)
    assert sim["reward_info"]["db_check"] == {"db_match": True, "db_reward": 1.0}
    (back,) = read_results(out).episodes
    assert (back.start_time, back.end_time, back.duration) == (None, None, None)


def test_the_step_limit_must_be_known(tmp_path):
    episode = _episode("e1", "agent_stop").model_copy(update={"source": {}})
    with pytest.raises(BadInputError, match="--max-steps"):
        run_from_episodes([episode], tasks=[TASK])
    assert run_from_episodes([episode], tasks=[TASK], max_steps=12).info["max_steps"] == 12


def test_an_unknown_task_is_refused_naming_the_episode():
    with pytest.raises(BadInputError, match="--tasks") as err:
        run_from_episodes([_episode("e1", "agent_stop")])
    assert (err.value.record, err.value.field) == ("e1", "task_id")


def test_a_json_results_file_beside_a_simulations_folder_is_refused(tmp_path):
    (tmp_path / "simulations").mkdir()
    with pytest.raises(BadInputError, match="dir layout"):
        write_results(run_from_episodes([_episode("e1", "agent_stop")], tasks=[TASK]), tmp_path / "r.json")


def test_tasks_from_a_task_file_are_checked_against_what_the_episodes_ran():
    from toolshift.models import GoldCall, Task, UserInstruction
    from toolshift.traces.tau2_tasks import tau2_tasks

    task = Task(
        id="t1",
        domain="clinic",
        public_request="Cancel my visit.",
        instruction=UserInstruction(
            intent="Cancel APT-1.", facts={"appointment": "APT-1"}, rules=["Be brief."]
        ),
        gold_path=[GoldCall(tool="cancel_appointment", arguments={"appointment_id": "APT-1"})],
        base_functions=["cancel"],
        expected_changes=[],
    )
    ran = _episode("e1", "agent_stop").model_copy(update={"source": {"task_fingerprint": task.fingerprint()}})
    (made,) = tau2_tasks([ran], {"t1": task})
    assert made["evaluation_criteria"] == {
        "actions": [{"action_id": "t1_0", "requestor": "assistant", "name": "cancel_appointment",
                     "arguments": {"appointment_id": "APT-1"}}],
        "reward_basis": ["DB"],
    }  # fmt: skip
    assert made["user_scenario"]["instructions"]["known_info"] == "appointment: APT-1"
    stale = ran.model_copy(update={"source": {"task_fingerprint": "0" * 16}})
    with pytest.raises(BadInputError, match="changed") as err:
        tau2_tasks([stale], {"t1": task})
    assert (err.value.record, err.value.field) == ("e1", "source.task_fingerprint")
