"""The viewer's search, sort, figures, grader and task panels, live refresh and static export, in Chromium.

Every figure the page shows is checked against the project's own computation on the same episodes
(`agents.results.summarize`, the report's runs section, `Task.verdict`), and every list against a plain
scan of the episode files, so a page that drew the wrong thing fails.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from toolshift.agents.results import summarize
from toolshift.bench.build import load_tasks
from toolshift.bench.ecosystem.paths import load_references
from toolshift.report.inputs import discover
from toolshift.report.sections.runs import figures_row
from toolshift.report.view.export import export, parse_select
from toolshift.report.view.server import Viewer, serving
from toolshift.traces.episode import Episode
from toolshift.traces.store import EpisodeWriter, iter_episodes, write_episodes

from .episodes import make_episode
from .pages import TIMEOUT_MS, VIEWPORT, rows, wait_page

pytestmark = [pytest.mark.slow, pytest.mark.shared]


def strip_rows(source: Path, target: Path) -> None:
    """A copy of an episode store as episodes before the strict verdict recorded rows: counts only."""
    episodes = []
    for e in iter_episodes(source):
        if e.outcome is not None:
            for k in ("missing_rows", "collateral_rows"):
                e.outcome.info.pop(k, None)
        episodes.append(e)
    write_episodes(target, episodes)


@pytest.fixture(scope="module")
def old_runs(eco_runs, tmp_path_factory) -> Path:
    _, runs = eco_runs
    out = tmp_path_factory.mktemp("old") / "frozen-old.episodes.jsonl"
    strip_rows(next(runs.glob("frozen-v1*.episodes.jsonl")), out)
    return out


@pytest.fixture(scope="module")
def served(eco_runs, tau_runs, old_runs, tmp_path_factory):
    build, runs = eco_runs
    from toolshift.traces.demo import EXAMPLE_RUN

    tau2 = tmp_path_factory.mktemp("tau2") / "airline_results.json"
    tau2.write_bytes(EXAMPLE_RUN.read_bytes())
    inputs = discover([build, runs, tau_runs, tau2, old_runs])
    with serving(Viewer(inputs)) as url:
        yield url, inputs, tau2


def says(e: Episode, needle: str) -> bool:
    """The episode's messages or call arguments contain `needle` (any case): the search's meaning."""
    n = needle.lower()
    return any(n in (m.content or "").lower() for m in e.messages) or any(
        n in json.dumps(c.arguments, ensure_ascii=False).lower()
        for m in e.messages
        for c in m.tool_calls or []
    )


def every_episode(inputs) -> list[tuple[int, Episode]]:
    rs = inputs.runset()
    out = []
    for r in range(rs.size):
        index, local = rs.locate(r)
        out.append((r, index.episode(local)))
    return out


def open_page(browser, url: str):
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    return page


def test_search_finds_a_name_said_only_in_the_conversation(browser, served):
    url, inputs, _ = served
    needle = "Mia Li"  # said in a tool result of τ²'s example and by users of τ-bench, in no id or task
    expected = sorted(e.id for _, e in every_episode(inputs) if says(e, needle))
    assert expected and not any(needle.lower() in i.lower() for i in expected)
    page = open_page(browser, url)
    page.fill("#f-q", needle)
    wait_page(page, f"1–{min(50, len(expected))} of {len(expected)}")
    shown = sorted(r[0] for r in rows(page))
    assert shown == expected[:50]
    # The facets count under the search: the agent menu offers only agents that said it.
    options = page.eval_on_selector_all("#f-agent option", "os => os.map(o => o.value)")
    agents = {e.agent for _, e in every_episode(inputs) if e.id in expected}
    assert set(options) - {"*"} == agents
    page.close()


def test_columns_sort_up_and_down_and_the_order_survives_paging(browser, served):
    url, inputs, _ = served
    page = open_page(browser, url)
    total = inputs.runset().size
    page.click("#episodes th[data-sort='turns']")
    page.wait_for_selector("#episodes th[data-sort='turns'][aria-sort='ascending']")
    page.wait_for_function("() => location.hash.includes('sort=turns')")
    turns = [int(r[6]) for r in rows(page)]
    every = sorted(inputs.runset().numeric("turns").tolist())
    assert turns == every[:50]
    page.click("#episodes th[data-sort='turns']")
    page.wait_for_selector("#episodes th[data-sort='turns'][aria-sort='descending']")
    wait_page(page, f"1–50 of {total}")
    page.wait_for_function("() => location.hash.includes('desc=1')")
    assert [int(r[6]) for r in rows(page)] == every[::-1][:50]
    page.click("#next-page")
    wait_page(page, f"51–100 of {total}")
    assert [int(r[6]) for r in rows(page)] == every[::-1][50:100]
    # A text column sorts by its values.
    page.click("#episodes th[data-sort='agent']")
    page.wait_for_selector("#episodes th[data-sort='agent'][aria-sort='ascending']")
    agents = [r[2] for r in rows(page)]
    assert agents == sorted(agents) and agents[0] == min(a for a in inputs.runset().values["agent"] if a)
    page.close()


def figure(page, name: str) -> str:
    return page.text_content(f"#aggregate [data-figure='{name}']").removeprefix(name + " ").strip()


def test_figures_of_the_filtered_set_are_agents_results_and_the_reports(browser, served):
    url, inputs, _ = served
    rs = inputs.runset()
    gpt = [e for _, e in every_episode(inputs) if e.agent == "gpt-4o"]
    expected = summarize(gpt, trials=2)
    page = open_page(browser, url)
    page.select_option("#f-agent", "gpt-4o")
    page.wait_for_function(f"document.getElementById('aggregate').dataset.episodes === '{len(gpt)}'")
    # pass^2 as `toolshift agents results` computes it on the same episodes (τ-bench's two trials a task).
    assert figure(page, "pass^2") == expected.pass_k[2].percent()
    # SR, strict SR and pass^k as the report's runs section computes them for the same rows.
    rows_ = np.nonzero(rs.codes["agent"] == rs.lookup["agent"]["gpt-4o"])[0]
    cells, figures = figures_row(rs, rows_, 1000, seed=0)  # the viewer's seed, 0
    assert figure(page, "SR") == figures["success"]["text"] == cells[2]
    assert figure(page, "strict SR") == cells[3]
    assert cells[4] == f"pass^2 {figure(page, 'pass^2')}"
    assert f"{len(gpt)} episodes" in page.text_content("#aggregate .agg-counts")
    # The figures follow the filters: the successes alone succeed, all of them.
    page.select_option("#f-outcome", "success")
    successes = [e for e in gpt if e.outcome and e.outcome.success]
    page.wait_for_function(f"document.getElementById('aggregate').dataset.episodes === '{len(successes)}'")
    assert figure(page, "SR") == "100.0 [100.0, 100.0]"
    page.close()


def test_grader_names_the_missing_and_collateral_rows_and_tau2_checks(browser, served, eco_runs, old_runs):
    url, inputs, tau2 = served
    build, _ = eco_runs
    tasks = {t.id: t for t in load_tasks(build)}
    old = [(r, e) for r, e in every_episode(inputs)
           if e.outcome and e.outcome.info.get("missing_changes") and "missing_rows" not in e.outcome.info]  # fmt: skip
    assert old, "the stripped copy has failures recording only a count"
    row, episode = old[0]
    verdict = tasks[episode.task_id].verdict(episode.world_diff or [])
    assert len(verdict.missing) == episode.outcome.info["missing_changes"]
    page = browser.new_page()
    page.goto(f"{url}#row={row}")
    page.wait_for_selector("#grader .grader-check.delta")
    assert "judged here from the task" in page.text_content("#grader .delta h4")
    cells = page.eval_on_selector_all(
        "#grader table.missing-rows tbody tr", "trs => trs.map(tr => [...tr.cells].map(td => td.textContent))"
    )
    assert [(c[0], c[1], c[2]) for c in cells] == [(c.table, c.key, c.field) for c in verdict.missing]
    assert f"missing gold changes (in Δgold, not in Δagent): {len(verdict.missing)}" in page.text_content(
        "#grader"
    )
    # τ²'s own checks: the DB check and each expected action, passed.
    rs = inputs.runset()
    first = next(r for r in range(rs.size) if rs.summary(r)["file"] == str(tau2))
    page.goto(f"{url}#row={first}")
    page.wait_for_selector("#grader .grader-check.tau2")
    lines = page.eval_on_selector_all("#grader .tau2 li.check-line", "ls => ls.map(l => l.textContent)")
    assert lines[0].startswith("✓ pass DB check")
    assert [line for line in lines if "action" in line] == [
        '✓ pass action get_user_details {"user_id":"mia_li_3668"} (read)',
        '✓ pass action cancel_reservation {"reservation_id":"NO6JO3"} (write)',
    ]
    page.close()


def test_task_panel_shows_the_task_and_the_reference_path_of_the_episodes_version(browser, served, eco_runs):
    url, inputs, _ = served
    build, _ = eco_runs
    tasks = {t.id: t for t in load_tasks(build)}
    _, records = load_references(build)
    refs = {(r.task_id, r.version): r for r in records}
    row, episode = next(
        (r, e)
        for r, e in every_episode(inputs)
        if (e.ecosystem_version or "").endswith("/v3") and e.agent == "oracle"
    )
    task, ref = tasks[episode.task_id], refs[(episode.task_id, 3)]
    page = browser.new_page()
    page.goto(f"{url}#row={row}")
    page.wait_for_selector("#task-panel:not([hidden]) ol.reference-path li")
    body = page.text_content("#task-body")
    assert task.public_request in body and task.instruction.intent in body
    facts = page.eval_on_selector_all(
        "#task-body table.facts tbody tr", "trs => trs.map(tr => tr.cells[0].textContent)"
    )
    assert facts == list(task.instruction.facts)
    changes = page.locator("#task-body table.expected tbody tr").count()
    assert changes == len(task.expected_changes) > 0
    assert f"reference path for v3 (fewest steps: {ref.step.steps}" in body
    calls = page.eval_on_selector_all(
        "#task-body ol.reference-path li .call-name", "ns => ns.map(n => n.textContent)"
    )
    assert calls == [t for t, _ in ref.step.calls]
    gold = page.eval_on_selector_all(
        "#task-body ol.gold-path li .call-name", "ns => ns.map(n => n.textContent)"
    )
    assert gold == [g.tool for g in task.gold_path]
    # The run's configuration, from its file's header, one click away.
    assert page.is_visible("#run-panel summary")
    assert json.loads(page.text_content("#run-meta"))["baseline"] == "oracle"
    page.close()


def test_long_tool_outputs_fold_and_raw_responses_show(browser, served):
    url, inputs, tau2 = served
    rs = inputs.runset()
    long_row = next(
        r for r, e in every_episode(inputs)
        if any(m.role == "tool" and len(m.content or "") > 3000 for m in e.messages)
    )  # fmt: skip
    page = browser.new_page()
    page.goto(f"{url}#row={long_row}")
    page.wait_for_selector("#steps li.role-tool details.long")
    fold = page.locator("#steps li.role-tool details.long").first
    assert re.fullmatch(
        r"tool output: \d+ lines, \d+ characters \(click to show\)", fold.locator("summary").text_content()
    )
    assert not fold.locator("pre").is_visible()
    fold.locator("summary").click()
    assert fold.locator("pre").is_visible()
    # A short result is shown as is.
    assert page.locator("#steps li.role-tool > pre.content").count() >= 1
    # τ²-bench keeps each model turn's raw response: it opens beside the message.
    first = next(r for r in range(rs.size) if rs.summary(r)["file"] == str(tau2))
    page.goto(f"{url}#row={first}")
    page.wait_for_selector("#steps li.step[data-index='2'] details.raw")
    raw = page.locator("#steps li.step[data-index='2'] details.raw")
    raw.locator("summary").click()
    assert json.loads(raw.locator("pre.raw-response").text_content())["id"] == "chatcmpl-x"
    page.close()


def test_live_refresh_picks_up_episodes_a_run_appends(browser, tmp_path):
    folder = tmp_path / "run"
    store = folder / "a.episodes.jsonl"
    write_episodes(store, [make_episode(k, agent="first") for k in range(3)])
    with serving(Viewer(discover([folder]), paths=[folder])) as url:
        page = open_page(browser, url)
        wait_page(page, "1–3 of 3")
        assert "live" in page.text_content("#live")
        page.evaluate("window.notReloaded = true")
        with EpisodeWriter(store, append=True) as w:  # the run goes on: two more episodes in its file
            for k in range(3, 5):
                w.write(make_episode(k, agent="first"))
        wait_page(page, "1–5 of 5")
        write_episodes(folder / "b.episodes.jsonl", [make_episode(k, agent="second") for k in range(2)])
        wait_page(page, "1–7 of 7")
        page.wait_for_function(
            "document.getElementById('counts').textContent.startsWith('7 episodes in 2 files')"
        )
        assert page.evaluate("window.notReloaded === true")
        assert "second (2)" in page.text_content("#f-agent")
        page.wait_for_function("document.getElementById('aggregate').dataset.episodes === '7'")
        page.close()


def test_export_opens_from_a_file_with_its_selection_and_no_server(browser, chromium, served, tmp_path):
    url, inputs, _ = served
    # The set is found in the viewer, and the page says how to export it.
    finder = open_page(browser, url)
    finder.select_option("#f-agent", "gpt-4o")
    finder.fill("#f-q", "Mia Li")
    finder.click("#episodes th[data-sort='turns']")
    finder.click("#episodes th[data-sort='turns']")
    finder.wait_for_selector("#episodes th[data-sort='turns'][aria-sort='descending']")
    finder.click("#export-hint summary")
    command = shlex.split(finder.text_content("#export-command"))
    finder.close()
    from toolshift.terminal import toolshift_command

    # the command as a new shell types it (`.venv/bin/toolshift` where the PATH does not find it)
    assert (
        command[:5] == [toolshift_command(), "view", "RUNS", "--export", "DIR"] and command[5] == "--select"
    )
    query = parse_select(command[6])
    assert query == {"agent": "gpt-4o", "q": "Mia Li", "sort": "turns", "desc": "1"}
    viewer = Viewer(inputs)
    page_path, n = export(viewer, query, tmp_path / "export")
    chosen = [r for r, e in every_episode(inputs) if e.agent == "gpt-4o" and says(e, "Mia Li")]
    assert n == len(chosen) > 0
    # The page's own CSP is enforced here: its inline script and style run by their hashes, nothing loads.
    context = chromium.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_path.as_uri())
    page.wait_for_selector("#episodes tbody tr")
    page.wait_for_selector("#aggregate [data-figure='SR']")
    assert page.text_content("#page-info") == f"1–{n} of {n}"
    turns = [
        int(t)
        for t in page.eval_on_selector_all(
            "#episodes tbody tr td:nth-child(7)", "ts => ts.map(t => t.textContent)"
        )
    ]
    assert turns == sorted(turns, reverse=True)
    assert "static export" in page.text_content("#live")
    page.click("#episodes tbody tr")
    page.wait_for_selector("#steps li.step.diff")
    assert page.locator("#steps li.step").count() >= 3
    # The page's own search, sort, filter expressions and downloads work on the export.
    longer = [r for r in chosen if inputs.runset().summary(r)["turns"] > 4]
    page.fill("#f-expr", "turns > 4")
    page.wait_for_function(f"document.getElementById('page-info').textContent.endsWith('of {len(longer)}')")
    with page.expect_download() as got:
        page.click("#csv-link")
    assert len(Path(got.value.path()).read_text(encoding="utf-8").splitlines()) == len(longer) + 1
    page.fill("#f-expr", "")
    assert page.is_hidden("#note-form")  # notes are shown, not written, in a page without a server
    page.fill("#f-q", "zzz-nothing-says-this")
    page.wait_for_selector("text=no episode matches")
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    assert not errors, errors
    context.close()
