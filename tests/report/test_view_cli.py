"""`toolshift view` on the command line: it serves the JSON API on loopback, and refuses other binds unasked."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys

import httpx
import pytest

from toolshift.report.view.server import is_loopback

from .conftest import add_corrupt_files


def test_loopback_addresses():
    assert is_loopback("127.0.0.1") and is_loopback("127.3.4.5") and is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("::")


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_a_non_loopback_bind_needs_the_flag(host, tau2_results):
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "view", str(tau2_results), "--host", host],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "not a loopback address" in result.stderr and "--allow-remote" in result.stderr


def test_nothing_readable_is_bad_input_naming_the_file(tmp_path):
    bad = add_corrupt_files(tmp_path / "bad")
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "view", str(bad["headless"])],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "headless.episodes.jsonl" in result.stderr


def test_serves_pages_of_episodes_and_one_episode(tmp_path, tau2_results):
    bad = add_corrupt_files(tmp_path / "bad")
    env = {**os.environ, "COLUMNS": "300"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolshift", "view", str(tau2_results), str(bad["one_bad"]), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:
            found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if found:
                url = found.group(1)
                break
        assert url, proc.stderr.read() if proc.stderr else ""
        info = httpx.get(url + "api/runs", timeout=60).json()
        assert info["episodes"] == 5 and any("line 3" in p for p in info["problems"])
        page = httpx.get(url + "api/episodes", params={"limit": 2, "offset": 1}, timeout=60).json()
        assert page["total"] == 5 and len(page["rows"]) == 2 and page["offset"] == 1
        one = httpx.get(url + "api/episode", params={"row": page["rows"][0]["row"]}, timeout=60).json()
        assert one["episode"]["id"] == page["rows"][0]["id"] and one["episode"]["messages"]
        assert httpx.get(url + "api/episode", params={"row": 99}, timeout=60).status_code == 400
        assert httpx.get(url + "nothing-here", timeout=60).status_code == 404
        assert "toolshift view" in httpx.get(url, timeout=60).text
        # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host header.
        for path in ("api/episode?row=0", "api/runs", ""):
            rebound = httpx.get(url + path, headers={"Host": "evil.example"}, timeout=60)
            assert rebound.status_code == 421 and "Host" in rebound.json()["error"], path
        assert httpx.get(url + "api/runs", headers={"Host": "localhost:1"}, timeout=60).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def bundle_of(page: str) -> dict:
    """The data an exported page carries (its JSON script element), parsed as the page parses it."""
    found = re.search(r'<script type="application/json" id="bundle">(.*?)</script>', page, re.S)
    assert found, "no bundle in the page"
    return json.loads(found.group(1))


def test_export_writes_one_page_with_the_selection_and_a_hash_only_csp(tmp_path, tau2_results):
    out = tmp_path / "export"
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "view", str(tau2_results), "--export", str(out),
         "--select", "#outcome=success&sort=turns"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "exported 1 episodes" in result.stdout
    page = (out / "index.html").read_text(encoding="utf-8")
    data = bundle_of(page)
    assert data["format"] == "toolshift.view-export/1" and data["selection"] == {
        "outcome": "success",
        "sort": "turns",
    }
    assert [r["outcome"] for r in data["rows"]] == ["success"] and data["rows"][0]["row"] == 0
    assert data["episodes"][0]["episode"]["id"] == data["rows"][0]["id"]
    assert data["aggregate"]["success"]["text"] == "100.0 [100.0, 100.0]"
    # Nothing is loaded from anywhere: no src= or href= but the inline ones, and the CSP admits the inline
    # script by its hash.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and csp.startswith("default-src 'none'")


@pytest.mark.parametrize(
    ("select", "message"),
    [("colour=red", "--select names colour"), ("agent=nobody", "no episode matches the selection")],
)
def test_export_refuses_a_bad_or_empty_selection(tmp_path, tau2_results, select, message):
    result = subprocess.run(
        [sys.executable, "-m", "toolshift", "view", str(tau2_results), "--export", str(tmp_path / "x"),
         "--select", select],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "x" / "index.html").exists()


def test_an_exported_episode_that_says_script_stays_text(tmp_path):
    """Data never runs code: a message holding `</script><script>…` cannot end the bundle or start a script."""
    from toolshift.traces.episode import Message
    from toolshift.traces.store import write_episodes

    from .episodes import make_episode

    hostile = make_episode(0)
    hostile.messages.append(Message(role="user", content="</script><script>alert(1)</script><!-- \u2028"))
    store = tmp_path / "x.episodes.jsonl"
    write_episodes(store, [hostile])
    out = tmp_path / "export"
    result = subprocess.run([sys.executable, "-m", "toolshift", "view", str(store), "--export", str(out)],
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count("<script") == 2  # the bundle and the viewer's own script, nothing from the data
    data = bundle_of(page)
    assert data["episodes"][0]["episode"]["messages"][-1]["content"].startswith("</script><script>alert(1)")
