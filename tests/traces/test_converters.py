"""The τ-bench v1 and WorkBench converters on the real published runs, and on broken copies of them."""

from __future__ import annotations

import csv
import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.traces.anatomy import anatomy
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import paired_calls
from toolshift.traces.taubench import convert_taubench_v1
from toolshift.traces.workbench import convert_workbench, parse_full_response

pytestmark = pytest.mark.shared

TAU_CALLS = {
    "get_reservation_details": 187,
    "search_direct_flight": 70,
    "get_user_details": 59,
    "update_reservation_flights": 56,
    "think": 48,
    "calculate": 44,
    "cancel_reservation": 35,
    "transfer_to_human_agents": 22,
    "book_reservation": 20,
    "search_onestop_flight": 19,
    "update_reservation_baggages": 5,
    "send_certificate": 3,
    "list_all_airports": 2,
    "update_reservation_passengers": 2,
}


@functools.cache
def _converted(kind: str, path: Path) -> Conversion:
    return convert_taubench_v1(path) if kind == "tau" else convert_workbench(path)


@pytest.fixture
def tau(shared_data):
    return _converted("tau", shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json")


def test_taubench_counts(tau, shared_data):
    assert (tau.records, tau.kept, dict(tau.skipped), dict(tau.unknown_tools)) == (100, 100, {}, {})
    roles = Counter(m.role for e in tau.episodes for m in e.messages)
    assert roles == {"assistant": 1229, "user": 757, "tool": 572, "system": 100}
    calls = Counter(c.name for e in tau.episodes for _, c, _ in paired_calls(e))
    assert calls == TAU_CALLS
    assert len({e.task_id for e in tau.episodes}) == 50 and {e.trial for e in tau.episodes} == {0, 1}
    assert Counter(e.termination_reason for e in tau.episodes) == {
        "user_stop": 76,
        "agent_stop": 22,
        "max_steps": 2,
    }
    assert sum(m.error for e in tau.episodes for m in e.messages) == 33


def test_taubench_pairs_results_and_keeps_ground_truth(tau):
    for episode in tau.episodes:
        for _, call, result in paired_calls(episode):
            assert result is not None and result.name == call.name
    first = tau.episodes[0]
    assert first.id == "tau-bench-v1.airline.gpt-4o.task0.trial0" and first.model == "gpt-4o"
    assert first.outcome.info["gold_actions"][0]["name"] == "book_reservation"
    assert first.outcome.reward == 0.0 and first.outcome.success is False
    first_call = next(m for m in first.messages if m.tool_calls).tool_calls[0]
    assert (first_call.name, first_call.arguments) == ("get_user_details", {"user_id": "mia_li_3668"})
    assert sum(e.outcome.reward for e in tau.episodes) == sum(e.outcome.success for e in tau.episodes)
    effects = tau.catalogs["taubench-v1-airline"].effects()
    assert {n for n, e in effects.items() if e == "write"} == {
        "book_reservation", "cancel_reservation", "send_certificate",
        "update_reservation_baggages", "update_reservation_flights", "update_reservation_passengers",
    }  # fmt: skip
    assert {n for n, e in effects.items() if e == "neither"} == {
        "think",
        "calculate",
        "transfer_to_human_agents",
    }


def test_taubench_anatomy(tau):
    ((key, g),) = anatomy(tau.episodes, {d: c.effects() for d, c in tau.catalogs.items()}).items()
    assert key == ("taubench-v1-airline", "gpt-4o")
    assert (g.turns, g.kinds["reply"], g.kinds["write"], g.kinds["read"], g.kinds["neither"]) == (
        1229,
        657,
        121,
        337,
        114,
    )


def test_taubench_bad_record_names_record_and_field(tmp_path, shared_data):
    records = json.loads((shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json").read_text())[:5]
    at = next(j for j, m in enumerate(records[3]["traj"]) if m.get("tool_calls"))
    records[3]["traj"][at]["tool_calls"][0]["function"] = "not a function object"
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(records))
    with pytest.raises(BadInputError) as err:
        convert_taubench_v1(path)
    assert (err.value.record, err.value.field) == (3, f"traj[{at}].tool_calls[0].function")
    conv = convert_taubench_v1(path, skip_bad=True)
    assert conv.kept == 4 and sum(conv.skipped.values()) == 1


def test_taubench_keeps_a_call_whose_arguments_are_not_json_and_a_crashed_run(tmp_path, shared_data):
    """τ-bench counts both as failed tasks: a model's unreadable arguments, an agent that raised (reward 0)."""
    records = json.loads((shared_data / "tau-bench" / "gpt-4o-airline.trials-0-1.json").read_text())[:5]
    at = next(j for j, m in enumerate(records[3]["traj"]) if m.get("tool_calls"))
    name = records[3]["traj"][at]["tool_calls"][0]["function"]["name"]
    records[3]["traj"][at]["tool_calls"][0]["function"]["arguments"] = "{oops"
    records[4] = {"task_id": 7, "trial": 0, "reward": 0.0, "traj": [],
                  "info": {"error": "openai.BadRequestError: context length", "traceback": "..."}}  # fmt: skip
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(records))
    conv = convert_taubench_v1(path)
    assert (conv.records, conv.kept, dict(conv.skipped), conv.malformed_calls) == (5, 5, {}, 1)
    (call,) = [c for c in conv.episodes[3].messages[at].tool_calls or [] if c.malformed]
    assert (call.name, call.arguments) == (name, {"_raw": "{oops"})
    crashed = conv.episodes[4]
    assert (crashed.task_id, crashed.messages, crashed.termination_reason) == ("7", [], "agent_error")
    assert crashed.outcome.success is False and crashed.outcome.info["error"].startswith("openai")


def test_taubench_needs_a_domain(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps([{"task_id": 0, "trial": 0, "reward": 0.0, "info": {"task": {}}, "traj": [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
         "function": {"name": "get_user_details", "arguments": "{}"}}]}]}]))  # fmt: skip
    with pytest.raises(BadInputError, match="--domain"):
        convert_taubench_v1(path)
    assert convert_taubench_v1(path, domain="retail").episodes[0].domain == "taubench-v1-retail"


@pytest.fixture
def wb(shared_data):
    return _converted("wb", shared_data / "workbench" / "results")


WB_CALLS = {
    "calendar.search_events": 942, "project_management.search_tasks": 809,
    "company_directory.find_email_address": 582, "analytics.create_plot": 580,
    "analytics.get_average_session_duration": 560, "analytics.engaged_users_count": 550,
    "analytics.total_visits_count": 498, "email.search_emails": 476, "project_management.create_task": 425,
    "customer_relationship_manager.search_customers": 412, "email.send_email": 372, "calendar.delete_event": 362,
    "calendar.create_event": 239, "analytics.traffic_source_count": 203,
    "customer_relationship_manager.update_customer": 165, "email.forward_email": 135, "calendar.update_event": 108,
    "email.delete_email": 101, "project_management.update_task": 92, "customer_relationship_manager.add_customer": 91,
    "customer_relationship_manager.delete_customer": 71, "calendar.get_event_information_by_id": 56,
    "email.reply_email": 36, "email.get_email_information_by_id": 7, "project_management.get_task_information_by_id": 6,
}  # fmt: skip


@pytest.mark.slow
def test_workbench_counts(wb):
    assert (wb.records, wb.kept, dict(wb.skipped)) == (
        2760,
        2760,
        {},
    )  # 2675 before rows without a trajectory were kept
    assert Counter(e.outcome.info.get("no_trajectory") for e in wb.episodes if e.outcome.info.get("no_trajectory")) == {
        "agent raised before returning (exception in the harness)": 64,
        "agent raised before returning (output parsing error)": 20,
        "agent raised before returning (API error)": 1,
    }  # fmt: skip
    assert not wb.unknown_tools
    calls = Counter(c.name for e in wb.episodes for m in e.messages for c in m.tool_calls or [])
    assert sum(calls.values()) == 7888
    assert {k: v for k, v in calls.items() if k in WB_CALLS} == WB_CALLS
    hallucinated = {k: v for k, v in calls.items() if k not in WB_CALLS}
    assert sum(hallucinated.values()) == 10
    assert Counter((e.agent, e.harness.rsplit("/", 1)[1]) for e in wb.episodes) == {
        ("gpt-4", "all"): 690, ("gpt-4", "domains"): 690, ("claude-2", "all"): 690, ("claude-2", "domains"): 690,
    }  # fmt: skip
    turns = Counter(
        "reply" if not m.tool_calls else "call"
        for e in wb.episodes
        for m in e.messages
        if m.role == "assistant"
    )
    assert turns == {"call": 7888, "reply": 2545}


@pytest.mark.slow
def test_workbench_labels_and_ground_truth(wb):
    for domain, catalog in wb.catalogs.items():
        effects = catalog.effects()
        assert len([t for t in catalog.tools if t.exists]) == 27, domain
        for name, effect in effects.items():
            verb = name.rsplit(".", 1)[-1].split("_")[0]
            if catalog.get(name).exists and verb in {
                "send",
                "reply",
                "forward",
                "create",
                "update",
                "delete",
                "add",
            }:
                assert effect == "write", name
        assert all(t.effect == "neither" for t in catalog.tools if not t.exists)
    assert wb.catalogs["analytics"].get("python").exists is False
    first = next(e for e in wb.episodes if e.id == "workbench.email.gpt-4_all.0")
    assert first.messages[0].content == "Delete my last email from nadia"
    assert [c.name for _, c, _ in paired_calls(first)] == ["email.search_emails", "email.delete_email"]
    assert first.messages[-1].role == "assistant" and first.messages[-1].tool_calls is None
    assert first.outcome.info["gold_calls"] == ['email.delete_email.func(email_id="00000479")']
    assert all("gold_calls" in e.outcome.info for e in wb.episodes)
    limited = [e for e in wb.episodes if e.termination_reason == "max_steps"]
    assert limited and all(e.messages[-1].role == "tool" for e in limited)


def test_repr_parser_handles_non_literals():
    text = (
        "{'input': 'q', 'output': {'answer': 1}, 'intermediate_steps': ["
        "(AgentAction(tool='company_directory.find_email_address', tool_input={'name': 'Quinn'}, log='x'), "
        "array(['quinn@atlas.com'], dtype=object)), "
        "(AgentAction(tool='crm.search', tool_input='raw text', log='y'), "
        "[{'phone': nan, 'when': Timestamp('2023-11-30 00:00:00'), 'name': 'Governance nanolabs'}])]}"
    )
    parsed = parse_full_response(text)
    assert parsed["output"] == {"answer": 1}
    first, second = parsed["steps"]
    assert first["observation"] == ["quinn@atlas.com"] and first["tool_input"] == {"name": "Quinn"}
    assert second["tool_input"] == "raw text"
    assert second["observation"] == [
        {"phone": None, "when": "2023-11-30 00:00:00", "name": "Governance nanolabs"}
    ]


def test_workbench_bad_rows_name_file_row_and_field(tmp_path, shared_data):
    src = shared_data / "workbench" / "results" / "email" / "gpt-4_all_2024-03-21_15-21-12.csv"
    folder = tmp_path / "results" / "email"
    folder.mkdir(parents=True)
    with src.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:6]
    rows[4]["full_response"] = "{'input': 'q', 'intermediate_steps': [(AgentAction(tool='x'), 'obs'),"
    out = folder / "gpt-4_all_2024-03-21_15-21-12.csv"
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(BadInputError) as err:
        convert_workbench(out)
    assert (err.value.source, err.value.record, err.value.field) == (str(out), 4, "full_response")
    conv = convert_workbench(tmp_path / "results", skip_bad=True)
    assert conv.kept == 5 and sum(conv.skipped.values()) == 1
    assert conv.episodes[0].task_id == "0" and "gold_calls" not in conv.episodes[0].outcome.info


def test_workbench_file_names_are_checked(tmp_path):
    path = tmp_path / "email" / "results.csv"
    path.parent.mkdir()
    path.write_text('"query","function_calls","full_response","error"\n')
    with pytest.raises(BadInputError, match="file name"):
        convert_workbench(path)


def test_taubench_retail_catalog_from_the_file_name(tmp_path):
    path = tmp_path / "sonnet-35-new-retail.json"
    path.write_text(json.dumps([{"task_id": 3, "trial": 1, "reward": 1.0, "info": {"task": {"actions": []}}, "traj": [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "find_user_id_by_email", "arguments": "{\"email\": \"a@b.c\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_user_id_by_email", "content": "yusuf_rossi_9620"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks ###STOP###"},
    ]}]))  # fmt: skip
    conv = convert_taubench_v1(path)
    (episode,) = conv.episodes
    assert (episode.domain, episode.model, episode.termination_reason) == (
        "taubench-v1-retail",
        "sonnet-35-new",
        "user_stop",
    )
    effects = conv.catalogs["taubench-v1-retail"].effects()
    assert len(effects) == 16
    assert {n for n, e in effects.items() if e == "write"} == {
        "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
        "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
        "return_delivered_order_items",
    }  # fmt: skip
    assert {n for n, e in effects.items() if e == "neither"} == {
        "think",
        "calculate",
        "transfer_to_human_agents",
    }


@pytest.mark.shared
def test_converted_runs_export_to_the_tau2_dir_layout_and_back(tau, tmp_path):
    """Converted ids name files, so τ²-bench's dir layout (one file per simulation id) holds them."""
    from toolshift.traces.tau2 import read_results
    from toolshift.traces.tau2_write import run_from_episodes, write_results

    episodes = tau.episodes[:5]
    path = write_results(run_from_episodes(episodes), tmp_path / "run", layout="dir")
    names = sorted(p.stem for p in (path.parent if path.is_file() else path).rglob("simulations/*.json"))
    assert names == sorted(e.id for e in episodes)
    back = read_results(tmp_path / "run")  # the dir layout reads simulations in file-name order
    assert sorted(e.id for e in back.episodes) == sorted(e.id for e in episodes)
    assert {e.id: len(e.messages) for e in back.episodes} == {e.id: len(e.messages) for e in episodes}


def _retail_record() -> dict:
    return {"task_id": 3, "trial": 1, "reward": 1.0, "info": {"task": {"actions": [
        {"name": "find_user_id_by_email", "kwargs": {"email": "a@b.c"}}], "instruction": "Find me.", "outputs": []}},
        "traj": [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "find_user_id_by_email", "arguments": "{\"email\": \"a@b.c\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "find_user_id_by_email", "content": "yusuf_rossi_9620"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks ###STOP###"},
    ]}  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.update(traj=7), "traj"),
        (lambda r: r["traj"][2].update(tool_calls=2), "traj[2].tool_calls"),
        (lambda r: r["traj"][2].update(tool_calls={"id": "c1"}), "traj[2].tool_calls"),
        (lambda r: r.update(reward=True), "reward"),
        (lambda r: r.update(reward="1.0"), "reward"),
        (lambda r: r.update(reward=float("nan")), "reward"),
        (lambda r: r.update(task_id=False), "task_id"),
        (lambda r: r["traj"][1].update(content=5), "traj[1].content"),
        (lambda r: r["info"]["task"]["actions"][0].update(kwargs=[1]), "info.task.actions[0].kwargs"),
        (lambda r: r["info"]["task"].update(outputs=["ok", 3]), "info.task.outputs[1]"),
        (lambda r: r["info"].update(user_cost="cheap"), "info.user_cost"),
    ],
)
def test_taubench_wrong_types_are_bad_input_naming_record_and_field(tmp_path, mutate, field):
    good, bad = _retail_record(), _retail_record()
    mutate(bad)
    path = tmp_path / "gpt-4o-retail.json"
    path.write_text(json.dumps([good, bad]))
    with pytest.raises(BadInputError) as err:
        convert_taubench_v1(path)
    assert (err.value.source, err.value.record, err.value.field) == (str(path), 1, field)
    conv = convert_taubench_v1(path, skip_bad=True)
    assert conv.kept == 1 and sum(conv.skipped.values()) == 1


def test_taubench_domains_have_their_own_namespace(tmp_path):
    path = tmp_path / "gpt-4o-airline.json"
    record = _retail_record()
    record["traj"] = record["traj"][:2]
    path.write_text(json.dumps([record]))
    for given in (None, "airline", "taubench-v1-airline"):
        (episode,) = convert_taubench_v1(path, domain=given).episodes
        assert (episode.domain, episode.task_id, episode.source["max_steps"]) == (
            "taubench-v1-airline",
            "3",
            30,
        )
        assert episode.id == "tau-bench-v1.airline.gpt-4o.task3.trial1"


def _workbench_results(tmp_path: Path, answers: str) -> Path:
    results = tmp_path / "data" / "results" / "email" / "gpt-4_all_2024-03-21_15-21-12.csv"
    results.parent.mkdir(parents=True)
    steps = "[(AgentAction(tool='email.search_emails', tool_input={'query': 'nadia'}, log='look'), [])]"
    with results.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, quoting=csv.QUOTE_ALL)
        writer.writerow(["query", "function_calls", "full_response", "error"])
        writer.writerow(
            [
                "Find nadia",
                "[]",
                f"{{'input': 'Find nadia', 'output': 'ok', 'intermediate_steps': {steps}}}",
                "",
            ]
        )
    tasks = tmp_path / "data" / "processed" / "queries_and_answers" / "email_queries_and_answers.csv"
    tasks.parent.mkdir(parents=True)
    tasks.write_text(answers, encoding="utf-8")
    return results


@pytest.mark.parametrize(
    ("answers", "record", "field"),
    [
        ('"question","answer"\n"Find nadia","[]"\n', "header", "query"),
        ('"query"\n"Find nadia"\n', "header", "answer"),
        ('"query","answer"\n"Find nadia","5"\n', 0, "answer"),
        ('"query","answer"\n"Find nadia","[oops"\n', 0, "answer"),
    ],
)
def test_workbench_task_files_of_another_shape_are_bad_input(tmp_path, answers, record, field):
    results = _workbench_results(tmp_path, answers)
    with pytest.raises(BadInputError) as err:
        convert_workbench(results)
    tasks = tmp_path / "data" / "processed" / "queries_and_answers" / "email_queries_and_answers.csv"
    assert (err.value.source, err.value.record, err.value.field) == (str(tasks), record, field)


def test_workbench_gold_calls_come_from_a_well_formed_task_file(tmp_path):
    results = _workbench_results(
        tmp_path, '"query","answer"\n"Other","[]"\n"Find nadia","[\'email.x.func()\']"\n'
    )
    (episode,) = convert_workbench(results).episodes
    assert episode.task_id == "1" and episode.outcome.info["gold_calls"] == ["email.x.func()"]


def test_taubench_runs_export_with_their_tasks_and_tau2_reward_info(tmp_path):
    from toolshift.traces.tau2_write import run_from_episodes, write_results

    record = _retail_record()
    record["info"]["reward_info"] = {"reward": 1.0, "info": {"r_actions": 1.0, "gt_data_hash": "ab"},
                                     "actions": record["info"]["task"]["actions"]}  # fmt: skip
    path = tmp_path / "gpt-4o-retail.json"
    path.write_text(json.dumps([record]))
    out = write_results(run_from_episodes(convert_taubench_v1(path).episodes), tmp_path / "r.json")
    doc = json.loads(out.read_text())
    (task,) = doc["tasks"]
    assert task["id"] == "3" and task["user_scenario"]["instructions"] == "Find me."
    assert task["evaluation_criteria"]["actions"] == [
        {
            "action_id": "3_0",
            "requestor": "assistant",
            "name": "find_user_id_by_email",
            "arguments": {"email": "a@b.c"},
        }
    ]
    assert task["evaluation_criteria"]["reward_basis"] == ["DB", "COMMUNICATE"]
    (sim,) = doc["simulations"]
    assert "actions" not in sim["reward_info"] and sim["reward_info"]["db_check"] == {
        "db_match": True,
        "db_reward": 1.0,
    }
    assert sim["reward_info"]["info"] == {
        "tau_bench_v1": {"reward": 1.0, "info": {"r_actions": 1.0, "gt_data_hash": "ab"}}
    }
    assert doc["info"]["environment_info"]["domain_name"] == "taubench-v1-retail"
