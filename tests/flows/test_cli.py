"""The `toolshift flows` commands end to end on files, through the real CLI entry point."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.traces.catalog import CatalogTool, ToolCatalog, save_catalog
from toolshift.traces.store import write_episodes

from .builders import AIRLINE, user_walk

runner = CliRunner()


@pytest.fixture
def files(tmp_path):
    eps = [
        user_walk(f"e{i}", str(i), f"u{i}", [f"R{i}A", f"R{i}B", f"R{i}C"][: 1 + i % 3]) for i in range(20)
    ]
    episodes = tmp_path / "mini.episodes.jsonl"
    write_episodes(episodes, eps)
    catalog = ToolCatalog(domain=AIRLINE.domain, tools=[CatalogTool(name=n, effect=e, origin="manual")
                                                        for n, e in sorted(AIRLINE.effects.items())])  # fmt: skip
    cat_path = save_catalog(catalog, tmp_path / "mini-airline.catalog.json")
    return tmp_path, episodes, cat_path


def run(*args: str):
    result = runner.invoke(app, ["flows", *args], catch_exceptions=False)
    return result


def test_learn_replay_ceiling_calibrate_price_repeats(files):
    tmp, episodes, catalog = files
    flow = tmp / "flow.json"
    r = run("learn", str(episodes), "--catalog", str(catalog), "--out", str(flow), "--tasks", "train")
    assert r.exit_code == 0, r.output
    assert json.loads(flow.read_text())["format"] == 1
    log = tmp / "log.jsonl"
    summary = tmp / "summary.json"
    r = run("replay", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "test",
            "--explore", "0", "--log", str(log), "--json-out", str(summary))  # fmt: skip
    assert r.exit_code == 0, r.output
    out = json.loads(summary.read_text())
    assert out["reach"]["saved_turns"] > 0 and out["reach"]["saved_turns"] <= out["ceiling"]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows and {"score", "made", "used", "saved_turn"} <= set(rows[0])
    png = tmp / "rel.png"
    r = run("calibrate", str(log), "--png", str(png))
    assert r.exit_code == 0 and png.stat().st_size > 1000
    for cmd in (
        ["ceiling"],
        ["repeats"],
        ["price", "--flow", str(flow), "--price", "5,0.1,1.25", "--sweep", "0.1,0.5"],
    ):
        r = run(cmd[0], str(episodes), "--catalog", str(catalog), *cmd[1:])
        assert r.exit_code == 0, r.output


def test_crossval_then_learn_with_the_chosen_walk_ranks(files):
    tmp, episodes, catalog = files
    r = run("crossval", str(episodes), "--catalog", str(catalog), "--tasks", "train")
    assert r.exit_code == 0, r.output
    assert "leave-one-task-out" in r.output and "chosen for reach: --walk-ranks" in r.output
    assert "--walk-prior" in r.output
    r = run("crossval", str(episodes), "--catalog", str(catalog), "--tasks", "train", "--folds", "2")
    assert r.exit_code == 0, r.output
    assert "2-fold by task over 2 folds" in r.output
    flow = tmp / "walk.json"
    r = run("learn", str(episodes), "--catalog", str(catalog), "--out", str(flow), "--tasks", "train",
            "--walk-ranks", "2", "--walk-prior", "2")  # fmt: skip
    assert r.exit_code == 0, r.output
    raw = json.loads(flow.read_text())
    walk = raw["tools"]["get_reservation_details"]["walk"]
    assert raw["format"] == 3 and walk["argument"] == "reservation_id" and walk["prior"] == 2.0
    summary = tmp / "summary.json"
    r = run("replay", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "test",
            "--json-out", str(summary))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(summary.read_text())["reach"]["lookups_made"] > 0


def test_refusals(files, monkeypatch, capsys):
    tmp, episodes, catalog = files
    flow = tmp / "flow.json"
    assert run("learn", str(episodes), "--catalog", str(catalog), "--out", str(flow)).exit_code == 0
    other = json.loads(catalog.read_text())
    other["tools"] = [t for t in other["tools"] if t["name"] != "think"]
    other_path = tmp / "other.catalog.json"
    other_path.write_text(json.dumps(other))
    elsewhere = json.loads(catalog.read_text()) | {"domain": "email"}
    elsewhere_path = tmp / "email.catalog.json"
    elsewhere_path.write_text(json.dumps(elsewhere))
    empty = tmp / "empty.episodes.jsonl"
    write_episodes(empty, [])
    from toolshift.cli import main

    (tmp / "empty-log.jsonl").write_text("")
    for argv, message in (
        (["calibrate", str(tmp / "empty-log.jsonl")], "no decision log rows"),
        (["replay", str(empty), "--catalog", str(catalog), "--flow", str(flow)], "no episode left to use"),
        (
            ["learn", str(episodes), "--catalog", str(catalog), "--out", str(flow / "under-a-file.json")],
            f"{flow}: cannot use this path",
        ),
        (
            ["learn", str(episodes), "--catalog", str(elsewhere_path), "--out", str(tmp / "f.json")],
            "no episode of the catalog's domain 'email'",
        ),
        (["replay", str(episodes), "--catalog", str(other_path), "--flow", str(flow)], "catalog"),
        (
            ["learn", str(episodes), "--catalog", str(catalog), "--out", str(flow), "--format", "9"],
            "--format",
        ),
        (
            ["price", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--price", "1,2"],
            "OUT,READ,WRITE",
        ),
    ):
        monkeypatch.setattr("sys.argv", ["toolshift", "flows", *argv])
        with pytest.raises(SystemExit) as exit_info:
            main()
        assert exit_info.value.code == 2, argv
        assert message in capsys.readouterr().err


def test_price_chooses_a_rule_on_training_tasks_and_replay_applies_it(files, monkeypatch, capsys):
    tmp, episodes, catalog = files
    flow = tmp / "f.json"
    assert (
        run(
            "learn", str(episodes), "--catalog", str(catalog), "--out", str(flow), "--tasks", "train"
        ).exit_code
        == 0
    )
    rule = tmp / "reach.rule.json"
    r = run("price", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "train",
            "--choose-rule", str(rule))  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(rule.read_text())
    assert (
        doc["format"] == "toolshift.flow-rule/1"
        and doc["decider"] == "reach"
        and "--tasks train" in doc["chosen_by"]
    )
    out = tmp / "summary.json"
    r = run("replay", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "test",
            "--rule", str(rule), "--json-out", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert set(json.loads(out.read_text())) == {"reach", "ceiling"}
    log = tmp / "rule-log.jsonl"
    r = run("replay", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "test",
            "--rule", str(rule), "--explore", "0", "--log", str(log))  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows and all({"raw", "bar", "position"} <= set(x) for x in rows)
    r = run("calibrate", str(log), "--sites")
    assert r.exit_code == 0 and "per site" in r.output and "get_reservation_details" in r.output
    from toolshift.cli import main

    monkeypatch.setattr("sys.argv", ["toolshift", "flows", "replay", str(episodes), "--catalog", str(catalog),
                                     "--flow", str(flow), "--rule", str(rule), "--decider", "next-step"])  # fmt: skip
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2 and "the rule was chosen for reach" in capsys.readouterr().err


def test_crossval_and_choose_rule_pick_the_margin_by_nested_cross_validation(files):
    tmp, episodes, catalog = files
    r = run("crossval", str(episodes), "--catalog", str(catalog), "--tasks", "train", "--nested")
    assert r.exit_code == 0, r.output
    assert "margin 1.5, nested:" in r.output and "margin picked by nested cross-validation:" in r.output
    flow = tmp / "f.json"
    assert run("learn", str(episodes), "--catalog", str(catalog), "--out", str(flow)).exit_code == 0
    rule = tmp / "nested.rule.json"
    r = run("price", str(episodes), "--catalog", str(catalog), "--flow", str(flow), "--tasks", "train",
            "--choose-rule", str(rule), "--nested")  # fmt: skip
    assert r.exit_code == 0, r.output
    chosen_by = json.loads(rule.read_text())["chosen_by"]
    assert "none within the budget" in chosen_by or "by nested cross-validation" in chosen_by
