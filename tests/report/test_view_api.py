"""The viewer's API without a browser: sort keys, search under filters, and refresh when a folder goes away."""

from __future__ import annotations

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
