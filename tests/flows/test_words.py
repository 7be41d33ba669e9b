"""Reading the request: an argument bound from the user's words through a picker (flow format 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolshift.errors import BadInputError
from toolshift.flows.decide import Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.model import load_flow, parse_flow, save_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import build_timeline
from toolshift.flows.words import PatternPicker, picker_for, read_request, user_spans, words_questions

from .builders import AIRLINE, call, episode

AIRPORTS = [{"code": "JFK"}, {"code": "LAX"}]


def _asks_for(eid: str, reservation: str):
    """The user names a reservation; the agent lists airports, then reads the reservation it was given."""
    return build_timeline(
        episode(eid, eid, [
            ("user", f"Hello, please look up my reservation {reservation}."),
            ("turn", [call("list_all_airports", {}, AIRPORTS)]),
            ("turn", [call("get_reservation_details", {"reservation_id": reservation},
                           {"reservation_id": reservation, "status": "ok"})]),
            ("reply", "here it is"),
        ]),
        AIRLINE,
    )  # fmt: skip


class Counting:
    """A picker that answers from a fixed table and counts its questions (the decider asks once per message)."""

    name = "table"

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers, self.asked = answers, 0

    def pick(self, words, tool, argument, spans):
        self.asked += 1
        value = self.answers.get(argument)
        return value if value in spans else None


def test_learns_the_argument_the_agent_read_from_the_users_words():
    train = [_asks_for(f"t{i}", f"ZF{i}04Y") for i in range(4)]
    without = learn_flow(train, AIRLINE)
    assert without.format == 1 and without.tools["get_reservation_details"].unbound == ["reservation_id"]
    flow = learn_flow(train, AIRLINE, words=True)
    tool = flow.tools["get_reservation_details"]
    assert flow.format == 4 and tool.unbound == []
    assert (tool.words.argument, tool.words.agree, tool.words.n) == ("reservation_id", 4, 4)
    assert tool.binding_chance() == pytest.approx(5 / 6)


def test_a_picker_turns_the_users_words_into_a_saved_turn():
    flow = learn_flow([_asks_for(f"t{i}", f"ZF{i}04Y") for i in range(4)], AIRLINE, words=True)
    test = [_asks_for("held-out", "QX77RB")]
    assert replay(test, Decider(flow, "reach", 0.3)).saved == 0  # no picker: the lookup cannot be bound
    picker = Counting({"reservation_id": "QX77RB"})
    result = replay(test, Decider(flow, "reach", 0.3, picker=picker))
    assert result.saved == 1 and result.detours == 0 and picker.asked == 1
    wrong = replay(test, Decider(flow, "reach", 0.3, picker=Counting({"reservation_id": "Hello"})))
    assert wrong.saved == 0 and wrong.detours == 1  # a wrong pick is a lookup the agent never makes
    assert replay(test, Decider(flow, "reach", 0.3, picker=PatternPicker())).saved == 1


def test_format_4_round_trips_and_older_formats_refuse_words(tmp_path):
    flow = learn_flow([_asks_for(f"t{i}", f"ZF{i}04Y") for i in range(3)], AIRLINE, words=True)
    path = save_flow(flow, tmp_path / "f.json")
    assert (
        load_flow(path).tools["get_reservation_details"].words == flow.tools["get_reservation_details"].words
    )
    raw = json.loads(path.read_text())
    raw["format"] = 3
    with pytest.raises(BadInputError, match="format 3 flows read nothing from the user's words") as err:
        parse_flow(raw)
    assert err.value.field == "format"
    older = learn_flow([_asks_for(f"t{i}", f"ZF{i}04Y") for i in range(3)], AIRLINE)
    assert (
        "words"
        not in json.loads(save_flow(older, tmp_path / "g.json").read_text())["tools"]["list_all_airports"]
    )


def test_reading_the_request_counts_what_the_words_add():
    timeline = _asks_for("e", "QX77RB")
    ceiling, with_words, turns = words_questions(timeline)
    assert (ceiling, with_words) == (0, 1)
    [[question]] = turns
    assert (question.tool, question.argument, question.value) == (
        "get_reservation_details",
        "reservation_id",
        "QX77RB",
    )
    assert "QX77RB" in user_spans(question.words)
    right = read_request([timeline], Counting({"reservation_id": "QX77RB"}))
    assert (right.words_add, right.questions, right.right, right.taken) == (1, 1, 1, 1)
    wrong = read_request([timeline], Counting({}))
    assert (wrong.right, wrong.taken, wrong.share_taken()) == (0, 0, 0.0)


def test_the_pattern_takes_a_span_of_the_arguments_shape():
    pattern = PatternPicker()
    words = "I am Mia Li, email mia.li@example.com, reservation ZFA04Y, flying on 2024-05-01."
    spans = user_spans(words)
    assert pattern.pick(words, "t", "email", spans) == "mia.li@example.com"
    assert pattern.pick(words, "t", "reservation_id", spans) == "ZFA04Y"
    assert pattern.pick(words, "t", "date", spans) == "2024-05-01"
    assert pattern.pick(words, "t", "name", spans) == "Mia Li"  # a capitalised run, not the date
    assert pattern.pick("have i met with carlos?", "t", "name", user_spans("have i met with carlos?")) is None


def test_an_unknown_picker_is_refused():
    with pytest.raises(BadInputError, match="unknown picker"):
        picker_for("oracle")


def test_the_cli_learns_words_replays_with_a_picker_and_reads_the_request(tmp_path):
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.traces.catalog import CatalogTool, ToolCatalog, save_catalog
    from toolshift.traces.store import write_episodes

    eps = [
        episode(f"e{i}", str(i), [
            ("user", f"Hello, please look up my reservation ZF{i}04Y."),
            ("turn", [call("list_all_airports", {}, AIRPORTS)]),
            ("turn", [call("get_reservation_details", {"reservation_id": f"ZF{i}04Y"}, {"status": "ok"})]),
            ("reply", "here it is"),
        ])
        for i in range(10)
    ]  # fmt: skip
    episodes = tmp_path / "e.episodes.jsonl"
    write_episodes(episodes, eps)
    tools = [CatalogTool(name=n, effect=e, origin="manual") for n, e in sorted(AIRLINE.effects.items())]
    catalog = save_catalog(ToolCatalog(domain=AIRLINE.domain, tools=tools), tmp_path / "c.catalog.json")
    runner = CliRunner()
    flow = tmp_path / "f.json"
    common = [str(episodes), "--catalog", str(catalog)]
    r = runner.invoke(app, ["flows", "learn", *common, "--out", str(flow), "--tasks", "train", "--words"])
    assert r.exit_code == 0, r.output
    assert json.loads(flow.read_text())["format"] == 4
    summary = tmp_path / "s.json"
    r = runner.invoke(app, ["flows", "replay", *common, "--flow", str(flow), "--tasks", "test",
                            "--picker", "pattern", "--json", str(summary)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(summary.read_text())["reach"]["saved_turns"] == 4  # every held-out episode's lookup
    r = runner.invoke(app, ["flows", "read-request", *common, "--picker", "pattern"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "10 questions" in r.output and "10 (100.0%)" in r.output, r.output
    r = runner.invoke(app, ["flows", "replay", *common, "--flow", str(flow), "--picker", "oracle"])
    assert isinstance(r.exception, BadInputError) and r.exception.exit_code == 2


def test_the_embedded_picker_is_found_through_its_entry_point_not_an_import():
    from importlib.metadata import entry_points

    from toolshift.flows.words import PICKER_ENTRY_POINTS

    found = {ep.name: ep.value for ep in entry_points(group=PICKER_ENTRY_POINTS)}
    assert found.get("embedded") == "toolshift.agents.span_picker:EmbeddedSpanPicker"
    assert type(picker_for("embedded")).__name__ == "EmbeddedSpanPicker"  # made lazily: no model loaded yet
    source = (Path(__file__).parents[2] / "src/toolshift/flows/words.py").read_text(encoding="utf-8")
    assert "toolshift.agents" not in source.replace("`toolshift.agents.span_picker`", "")
