"""The viewer and the report in headless Chromium (Debian's, driven by Playwright): load, filter, step, look.

Screenshots are checked for structure (the elements a person would look at are there and visible at the
moment of the shot), never for pixels. `make test` installs Chromium with apt-get; the tests skip only
where it is absent.
"""

from __future__ import annotations

import pytest

from toolshift.report.build import build_report
from toolshift.report.inputs import discover
from toolshift.report.sections import Options
from toolshift.report.view.marks import FlowMarker
from toolshift.report.view.server import Viewer, serving

from .conftest import add_corrupt_files
from .pages import in_viewport, png_size, rows, visible_box, wait_in_viewport, wait_page

pytestmark = [pytest.mark.slow, pytest.mark.shared]


@pytest.fixture
def viewer_url(tmp_path, eco_runs, tau_runs, tau2_results):
    _, runs = eco_runs
    bad = add_corrupt_files(tmp_path / "bad")
    inputs = discover([runs, tau_runs, tau2_results, bad["headless"]])
    marker = FlowMarker(tau_runs / "flow.json", tau_runs / "taubench-v1-airline.catalog.json")
    with serving(Viewer(inputs, marker)) as url:
        yield url, inputs


def test_viewer_filters_pages_steps_and_marks(browser, viewer_url, tmp_path):
    url, inputs = viewer_url
    total = inputs.runset().size
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    assert page.text_content("#counts").startswith(f"{total} episodes in ")
    wait_page(page, f"1–50 of {total}")
    # The bad file is named above the list; everything else is listed.
    assert page.is_visible("#problems") and "headless.episodes.jsonl" in page.text_content("#problems")
    # Paging.
    page.click("#next-page")
    wait_page(page, f"51–100 of {total}")
    # Filter by agent, then by outcome: the server pages the filtered rows.
    page.select_option("#f-agent", "gpt-4o")
    wait_page(page, "of 100")
    assert {r[2] for r in rows(page)} == {"gpt-4o"}
    page.select_option("#f-outcome", "success")
    page.wait_for_function("document.querySelectorAll('#episodes tbody tr td.outcome-failure').length === 0")
    successes = rows(page)
    assert successes and {r[4] for r in successes} == {"success"}
    # Step through one episode the flow saves turns in (it failed: the outcome filter goes first).
    page.select_option("#f-outcome", "*")
    wait_page(page, "of 100")
    page.fill("#f-q", "gpt-4o.task2.trial0")
    wait_page(page, "1–1 of 1")
    page.click("#episodes tbody tr")
    page.wait_for_selector("#steps li.step")
    assert page.text_content("#ep-title") == "tau-bench-v1.airline.gpt-4o.task2.trial0"
    n = page.locator("#steps li.step").count()
    assert page.text_content("#step-info") == f"step 1 of {n}"
    page.click("#next-step")
    page.click("#next-step")
    assert page.get_attribute("#steps li.step.current", "data-index") == "2"
    page.uncheck("#show-all")
    assert page.locator("#steps li.step:not(.future)").count() == 3
    page.keyboard.press("End")
    assert page.get_attribute("#steps li.step.current", "data-index") == str(n - 1)
    page.check("#show-all")
    assert page.locator(".badge.saved").count() >= 1 and page.locator(".lookup.used").count() >= 1
    assert "turn(s) saved" in page.text_content("#ep-marks-note")
    shot = page.screenshot(path=str(tmp_path / "viewer.png"))
    assert png_size(shot) == (1400, 1000)
    for selector in ("header h1", "#filters", "#episodes tbody tr", "#stepper", "#steps li.step.current",
                     "#problems"):  # fmt: skip
        visible_box(page, selector)
    page.close()


def test_viewer_keeps_the_episode_list_in_view_while_a_long_episode_scrolls(browser, viewer_url):
    url, _ = viewer_url
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    turns = [int(r[6]) for r in rows(page)]
    longest = turns.index(max(turns))
    page.locator("#episodes tbody tr").nth(longest).click()
    page.wait_for_selector("#steps li.step")
    assert page.evaluate("document.documentElement.scrollHeight > 2 * innerHeight")  # a long episode
    page.keyboard.press("End")  # steps to the last message, scrolling the page down to it
    page.wait_for_function("scrollY > innerHeight")
    wait_in_viewport(page, "#steps li.step.current")  # the scroll has settled with the current step on screen
    # The list, its filters and the selected row are still on screen.
    for selector in ("#list-pane", "#filters", "#episodes tbody tr.selected"):
        assert in_viewport(page, selector), selector
    # Back up to the first step with the wheel over the episode: the page scrolls, the list stays.
    page.mouse.move(1000, 500)
    page.mouse.wheel(0, -200_000)
    page.wait_for_function("scrollY === 0")
    page.mouse.wheel(0, 200_000)
    page.wait_for_function("innerHeight + scrollY >= document.documentElement.scrollHeight - 2")
    for selector in ("#list-pane", "#filters", "#episodes tbody tr.selected"):
        assert in_viewport(page, selector), selector
    page.close()


def test_viewer_shows_world_diffs_and_restores_state_from_the_address(browser, viewer_url):
    url, inputs = viewer_url
    rs = inputs.runset()
    oracle = next(r for r in range(rs.size) if rs.summary(r)["agent"] == "oracle")
    page = browser.new_page()
    page.goto(f"{url}#agent=oracle&row={oracle}")
    page.wait_for_selector("#steps li.step.diff")
    assert page.input_value("#f-agent") == "oracle"
    assert {r[2] for r in rows(page)} == {"oracle"}
    assert page.text_content("#ep-title") == rs.summary(oracle)["id"]
    page.click("#last-step")
    current = page.locator("#steps li.step.current")
    assert "world diff" in current.text_content()
    assert current.locator("table.diff tbody tr").count() >= 1  # the oracle changed rows
    verdict = current.locator(".verdict").text_content()
    assert (
        "strict success (no collateral write) yes" in verdict
        and "outside Δgold): 0 change(s) on none" in verdict
    )
    assert {r[5] for r in rows(page)} == {"0"}  # the list's collateral column: the oracle writes nothing else
    page.close()


def test_viewer_opens_a_tau2_results_file_and_reports_unreadable_lines(browser, tmp_path, tau2_results):
    bad = add_corrupt_files(tmp_path / "more")
    inputs = discover([tau2_results, bad["one_bad"]])
    with serving(Viewer(inputs)) as url:
        page = browser.new_page()
        page.goto(url)
        wait_page(page, "of 5")
        assert "one-bad-line.episodes.jsonl: line 3" in page.text_content("#problems")
        page.click("#more-filters summary")  # the file, model, strict, domain, harness and kind menus
        page.select_option("#f-file", str(tau2_results))
        wait_page(page, "1–2 of 2")
        page.click("#episodes tbody tr")
        page.wait_for_selector("#steps li.role-tool")
        assert page.locator("#steps li.role-assistant .call-name").count() >= 1
        # The header keeps the message index and the token count apart (not "#21200 + 40 tokens").
        head = page.locator("#steps li.step[data-index='2'] .step-head")
        assert head.locator(".msg-index").text_content() == "#2"
        assert head.locator(".tokens").text_content() == "1200 + 40 tokens"
        index_box, tokens_box = (
            visible_box(page, "#steps li.step[data-index='2'] .msg-index"),
            visible_box(page, "#steps li.step[data-index='2'] .tokens"),
        )
        assert tokens_box["x"] >= index_box["x"] + index_box["width"] + 4  # the header's gap between them
        page.close()


def test_report_opens_from_file_with_every_section(browser, tmp_path, eco_runs, tau_runs):
    build, runs = eco_runs
    bad = add_corrupt_files(tmp_path / "bad")
    out = tmp_path / "report.html"
    report = build_report([build, runs, tau_runs, bad["catalog"]], out, options=Options(resamples=50))
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    ids = page.eval_on_selector_all("section", "s => s.map(x => x.id)")
    assert ids == report.sections and {"inputs", "runs", "benchmark-1", "flows-1"} <= set(ids)
    assert page.locator("nav a").count() == len(ids)
    assert "broken.catalog.json" in page.text_content("#bad-files")
    loaded = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)")
    assert len(loaded) >= 5 and all(loaded)
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    # Wide tables scroll inside their cards: the page itself is no wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    page.click("nav a[href='#flows-1']")
    shot = page.screenshot(path=str(tmp_path / "report.png"))
    assert png_size(shot) == (1400, 1000)
    visible_box(page, "#flows-1 h2")
    page.close()
