"""The viewer navigated as inspect view is, in Chromium: links to an episode and a step, keys for episodes, steps
and rows, filter expressions with completion, two runs of one task side by side, the filtered set as CSV and
JSON, light and dark, a layout that reflows from 900 px, the task as the episode records it, and notes kept
beside the run. Every count the page shows is checked against the project's own computation."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from toolshift.report.inputs import discover
from toolshift.report.view.expr import mask
from toolshift.report.view.notes import notes_path
from toolshift.report.view.server import Viewer, serving
from toolshift.traces.store import iter_episodes

from .pages import rows, wait_page

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def runs(eco_runs, tmp_path_factory) -> Path:
    """The baselines (oracle and frozen-v1, two runs) and the oracle's file again in another folder (a third run
    whose episode ids repeat the first's)."""
    _, baselines = eco_runs
    root = tmp_path_factory.mktemp("nav")
    shutil.copytree(baselines, root / "a")
    oracle = next((root / "a").glob("oracle*.episodes.jsonl"))
    (root / "b").mkdir()
    shutil.copyfile(oracle, root / "b" / oracle.name)
    return root


@pytest.fixture(scope="module")
def served(runs):
    inputs = discover([runs])
    viewer = Viewer(inputs)
    with serving(viewer) as url:
        yield url, viewer


def hash_of(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(page.evaluate("location.hash.slice(1)")).items()}


def test_links_name_an_episode_and_a_step_and_keys_move_through_them(browser, served):
    url, viewer = served
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    wait_page(page, "of ")
    unfiltered = page.inner_text("#page-info")
    page.goto(url + "#agent=oracle")  # the oracle's runs: the first repeats its ids in the third
    # the filtered list has fewer episodes: wait for it, or the first row read is the unfiltered list's
    page.wait_for_function(
        "before => document.getElementById('page-info').textContent.includes('of ') "
        "&& document.getElementById('page-info').textContent !== before",
        arg=unfiltered,
    )
    first = rows(page)[0][0]
    # n opens the first episode of the list, n again the next; p goes back
    page.keyboard.press("n")
    page.wait_for_function("id => document.getElementById('ep-title').textContent === id", arg=first)
    page.keyboard.press("n")
    second = rows(page)[1][0]
    page.wait_for_function("id => document.getElementById('ep-title').textContent === id", arg=second)
    page.keyboard.press("p")
    page.wait_for_function("id => document.getElementById('ep-title').textContent === id", arg=first)
    # the address names the episode by id, with its file since the third run repeats its ids, and the step
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.wait_for_function("() => location.hash.includes('step=2')")
    link = hash_of(page)
    assert link["id"] == first and link["step"] == "2" and Path(link["id_file"]).parent.name == "a"
    assert "row" not in link
    again = browser.new_page()
    again.goto(url + "#" + page.evaluate("location.hash.slice(1)"))
    again.wait_for_selector("#steps li.step.current")
    assert again.text_content("#ep-title") == first
    assert again.get_attribute("#steps li.step.current", "data-index") == "2"
    assert "a/" in again.text_content("#ep-fields")  # the first run's file, not the copy's
    again.close()
    # an id that only one file holds is linked without its file
    rs = viewer.runs
    frozen = next(rs.summary(r)["id"] for r in range(rs.size) if rs.summary(r)["agent"] == "frozen-v1")
    page.goto(url + "#id=" + frozen)
    page.wait_for_function("id => document.getElementById('ep-title').textContent === id", arg=frozen)
    page.wait_for_function("() => location.hash.includes('id=')")
    assert "id_file" not in hash_of(page)
    total = viewer.runs.size
    wait_page(page, f"of {total}")  # the list without the oracle filter, rendered before its rows are used
    # rows take the focus: Tab reaches them, arrows move between them, Enter opens one
    page.focus("#episodes tbody tr")
    assert page.evaluate("document.activeElement.tabIndex") == 0
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.cells[0].textContent")
    page.keyboard.press("Enter")
    page.wait_for_function("id => document.getElementById('ep-title').textContent === id", arg=focused)
    assert page.get_attribute("#episodes tbody tr.selected", "aria-selected") == "true"
    # past the page's last row, n loads the next page and opens its first episode
    page.goto(url + "#")
    page.wait_for_selector("#episodes tbody tr")
    assert total > 50
    wait_page(page, f"1–50 of {total}")
    page.locator("#episodes tbody tr").nth(49).click()
    page.wait_for_function(
        "id => document.getElementById('ep-title').textContent === id", arg=rows(page)[49][0]
    )
    page.keyboard.press("n")
    wait_page(page, f"51–{min(100, total)} of {total}")
    page.wait_for_function(
        "id => document.getElementById('ep-title').textContent === id", arg=rows(page)[0][0]
    )
    page.keyboard.press("?")
    assert page.is_visible("#keys-help")
    page.keyboard.press("Escape")
    assert not page.is_visible("#keys-help")
    page.close()


PARITY = [
    "agent == oracle and v >= 2",
    'not success or strict != "strict"',
    "task in [payroll-0001, 'payroll-0003'] and turns > 2",
    "id ~ V2 and calls <= 3 and judged",
    "(v == 1 or v == 3) and not recording and collateral == 0 and missing >= 0",
    "file ~ '/b/' or condition == '' and tokens == 0",
]


def test_a_filter_expression_filters_the_list_and_completes_as_one_types(browser, served):
    url, viewer = served
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    options = lambda: page.eval_on_selector_all("#expr-values option", "os => os.map(o => o.value)")  # noqa: E731
    page.fill("#f-expr", "outc")
    page.wait_for_function("() => document.querySelectorAll('#expr-values option').length > 0")
    assert options() == ["outcome "]
    page.fill("#f-expr", "outcome == ")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#expr-values option')].some(o => o.value.includes('success'))"
    )
    assert "outcome == success " in options() and "outcome == failure " in options()
    page.fill("#f-expr", "agent == oracle and v >= 2")
    expected = int(mask("agent == oracle and v >= 2", viewer.runs).sum())
    wait_page(page, f"of {expected}")
    assert all(r[3] in ("v2", "v3") for r in rows(page))
    page.wait_for_function(f"document.getElementById('aggregate').dataset.episodes === '{expected}'")
    assert "expr=" in page.evaluate("location.hash")
    # the page's own reading of the grammar (a static export filters with it) keeps what the server keeps
    for text in PARITY:
        served_rows = {(r["id"], r["file"]) for r in viewer.page({"expr": text, "limit": "500"})["rows"]}
        in_page = page.evaluate(
            """async text => { const all = await getJSON("api/episodes?limit=500"); const tree = EXPR.parse(text);
                               return all.rows.filter(r => EXPR.evaluate(tree, r)).map(r => [r.id, r.file]); }""",
            text,
        )
        assert {tuple(r) for r in in_page} == served_rows, text
        assert 0 < len(served_rows) < viewer.runs.size, text  # each keeps some and leaves some
    page.fill("#f-expr", "agnt == oracle")
    page.wait_for_selector("#expr-error:not([hidden])")
    assert "unknown field 'agnt'" in page.text_content("#expr-error")
    page.close()


def test_two_runs_of_one_task_side_by_side(browser, served):
    url, viewer = served
    rs = viewer.runs
    summaries = [rs.summary(r) for r in range(rs.size)]
    a = next(
        s for s in summaries if s["agent"] == "oracle" and s["version"].endswith("/v2") and s["calls"] > 1
    )
    b = next(s for s in summaries if s["agent"] == "frozen-v1" and s["task_id"] == a["task_id"]
             and s["version"] == a["version"])  # fmt: skip
    page = browser.new_page()
    page.goto(f"{url}#id={a['id']}&id_file={a['file']}")
    page.wait_for_selector("#compare-with option:nth-child(2)", state="attached")
    choices = page.eval_on_selector_all("#compare-with option", "os => os.map(o => o.value).filter(Boolean)")
    others = [
        s for s in summaries if s["task_id"] == a["task_id"] and (s["id"], s["file"]) != (a["id"], a["file"])
    ]
    assert len(choices) == len(others)
    page.select_option("#compare-with", json.dumps({"id": b["id"], "file": b["file"]}, separators=(",", ":")))
    page.wait_for_selector("#compare:not([hidden]) .cmp-table")
    ea, eb = (next(e for e in iter_episodes(Path(s["file"])) if e.id == s["id"]) for s in (a, b))
    turns = max(sum(m.role == "assistant" for m in e.messages) for e in (ea, eb))
    assert page.locator("#compare .cmp-turn").count() >= turns
    calls_a = [c for m in ea.messages if m.role == "assistant" for c in m.tool_calls or []]
    shown = json.loads(page.get_attribute("#compare .cmp-summary", "data-calls"))
    assert sum(shown.values()) >= len(calls_a) > 0
    diff_rows = {(c.table, c.key, c.field) for e in (ea, eb) for c in e.world_diff or []}
    assert sum(json.loads(page.get_attribute("#compare .cmp-summary", "data-diffs")).values()) == len(
        diff_rows
    )
    assert hash_of(page)["vs"] == b["id"]
    # the comparison survives a reload from its link, and Escape closes it
    page.reload()
    page.wait_for_selector("#compare:not([hidden]) .cmp-table")
    page.keyboard.press("Escape")
    page.wait_for_selector("#compare", state="hidden")
    assert "vs" not in hash_of(page)
    page.close()


def test_the_filtered_set_downloads_as_csv_and_json(browser, served):
    url, viewer = served
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    page.select_option("#f-agent", "frozen-v1")
    wait_page(page, "of ")
    expected = sorted(viewer.runs.summary(int(r))["id"] for r in viewer.selection({"agent": "frozen-v1"})[3])
    with page.expect_download() as got:
        page.click("#csv-link")
    table = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
    assert sorted(r["id"] for r in table) == expected and {r["agent"] for r in table} == {"frozen-v1"}
    with page.expect_download() as got:
        page.click("#json-link")
    body = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert body["format"] == "toolshift.view-table/1" and len(body["rows"]) == len(expected)
    page.close()


def test_light_and_dark_follow_the_system_and_the_toggle_stays(chromium, served):
    url, _ = served
    context = chromium.new_context(
        viewport={"width": 1200, "height": 800}, color_scheme="dark", bypass_csp=True
    )
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    background = "getComputedStyle(document.body).backgroundColor"
    dark = page.evaluate(background)
    assert sum(map(int, dark[4:-1].split(","))) < 150  # the system's dark
    page.click("#theme")  # system → light
    assert page.text_content("#theme") == "theme: light"
    light = page.evaluate(background)
    assert sum(map(int, light[4:-1].split(","))) > 600
    page.reload()
    page.wait_for_selector("#episodes tbody tr")
    assert page.evaluate(background) == light and page.text_content("#theme") == "theme: light"
    page.click("#theme")  # light → dark
    assert page.evaluate(background) == dark
    context.close()


@pytest.mark.parametrize("width", [900, 1280, 1920])
def test_the_layout_reflows_from_900_px_to_wide_screens(chromium, served, width):
    url, viewer = served
    context = chromium.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.goto(f"{url}#id={viewer.runs.summary(0)['id']}&id_file={viewer.runs.summary(0)['file']}")
    page.wait_for_selector("#steps li.step")
    list_box = page.locator("#list-pane").bounding_box()
    detail = page.locator("#detail").bounding_box()
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # no sideways scroll
    assert 330 <= list_box["width"] <= 650
    assert detail["width"] >= 480 and detail["x"] > list_box["x"] + list_box["width"]  # side by side
    assert detail["width"] >= width - list_box["width"] - 80  # the episode takes the rest
    context.close()


def test_the_task_panel_shows_what_the_episode_records_without_a_build(browser, runs):
    episode = next(iter_episodes(next((runs / "b").glob("*.episodes.jsonl"))))
    request = next(m.content for m in episode.messages if m.role == "user")
    with serving(Viewer(discover([runs / "b"]))) as url:  # no build among the inputs
        page = browser.new_page()
        page.goto(f"{url}#id={episode.id}")
        page.wait_for_selector("#task-panel:not([hidden]) dd.request")
        assert "no benchmark build among the inputs" in page.text_content("#task-body")
        assert page.text_content("#task-body dd.request") == request
        page.close()


def test_notes_on_an_episode_and_its_task_are_kept_beside_the_run(browser, runs, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(runs / "a", folder)
    viewer = Viewer(discover([folder]))
    rs = viewer.runs
    first = rs.summary(0)
    sibling = next(rs.summary(r) for r in range(1, rs.size) if rs.summary(r)["task_id"] == first["task_id"])
    with serving(viewer) as url:
        page = browser.new_page()
        page.goto(f"{url}#id={first['id']}")
        page.wait_for_selector("#steps li.step")
        page.click("#notes-panel summary")
        page.fill("#note-text", "asks twice <b>before</b> cancelling")
        page.click("#note-episode")
        page.wait_for_selector("#notes-body .note-item")
        page.fill("#note-text", "the request names the wrong period")
        page.click("#note-task")
        page.wait_for_function("() => document.querySelectorAll('#notes-body .note-item').length === 2")
        kept = json.loads(notes_path(Path(first["file"])).read_text(encoding="utf-8"))
        assert kept["format"] == "toolshift.notes/1"
        assert [(n["on"], n["text"]) for n in kept["notes"]] == [
            ("episode", "asks twice <b>before</b> cancelling"),
            ("task", "the request names the wrong period"),
        ]
        assert page.locator("#notes-body b").count() == 0  # a note is text, never HTML
        # another episode of the task shows the task's note, not the episode's
        page.goto(f"{url}#id={sibling['id']}")
        page.wait_for_function(
            "id => document.getElementById('ep-title').textContent === id", arg=sibling["id"]
        )
        page.wait_for_selector("#notes-body .note-item")
        assert [
            t for t in page.eval_on_selector_all("#notes-body .note-text", "ns => ns.map(n => n.textContent)")
        ] == ["the request names the wrong period"]
        page.click("#notes-body .note-delete")
        page.wait_for_function("() => document.querySelectorAll('#notes-body .note-item').length === 0")
        kept = json.loads(notes_path(Path(first["file"])).read_text(encoding="utf-8"))
        assert [n["on"] for n in kept["notes"]] == ["episode"]
        page.close()
    kinds = {f.path.name: f.kind for f in discover([folder]).files}
    assert kinds[notes_path(Path(first["file"])).name] == "notes"  # listed as notes, never read as episodes
