"""`toolshift world serve` under abuse: memory with N abandoned HTTP sessions (and after they expire), and how
many malformed JSON-RPC requests get a reply under their own id, over stdio and HTTP.

`--before` measures a server without the limit flags (an older checkout put first on PYTHONPATH): no
expiry step, and the figures go to stdout only.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx

from toolshift.report.benchlog import record
from toolshift.world.mcp.serve import free_port

ABANDONED = 600
IDLE_TIMEOUT = 60
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MALFORMED: list[tuple[bytes, int | None]] = [
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', 1),
    (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}', 2),
    (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}', 3),
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_\\ud800","arguments":{}}}', 4),
    (
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_patients","arguments":{"full_name":"\\udc00"}}}',
        5,
    ),
    (
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_patient","arguments":{"patient_id":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}}",
        6,
    ),
    (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_patient","arguments":{"patient_id":'
        + b"[" * 900
        + b"]" * 900
        + b"}}}",
        7,
    ),
    (b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_patient\xff","arguments":{}}}', 8),
    (b'{"jsonrpc":"2.0","id":9,"method":"ping",', 9),
    (b'{"jsonrpc":"2.0","id":10}', 10),
    (b'{"jsonrpc":"2.0","id":11,"method":5}', 11),
    (b'{"jsonrpc":"1.0","id":12,"method":"ping"}', 12),
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def serve(transport: str, *flags: str, port: int | None = None, **kw) -> subprocess.Popen:
    argv = [sys.executable, "-m", "toolshift", "world", "serve", "clinic", "--transport", transport, *flags]
    return subprocess.Popen(argv + (["--port", str(port)] if port else []), **kw)


def wait_http(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not start") from None
            time.sleep(0.2)


def open_session(http: httpx.Client, url: str) -> dict[str, str] | None:
    """A new session's headers, or None when the server refuses one (its session cap)."""
    r = http.post(url, json=INIT, headers=HEADERS)
    if r.status_code == 503:
        return None
    headers = {**HEADERS, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    http.post(url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
    return headers


def abandoned_sessions(before: bool) -> dict[str, float]:
    port = free_port()
    flags = () if before else ("--idle-timeout", str(IDLE_TIMEOUT))
    proc = serve("http", *flags, port=port, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    out: dict[str, float] = {}
    try:
        wait_http(url, proc)
        with httpx.Client(timeout=60) as http:
            warm = open_session(http, url)
            assert warm is not None
            http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=warm)
            out["start"] = rss_mb(proc.pid)
            t0 = time.monotonic()
            refused = 0
            for i in range(ABANDONED):
                headers = open_session(http, url)
                if headers is None:
                    refused += 1
                    continue
                call = {"name": "update_patient", "arguments": {"patient_id": "PAT-00001", "phone": str(i)}}
                http.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
                    headers=headers,
                )
            out["open_s"] = time.monotonic() - t0
            out["abandoned"] = rss_mb(proc.pid)
            out["refused"] = refused
            if not before:
                time.sleep(IDLE_TIMEOUT + 1)
                open_session(http, url)  # any request reaps what is due
                time.sleep(IDLE_TIMEOUT / 4 + 2)  # one tick of the reaper, which hands freed memory back
                out["expired"] = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def malformed_http() -> int:
    port = free_port()
    proc = serve("http", port=port, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    answered = 0
    try:
        wait_http(url, proc)
        with httpx.Client(timeout=30) as http:
            headers = open_session(http, url)
            for body, rid in MALFORMED:
                try:
                    payload = http.post(url, content=body, headers=headers).json()
                except (ValueError, httpx.TransportError):
                    continue
                replies = payload if isinstance(payload, list) else [payload]
                answered += any(isinstance(r, dict) and r.get("id") == rid for r in replies)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return answered


def malformed_stdio(wait: float = 5.0) -> int:
    proc = serve("stdio", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""

    def send(line: bytes) -> None:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def replies_until(deadline: float) -> list[dict]:
        nonlocal buffer
        got = []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                got.append(json.loads(line))
            if got:
                break
        return got

    try:
        send(json.dumps(INIT).encode())
        replies_until(time.monotonic() + 120)
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        answered = 0
        for body, rid in MALFORMED:
            send(body)
            got = replies_until(time.monotonic() + wait)
            answered += any(r.get("id") == rid for r in got)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", action="store_true", help="the server has no --idle-timeout flag")
    args = parser.parse_args()
    sessions = abandoned_sessions(args.before)
    http_ok, stdio_ok = malformed_http(), malformed_stdio()
    rows = [
        ("server RSS before the sessions, MB", f"{sessions['start']:.0f}", ""),
        (f"server RSS with {ABANDONED} abandoned sessions, MB", f"{sessions['abandoned']:.0f}", ""),
        (f"time to open {ABANDONED} sessions with one write each, s", f"{sessions['open_s']:.1f}", ""),
        ("of them refused (the default --max-sessions 256)", str(sessions["refused"]), ""),
    ]
    if "expired" in sessions:
        rows.append(
            (
                f"server RSS after they expired (--idle-timeout {IDLE_TIMEOUT}), MB",
                f"{sessions['expired']:.0f}",
                "",
            )
        )
    rows += [
        (
            f"malformed requests answered under their id, HTTP (of {len(MALFORMED)})",
            str(http_ok),
            str(len(MALFORMED)),
        ),
        (
            f"malformed requests answered under their id, stdio (of {len(MALFORMED)})",
            str(stdio_ok),
            str(len(MALFORMED)),
        ),
    ]
    note = (
        f"`toolshift world serve clinic` in its own process; each session: initialize, initialized, one "
        f"update_patient call, never closed (raw HTTP, httpx). RSS from /proc. Malformed set: a batch, params "
        f"a list / a string, lone surrogates in a name and an argument, nesting 100,000 and 900 deep, invalid "
        f"UTF-8, broken JSON, no method, a numeric method, jsonrpc 1.0; stdio waits {5.0:g} s for each reply."
    )
    if args.before:
        os.environ["TOOLSHIFT_BENCH_LOG"] = "-"
        note = "BEFORE (older server, no limit flags). " + note
    print(record("world serve: abandoned sessions and malformed requests (clinic)", rows, note=note))


if __name__ == "__main__":
    main()
