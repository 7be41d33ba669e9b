"""The viewer's API without a browser: sort keys, search under filters, refresh when a folder goes away, filter
expressions, episodes by id, the filtered set as CSV and JSON, and notes (written only from the page)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from toolshift.errors import BadInputError
from toolshift.report.inputs import discover
from toolshift.report.view.server import Viewer
from toolshift.traces.store import write_episodes

from .episodes import make_episode


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "runs"
    write_episodes(root / "a.episodes.jsonl", [make_episode(k, agent="a") for k in range(6)])
    write_episodes(root / "b.episodes.jsonl", [make_episode(k, agent="b") for k in range(6, 9)])
    return root


def test_an_unknown_sort_key_is_named(folder):
    viewer = Viewer(discover([folder]))
    with pytest.raises(BadInputError, match="sort is one of id, task"):
        viewer.page({"sort": "colour"})
    ids = [r["id"] for r in viewer.page({"sort": "id", "desc": "1"})["rows"]]
    assert ids == sorted(ids, reverse=True)


def test_search_in_messages_under_filters_and_facets(folder):
    viewer = Viewer(discover([folder]))
    # "request 7 with" is said by episode ep-7 only (its user message), in no id or task.
    page = viewer.page({"q": "REQUEST 7 WITH ünïcode"})
    assert [r["id"] for r in page["rows"]] == ["ep-7"]
    assert page["facets"]["agent"] == [["b", 1]]
    assert viewer.page({"q": "request 7 with", "agent": "a"})["total"] == 0
    assert viewer.aggregate({"q": "get_thing"})["episodes"] == 9  # a call's name is searched too


def test_refresh_counts_changes_and_keeps_the_last_inputs_when_a_folder_goes(folder):
    viewer = Viewer(discover([folder]), paths=[folder])
    assert viewer.refresh() == {"generation": 0, "episodes": 9, "live": True}
    write_episodes(folder / "c.episodes.jsonl", [make_episode(9, agent="c")])
    assert viewer.refresh()["generation"] == 1 and viewer.runs.size == 10
    assert viewer.refresh()["generation"] == 1  # nothing changed since
    shutil.rmtree(folder)
    gone = viewer.refresh()
    assert gone["generation"] == 1 and gone["episodes"] == 10 and "no such file or folder" in gone["error"]


def test_search_after_an_append_reads_only_the_new_lines(folder, monkeypatch):
    from toolshift.report.view import query
    from toolshift.traces.store import EpisodeWriter

    viewer = Viewer(discover([folder]), paths=[folder])
    assert viewer.page({"q": "request 12 with"})["total"] == 0
    read = []
    parse = query.message_text
    monkeypatch.setattr(query, "message_text", lambda doc: read.append(doc["id"]) or parse(doc))
    with EpisodeWriter(folder / "a.episodes.jsonl", append=True) as w:
        w.write(make_episode(12, agent="a"))
    assert viewer.refresh()["generation"] == 1
    assert [r["id"] for r in viewer.page({"q": "request 12 with"})["rows"]] == ["ep-12"]
    assert read == ["ep-12"]  # the six earlier lines of a.episodes.jsonl were not read again


def test_an_episode_comes_with_its_files_run_configuration(tmp_path):
    store = tmp_path / "run.episodes.jsonl"
    write_episodes(store, [make_episode(0)], meta={"command": "toolshift agents run …", "max_turns": 40})
    answer = Viewer(discover([store])).episode({"row": "0"})
    assert answer["run"] == {"command": "toolshift agents run …", "max_turns": 40}


EXPRESSIONS = {
    "agent == a and turns >= 2": lambda s: s["agent"] == "a" and s["turns"] >= 2,
    "not success": lambda s: s["outcome"] != "success",
    'task in ["task-1", task-2] or domain ~ E': lambda s: (
        s["task_id"] in ("task-1", "task-2") or "e" in s["domain"]
    ),
    "judged and (trial == 1 or id ~ 'ep-7')": lambda s: (
        s["outcome"] != "unjudged" and (s["trial"] == 1 or "ep-7" in s["id"])
    ),
    "v >= 2 or version == ''": lambda s: True,
    "recording": lambda s: False,
    "missing == -1 and collateral == -1 and tokens == 0 and failed == 0": lambda s: True,
}


@pytest.mark.parametrize("text", list(EXPRESSIONS))
def test_filter_expressions_keep_what_they_say(folder, text):
    viewer = Viewer(discover([folder]))
    every = [viewer.runs.summary(r) for r in range(viewer.runs.size)]
    kept = {s["id"] for s in every if EXPRESSIONS[text](s)}
    page = viewer.page({"expr": text, "limit": "500"})
    assert {r["id"] for r in page["rows"]} == kept
    assert viewer.aggregate({"expr": text})["episodes"] == len(kept)
    assert sum(n for _, n in page["facets"]["agent"]) == len(kept)  # the menus count under the expression too


@pytest.mark.parametrize(
    ("text", "message"),
    [("agnt == a", "unknown field 'agnt' at character 1"), ("turns ~ 3", "turns is a number"),
     ("turns == many", "turns is a number, not 'many'"), ("(success", "ends too early"),
     ("success success", "expected one of == != <= >= < > ~ after success at character 9"), ("outcome", "outcome needs a comparison"),
     ("(" * 40 + "success" + ")" * 40, "nests at most 32"), ("x" * 2001, "at most 2000 characters"),
     ("turns > 3 $", "cannot read '$'")],
)  # fmt: skip
def test_a_bad_expression_is_named_where_it_goes_wrong(folder, text, message):
    with pytest.raises(BadInputError, match=re.escape(message)):
        Viewer(discover([folder])).page({"expr": text})


def test_an_episode_is_found_by_its_id_and_its_file_where_the_id_repeats(folder, tmp_path):
    shutil.copyfile(folder / "a.episodes.jsonl", folder / "c.episodes.jsonl")
    viewer = Viewer(discover([folder]))
    first = viewer.episode({"id": "ep-3"})
    assert first["summary"]["file"].endswith("a.episodes.jsonl") and first["unique"] is False
    copy = viewer.episode({"id": "ep-3", "file": str(folder / "c.episodes.jsonl")})
    assert copy["summary"]["file"].endswith("c.episodes.jsonl")
    assert viewer.episode({"id": "ep-7"})["unique"] is True
    with pytest.raises(BadInputError, match="no episode 'ep-99'"):
        viewer.episode({"id": "ep-99"})


def test_the_filtered_set_as_csv_and_json_quotes_what_a_spreadsheet_would_run(tmp_path):
    write_episodes(tmp_path / "r" / "x.episodes.jsonl",
                   [make_episode(0, agent="=HYPERLINK(\"http://x\")"), make_episode(1, agent="plain")])  # fmt: skip
    viewer = Viewer(discover([tmp_path / "r"]))
    table = list(csv.DictReader(io.StringIO(viewer.table({}, "csv").decode("utf-8"))))
    assert [r["agent"] for r in table] == ['\'=HYPERLINK("http://x")', "plain"]
    assert table[0]["collateral"] == "-1" and list(table[0])[:3] == ["id", "file", "line"]
    body = json.loads(viewer.table({"agent": "plain"}, "json"))
    assert body["format"] == "toolshift.view-table/1" and [r["id"] for r in body["rows"]] == ["ep-1"]


def test_notes_are_written_only_from_the_page_and_kept_beside_the_run(folder):
    import httpx

    from toolshift.report.view.notes import notes_path
    from toolshift.report.view.server import _post_refused, serving

    viewer = Viewer(discover([folder]))
    source = str(folder / "a.episodes.jsonl")
    note = {
        "file": source,
        "on": "episode",
        "episode": "ep-1",
        "task": "task-1",
        "domain": "d",
        "text": "hello",
    }
    page = {"Content-Type": "application/json", "X-Toolshift-View": "1"}
    with serving(viewer) as url:
        api = url + "api/notes"
        assert httpx.post(api, json=note, timeout=60).status_code == 403  # no header: not the viewer's page
        other = httpx.post(api, json=note, headers={**page, "Origin": "http://evil.example"}, timeout=60)
        assert other.status_code == 403 and "another origin" in other.json()["error"]
        form = httpx.post(api, content=b"text=hello", timeout=60,
                          headers={"X-Toolshift-View": "1", "Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        assert form.status_code == 403
        big = httpx.post(api, json={**note, "text": "x" * 70_000}, headers=page, timeout=60)
        assert big.status_code == 400
        foreign = httpx.post(api, json={**note, "file": "/etc/passwd"}, headers=page, timeout=60)
        assert (
            foreign.status_code == 400 and "not one of the viewer's episode files" in foreign.json()["error"]
        )
        long_text = httpx.post(api, json={**note, "text": "y" * 16_001}, headers=page, timeout=60)
        assert long_text.status_code == 400
        ok = httpx.post(api, json=note, headers=page, timeout=60)
        assert ok.status_code == 200, ok.text
        written = json.loads(notes_path(folder / "a.episodes.jsonl").read_text(encoding="utf-8"))
        assert [n["text"] for n in written["notes"]] == ["hello"]
        shown = httpx.get(url + "api/episode", params={"id": "ep-1", "file": source}, timeout=60).json()
        assert [n["text"] for n in shown["notes"]["episode"]] == ["hello"]
        gone = httpx.post(
            api, json={"file": source, "delete": ok.json()["note"]["id"]}, headers=page, timeout=60
        )
        assert gone.json() == {"deleted": True}
    remote = type(
        "Handler", (), {"server": type("S", (), {"server_address": ("0.0.0.0", 1)})(), "headers": page}
    )
    assert "only when the viewer is bound to a loopback" in _post_refused(remote)  # --allow-remote: no writes
    notes_path(folder / "a.episodes.jsonl").write_text(
        '{"format": "toolshift.notes/1", "notes": [{"id": 1}]}'
    )
    broken = viewer.episode({"id": "ep-1"})["notes"]
    assert broken["problems"] and "a.notes.json" in broken["problems"][0]  # named, the episode still shown
