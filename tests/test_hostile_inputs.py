"""Issue 56's findings on the real command line: each hostile input gives one line naming file, record and field
and exit 2 (or is flagged), never a traceback, a wait without end or a silent wrong answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
BFCL_RUN = ROOT / "tests" / "traces" / "data" / "bfcl" / "fixture-a-FC"
BFCL_FILE = "multi_turn/BFCL_v4_multi_turn_base_result.json"


def toolshift(
    *args: str | Path, env: dict[str, str] | None = None, process: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run the CLI: in this process through typer's runner (what `toolshift.cli.main` prints for an error is
    its `ToolshiftError` on one line with its exit code; any other exception is a traceback), or with
    `process` as a real process. A wait past `timeout` (a process) or pytest's guard fails the test."""
    argv = [str(a) for a in args]
    if process:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
        cmd = [sys.executable, "-m", "toolshift", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, env=full_env, check=False, timeout=timeout)
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.errors import ToolshiftError

    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        result = CliRunner().invoke(app, argv)
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    exc = result.exception
    if exc is None or isinstance(exc, SystemExit):
        return subprocess.CompletedProcess(argv, result.exit_code, result.output, "")
    if isinstance(exc, ToolshiftError):
        return subprocess.CompletedProcess(argv, exc.exit_code, result.output, f"error: {exc}\n")
    import traceback

    return subprocess.CompletedProcess(
        argv, 1, result.output, "Traceback\n" + "".join(traceback.format_exception(exc))
    )


def refused(done: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2 with one line of error, no traceback, naming every needle."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and err.count("\n") == 0, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _bfcl_copy(tmp: Path, edit) -> Path:
    run = tmp / "model-FC"
    shutil.copytree(BFCL_RUN, run)
    path = run / BFCL_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")
    return run


def test_a_lone_surrogate_in_a_bfcl_result_names_record_and_field_and_skip_bad_counts_it(tmp_path):
    run = _bfcl_copy(
        tmp_path, lambda ls: [ls[0].replace("I have done what you asked.", "I have \\ud800 done", 1), *ls[1:]]
    )
    err = refused(toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o"), str(run / BFCL_FILE))
    assert "record 0" in err and "field 'result[0]" in err and "lone surrogate \\ud800" in err
    skipped = toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o2", "--skip-bad")
    assert skipped.returncode == 0, skipped.stderr
    assert "lone surrogate" in skipped.stdout + skipped.stderr


def test_bfcl_entries_under_one_id_are_refused_not_made_two_episodes_with_one_id(tmp_path):
    run = _bfcl_copy(tmp_path, lambda ls: [*ls, ls[0]])
    err = refused(toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o"), str(run / BFCL_FILE))
    assert "record 2" in err and "field 'id'" in err and "repeats (record 0 has it)" in err
    skipped = toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o2", "--skip-bad")
    assert skipped.returncode == 0 and "repeats" in skipped.stdout, skipped.stdout[-2000:]
    again = toolshift("traces", "convert", "bfcl", BFCL_RUN, BFCL_RUN, "--out", tmp_path / "o3")
    refused(again, "field 'id'", "an earlier input too")


def test_a_lone_surrogate_in_a_task_file_names_the_field(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1", "domain": "clinic", "instruction": "a\\ud800"}\n')
    done = toolshift(
        "run", "--world", "clinic", "--tasks", tasks, "--out", tmp_path / "runs", "--model", "oracle"
    )
    refused(done, str(tasks), "record 0", "field 'instruction'", "lone surrogate")


def test_nan_in_converter_input_is_refused_not_written_as_null(tmp_path):
    run = _bfcl_copy(
        tmp_path, lambda ls: [ls[0].replace('"latency": ', '"latency": NaN, "was": ', 1), *ls[1:]]
    )
    assert "NaN" in (run / BFCL_FILE).read_text()
    refused(
        toolshift("traces", "convert", "bfcl", run, "--out", tmp_path / "o"),
        "record 0",
        "nan is not a JSON number",
    )


def test_a_non_utf8_byte_in_a_builds_spec_is_one_line_for_every_command_that_reads_it(
    tmp_path, small_evolved_build
):
    build = Path(shutil.copytree(small_evolved_build, tmp_path / "b"))
    spec = build / "domains" / "accounts_payable" / "spec.yaml"
    spec.write_bytes(spec.read_bytes() + b"\xff\xfe")
    for args in (("bench", "verify", build), ("bench", "stats", build)):
        refused(toolshift(*args), str(spec), "not UTF-8")


def _initialize(url: str, rid: object) -> httpx.Response:
    init = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return httpx.post(url, json=init, headers={"Accept": "application/json, text/event-stream"}, timeout=60)


def test_past_its_session_limit_the_gateway_refuses_initialize_under_its_id_naming_the_limit():
    """Issue 56: the gateway answered the session past its limit with 503 and `"id": null`, naming no limit;
    `world serve` answered with the id and `--max-sessions`. Both now do the latter."""
    from toolshift.gateway.build import build_gateway
    from toolshift.gateway.config import GatewayConfig
    from toolshift.gateway.server import GatewayServer, http_gateway_thread

    server = GatewayServer(
        build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic"}], max_sessions=2))
    )
    with http_gateway_thread(server) as url:
        assert [_initialize(url, i).status_code for i in (1, 2)] == [200, 200]
        for rid in ("third", 7):
            busy = _initialize(url, rid)
            body = busy.json()
            assert busy.status_code == 503 and body["id"] == rid, body
            assert "max_sessions" in body["error"]["message"] and "2" in body["error"]["message"], body


def test_past_its_session_limit_world_serve_refuses_initialize_under_its_id_naming_the_limit():
    from toolshift.world import load_domain
    from toolshift.world.mcp.serve import WorldServer, loopback_http_thread

    server = WorldServer(load_domain("clinic"), max_sessions=1)
    with loopback_http_thread(
        server, name="world", host="127.0.0.1", port=None, token=None, timeout=60
    ) as url:
        assert _initialize(url, 1).status_code == 200
        busy = _initialize(url, "over")
        assert busy.status_code == 503 and busy.json()["id"] == "over"
        assert "--max-sessions 1" in busy.json()["error"]["message"]


def _library_with_one_skill(path: Path) -> Path:
    from toolshift.steward.library import Library, Skill

    body = {
        "facts": ["order"],
        "steps": [{"tool": "po_get", "args": {"id": {"fact": "order"}}, "each": False}],
    }
    lib = Library.create(path)
    with lib.transaction():
        lib.edit(
            "add", Skill("plan-po-get-0a1b2c3d", "planning", "po", "Get an order", body, ("po_get",)), 1, {}
        )
    lib.close()
    return path


def test_a_key_file_that_never_ends_or_is_no_file_is_one_line(tmp_path):
    library = _library_with_one_skill(tmp_path / "lib.sqlite")
    big = tmp_path / "big.key"
    big.write_bytes(b"k" * 5000)
    for key, why in (
        ("/dev/zero", "a device"),
        (str(tmp_path), "a folder"),
        (str(big), "at most 4,096 bytes"),
    ):
        done = toolshift(
            "steward", "show", library, env={"TOOLSHIFT_STEWARD_KEY": key}, process=True, timeout=60
        )
        refused(done, key, "TOOLSHIFT_STEWARD_KEY", why)


def test_a_library_row_rewritten_outside_steward_is_named_by_field(tmp_path):
    """A skill body that is a JSON list, with the unkeyed checksum recomputed: `steward export` named nothing
    and printed an AttributeError traceback."""
    import hashlib
    import sqlite3

    library = _library_with_one_skill(tmp_path / "lib.sqlite")
    conn = sqlite3.connect(library)
    conn.execute("UPDATE skills SET body = '[1, 2]'")
    h = hashlib.sha256()
    for table, order in (("skills", "id"), ("edits", "seq"), ("work", "catalog_version")):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            h.update(
                json.dumps([table, *row], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
            )
            h.update(b"\n")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'checksum'", (h.hexdigest(),))
    conn.commit()
    conn.close()
    done = toolshift("steward", "export", library, "--out", tmp_path / "skills")
    refused(done, str(library), "record 'plan-po-get-0a1b2c3d'", "field 'body'", "a JSON object is expected")


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        (
            "catalog_version: '1'",
            "catalog_version: " + "9" * 5000,
            ("front matter", "an integer of 5,000 digits"),
        ),
        ('"each": false', '"each": false, "n": ' + "9" * 5000, ("field 'body'", "cannot be read")),
        ('"tool": "po_get"', '"tool": "po_delete_everything"', ("body.steps.0.tool", "does not list")),
        ("tools: po_get", "tools: po_get,po get", ("metadata.tools", "is not a tool name")),
    ],
)
def test_steward_import_refuses_huge_integers_and_unlisted_or_malformed_tool_names(
    tmp_path, old, new, needles
):
    library = _library_with_one_skill(tmp_path / "lib.sqlite")
    skills = tmp_path / "skills"
    assert toolshift("steward", "export", library, "--out", skills).returncode == 0
    skill_md = skills / "plan-po-get-0a1b2c3d" / "SKILL.md"
    text = skill_md.read_text()
    assert old in text
    skill_md.write_text(text.replace(old, new, 1))
    refused(toolshift("steward", "import", skills, "--out", tmp_path / "in.sqlite"), str(skill_md), *needles)


def _redigest(build: Path) -> None:
    """What anyone who can write a build does after editing its tasks: recompute the unkeyed digests."""
    import hashlib

    d = build / "domains" / "accounts_payable"
    digest = hashlib.sha256((d / "tasks.jsonl").read_bytes()).hexdigest()[:16]
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["domains"][0]["tasks_digest"] = digest
    (build / "manifest.json").write_text(json.dumps(manifest))
    report = json.loads((d / "report.json").read_text())
    report["tasks_digest"] = digest
    (d / "report.json").write_text(json.dumps(report))


@pytest.mark.parametrize(
    ("edit", "field", "why"),
    [
        (lambda step: step.update(tool="ap_no_such_tool"), "gold_path[0].tool", "no tool 'ap_no_such_tool'"),
        (
            lambda step: step["arguments"].update(not_a_param=None),
            "gold_path[0].arguments",
            "takes no argument",
        ),
    ],
)
def test_a_gold_path_step_naming_an_unknown_tool_or_argument_is_named(
    tmp_path, small_evolved_build, edit, field, why
):
    build = Path(shutil.copytree(small_evolved_build, tmp_path / "b"))
    tasks = build / "domains" / "accounts_payable" / "tasks.jsonl"
    lines = tasks.read_text().splitlines()
    task = json.loads(lines[0])
    edit(task["gold_path"][0])
    lines[0] = json.dumps(task)
    tasks.write_text("\n".join(lines) + "\n")
    _redigest(build)
    refused(toolshift("bench", "stats", build), str(tasks), f"record {task['id']}", f"field '{field}'", why)
    verified = toolshift("bench", "verify", build)
    assert verified.returncode == 1 and f"{task['id']}: {field}: " in verified.stdout, verified.stdout[-2000:]


def test_an_unknown_codec_in_an_ecosystem_is_named_by_gateway_check(tmp_path, small_evolved_build):
    build = Path(shutil.copytree(small_evolved_build, tmp_path / "b"))
    history = build / "ecosystem" / "domains" / "accounts_payable.json"
    doc = json.loads(history.read_text())
    formats = [
        r
        for v in doc["versions"]
        for r in v["records"]
        if r["kind"] == "format" and r["status"] == "accepted"
    ]
    assert formats, "the small build (seed 1) samples a format change"
    formats[0]["options"]["codec"] = "rot13"
    history.write_text(json.dumps(doc))
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"format: toolshift.gateway/1\nbackends:\n  - name: ap\n    build: {build}\n    domain: accounts_payable\n"
        "    version: 2\n"
    )
    refused(
        toolshift("gateway", "check", "--config", config),
        str(history),
        "options.codec",
        "'rot13' is not one of",
    )


def test_the_viewer_closes_idle_sockets_and_says_nothing_when_a_client_drops_a_request(tmp_path, capfd):
    """Issue 56: the viewer held a thread per idle socket with no timeout, and printed a BrokenPipeError /
    ConnectionResetError traceback whenever a browser dropped a request (a closed tab, a cancelled fetch)."""
    import socket
    import struct
    import time

    from toolshift.report.inputs import discover
    from toolshift.report.view.server import Viewer, serving

    episodes = ROOT / "docs" / "results" / "episodes" / "steward.embedded.domain-tools.episodes.jsonl.gz"
    with serving(Viewer(discover([episodes])), timeout=1.0) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        idle = socket.create_connection(("127.0.0.1", port))
        idle.settimeout(20)
        started = time.monotonic()
        assert idle.recv(1) == b""  # closed by the server, not by this read's own timeout
        assert time.monotonic() - started < 15
        idle.close()
        for _ in range(4):
            drop = socket.create_connection(("127.0.0.1", port))
            drop.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            drop.sendall(f"GET /api/episodes?limit=500 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            drop.recv(10)
            drop.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )  # reset, as a tab does
            drop.close()
        assert httpx.get(f"{url}api/runs", timeout=30).status_code == 200  # still serving
    assert "Traceback" not in capfd.readouterr().err


def test_json_a_command_prints_is_strict_never_nan_and_says_how_many_were_not_numbers(capsys):
    """`agents results --json` and a run's results.json printed `NaN` for one-trial runs (issue 56; the figures
    are null since D321): whatever a command prints as JSON is strict JSON, the non-numbers counted."""
    from toolshift.terminal import print_json

    print_json({"pass^2": float("nan"), "intervals": [{"mean": 1.0}, {"low": float("-inf")}]})
    out, err = capsys.readouterr()
    assert json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in printed JSON")) == {
        "pass^2": None,
        "intervals": [{"mean": 1.0}, {"low": None}],
    }
    assert "2 value(s) that were not numbers" in err
