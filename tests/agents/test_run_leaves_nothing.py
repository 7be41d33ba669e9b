"""A run whose model cannot be used (no API key, a key the endpoint refuses) fails with one error and leaves no
run folder behind: no configuration, no empty episode file."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from toolshift.agents.chat import ModelConfigError
from toolshift.cli import app
from toolshift.world.mcp.serve import free_port

KEY_VARS = ("OPENAI_API_KEY", "TOOLSHIFT_API_KEY", "TOOLSHIFT_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL")  # fmt: skip


@pytest.fixture
def refusing_endpoint() -> Iterator[str]:
    """A chat-completions endpoint that refuses every key with 401, as OpenAI does for a bad one."""

    async def completions(request: Request) -> JSONResponse:
        error = {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
        return JSONResponse({"error": error}, status_code=401)

    port = free_port()
    app_ = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app_, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(5)


@pytest.mark.parametrize("model", ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"])
def test_no_api_key_leaves_no_run_folder(model, tasks_file: Path, tmp_path: Path, monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", model, "--out", str(out)]
    )
    if isinstance(result.exception, ModelConfigError) and "extra" in str(result.exception):
        pytest.skip(str(result.exception))  # the anthropic SDK is an optional extra
    assert isinstance(result.exception, ModelConfigError), result.output
    assert "API_KEY" in str(result.exception) and not out.exists()


def test_a_refused_api_key_leaves_no_run_folder(
    refusing_endpoint, tasks_file: Path, tmp_path: Path, monkeypatch
):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "openai:gpt-4o-mini",
         "--base-url", refusing_endpoint, "--out", str(out), "--no-check"],
    )  # fmt: skip
    assert isinstance(result.exception, ModelConfigError), result.output
    assert "refused the API key" in str(result.exception) and not out.exists()


def test_a_refused_key_on_resume_keeps_the_episodes_already_run(
    refusing_endpoint, tasks_file: Path, tmp_path: Path, monkeypatch
):
    """A run folder made before (by another run) is never removed: only what this run created."""
    out = tmp_path / "run"
    done = CliRunner().invoke(
        app, ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "oracle", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    before = sorted(p.name for p in out.iterdir())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    result = CliRunner().invoke(
        app,
        ["run", "--world", "clinic", "--tasks", str(tasks_file), "--model", "openai:gpt-4o-mini",
         "--base-url", refusing_endpoint, "--out", str(out), "--no-check"],
    )  # fmt: skip
    assert isinstance(result.exception, ModelConfigError)
    assert sorted(p.name for p in out.iterdir()) == before
