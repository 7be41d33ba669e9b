"""The loop with an OpenAI-compatible endpoint: llama-cpp-python's own server on the embedded GGUF.

Kept tiny (one task, one version, two turns, short replies): it checks that an `openai:` model is served
through the loop's gateway and its calls and tokens are counted, not whether a 135M model solves a task.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from peers import llama_server as start_llama_server
from toolshift.bench.build import build_domain, write_manifest
from toolshift.bench.ecosystem.evolve import EvolveConfig
from toolshift.bench.ecosystem.paths import compute_references
from toolshift.bench.ecosystem.pipeline import evolve_build
from toolshift.cli import app
from toolshift.traces.store import iter_episodes

pytestmark = pytest.mark.slow

ALIAS = "smollm2"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with start_llama_server(
        tmp_path_factory.mktemp("llama-server"), "--model_alias", ALIAS,
        "--chat_format", "chatml-function-calling", "--n_ctx", "8192",
    ) as url:  # fmt: skip
        yield url


def test_an_openai_endpoint_serves_the_loop(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    build = tmp_path / "build"
    build_domain(build, "payroll", seed=0, per_domain=10)
    write_manifest(build, ["payroll"], 0, 10)
    evolve_build(build, EvolveConfig(versions=2, seed=1))
    compute_references(build)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("TOOLSHIFT_BASE_URL", llama_server)
    out = tmp_path / "loop"
    args = ["loop", str(build), "--model", f"openai:{ALIAS}", "--out", str(out), "--versions", "1",
            "--conditions", "off", "--sample", "1", "--max-turns", "2", "--max-tokens", "48", "--resamples", "20"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (episode,) = list(iter_episodes(out / "off" / "v1" / "episodes.jsonl"))
    assert episode.agent == f"openai:{ALIAS}"
    assert episode.termination_reason != "agent_error", episode.outcome
    figures = json.loads((out / "results.json").read_text())["conditions"]["off"]["v1"]
    assert figures["model calls"] >= 1 and figures["tokens"] > 0
