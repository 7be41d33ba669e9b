"""Fixtures for the framework integrations: the real `inspect` CLI, a small Δτ-Bench build, the embedded model served."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def inspect_cli() -> Path:
    """inspect_ai's own command (the `inspect` extra; `make extras` installs it)."""
    pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (extra `inspect`; `make extras`)")
    return BIN / "inspect"


@pytest.fixture(scope="session")
def small_build(evolved_build, tmp_path_factory) -> Path:
    return evolved_build(tmp_path_factory.mktemp("frameworks-build") / "b", ["accounts_payable"], 12, 2)


@pytest.fixture(scope="session")
def embedded_url(tmp_path_factory):
    """`toolshift model serve --model embedded` on a free loopback port, for the length of the session."""
    port = free_port()
    log = tmp_path_factory.mktemp("model-serve") / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(BIN / "toolshift"), "model", "serve", "--model", "embedded", "--port", str(port)],
            stdout=out,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                pytest.fail(f"toolshift model serve ended: {log.read_text()}")
            try:
                httpx.get(f"{url}/v1/models", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def inspect_eval(
    cli: Path,
    task: str,
    args: list[str],
    log_dir: Path,
    *,
    model: str = "mockllm/model",
    env: dict | None = None,
) -> Path:
    """Run `inspect eval TASK ARGS --log-dir LOG_DIR` (the real CLI) and return the log it wrote."""
    cmd = [
        str(cli),
        "eval",
        task,
        *args,
        "--model",
        model,
        "--log-dir",
        str(log_dir),
        "--display",
        "plain",
        "--log-format",
        "json",
    ]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=1500
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    logs = sorted(log_dir.glob("*.json"))
    assert len(logs) == 1, (logs, done.stdout[-2000:])
    status = json.loads(logs[0].read_text())["status"]
    assert status == "success", done.stdout[-3000:]
    return logs[0]


def toolshift(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "toolshift"), *args], capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done
