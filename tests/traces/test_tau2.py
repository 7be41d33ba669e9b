"""τ²-bench results: reading both layouts, writing them back, and what a round trip keeps."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.traces.demo import EXAMPLE_RUN
from toolshift.traces.store import iter_episodes, write_episodes
from toolshift.traces.tau2 import Tau2Run, convert_tau2, read_results, run_from_episodes, write_results

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
    assert {t.name: (t.effect, t.origin) for t in telecom.tools} == {
        "check_status_bar": ("read", "verb-rule"),
        "get_customer_by_phone": ("read", "verb-rule"),
        "toggle_airplane_mode": ("write", "verb-rule"),
    }


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


def test_bad_tool_call_arguments_are_named(tmp_path):
    def bad_args(doc):
        doc["simulations"][0]["messages"][2]["tool_calls"][1]["arguments"] = "{not json"

    with pytest.raises(BadInputError, match="arguments") as err:
        read_results(_broken(tmp_path, bad_args))
    assert err.value.field == "messages[2].tool_calls[1].arguments" and err.value.record == 0


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
