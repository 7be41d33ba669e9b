"""toolshift's tasks as a verifiers environment, evaluated by verifiers' own `vf-eval` (its own environment).

verifiers 0.4 cannot share toolshift's environment (D421): `make verifiers-venv` installs it and the
`toolshift-verifiers` package (integrations/verifiers) into `.venv-verifiers`, and the tests skip where that is
absent. `toolshift frameworks serve` runs the episodes; vf-eval loads the environment by its taskset id, as it
loads any, and its assistant is verifiers' own `null` harness (the chat program with the episode's MCP door as
its tool server). Driven by the oracle served at `/oracle/v1` (the measuring instrument), every task must be
solved, with the episode toolshift records equal, call for call, to `toolshift run`'s / `bench baseline`'s; with
the embedded model (`toolshift model serve`), every rollout must carry toolshift's verdict as its reward, its
assistant held to the episode's `--max-turns` model calls.
Δτ-Bench runs in the domain-tools setting: verifiers' chat program lists the MCP tools once per segment, so a
tool the standard setting's `search_tools` exposes would be offered only from the next user message.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from .conftest import BIN, free_port

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-verifiers"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def vf_eval() -> Path:
    found = VENV / "bin" / "vf-eval"
    if not found.exists():
        pytest.skip("verifiers is not installed in .venv-verifiers (`make verifiers-venv`)")
    return found


def serve(args: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(BIN / "toolshift"), "frameworks", "serve", *args, "--oracle", "--port", str(port)],
            stdout=out, stderr=out,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(3000):
        if proc.poll() is not None:
            pytest.fail(log.read_text())
        try:
            httpx.get(f"{url}/instances", timeout=5)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    pytest.fail("toolshift frameworks serve did not answer")


def run_vf_eval(
    cli: Path, service: str, model_url: str, model: str, out: Path, n: int, *, ok: bool = True
) -> list[dict]:
    """`vf-eval toolshift-verifiers` (verifiers' own evaluation entry) on n tasks; the assistant's traces it wrote.
    `ok`: every rollout must have run without error (the oracle's must; a small model's may break the harness's
    program, which is the agent's failure, and toolshift's verdict is on its trace all the same)."""
    cmd = [
        str(cli), "toolshift-verifiers", "--env.taskset.service", service, "--model", model,
        "--client.base-url", model_url, "--client.api-key-var", "TOOLSHIFT_KEY", "--select.limit", str(n),
        "--max-concurrent", "1", "--output-dir", str(out), "--push", "false", "--rich", "None",
    ]  # fmt: skip
    env = {**os.environ, "TOOLSHIFT_KEY": "toolshift-local"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    episodes = [
        json.loads(line) for f in out.rglob("traces.jsonl") for line in f.read_text().splitlines() if line
    ]
    assert len(episodes) == n and (all(e["ok"] for e in episodes) or not ok), done.stdout[-3000:]
    return [t for e in episodes for t in e["traces"] if t["agent"]["name"] == "assistant"]


def _rewards(trace: dict) -> tuple[float | None, dict]:
    reward = (trace.get("rewards") or {}).get("strict_success")
    return (reward or {}).get("score") if isinstance(reward, dict) else reward, trace.get("metrics") or {}


def test_oracle_through_vf_eval_is_toolshift_runs_episode(vf_eval, small_build, tmp_path):
    from toolshift.traces.store import iter_episodes

    from .conftest import toolshift
    from .test_inspect import calls, verdict

    recorded = tmp_path / "served.episodes.jsonl"
    proc, url = serve(
        [
            "--build",
            str(small_build),
            "--version",
            "2",
            "--setting",
            "domain-tools",
            "--sample",
            "3",
            "--out",
            str(recorded),
        ],
        tmp_path / "serve.log",
    )
    try:
        traces = run_vf_eval(vf_eval, url, f"{url}/oracle/v1", "oracle", tmp_path / "vf", 3)
    finally:
        proc.terminate()
        proc.wait(30)
    for trace in traces:
        reward, metrics = _rewards(trace)
        assert reward == 1.0 and metrics["success"] == 1.0 and metrics["judged"] == 1.0, trace.get("metrics")
    mine = {e.task_id: e for e in iter_episodes(recorded)}
    assert len(mine) == 3
    toolshift(
        "bench",
        "baseline",
        str(small_build),
        "--agent",
        "oracle",
        "--sample",
        "3",
        "--setting",
        "domain-tools",
        "--out",
        str(tmp_path / "runs"),
    )
    theirs = {
        e.task_id: e
        for e in iter_episodes(tmp_path / "runs" / "oracle.domain-tools.episodes.jsonl")
        if e.ecosystem_version
        and e.ecosystem_version.endswith("/v2")
        and e.source["criterion"] in ("both", "step")
    }
    for task_id, ep in mine.items():
        assert calls(ep) == calls(theirs[task_id])
        assert ep.world_diff == theirs[task_id].world_diff and verdict(ep) == verdict(theirs[task_id])


@pytest.mark.shared
def test_tau2_airline_and_the_embedded_model_through_vf_eval(vf_eval, embedded_url, shared_data, tmp_path):
    proc, url = serve(["--tau2", "airline", "--limit", "3", "--max-turns", "6"], tmp_path / "serve.log")
    try:
        oracle = run_vf_eval(vf_eval, url, f"{url}/oracle/v1", "oracle", tmp_path / "oracle", 3)
        embedded = run_vf_eval(
            vf_eval, url, f"{embedded_url}/v1", "embedded", tmp_path / "embedded", 3, ok=False
        )
    finally:
        proc.terminate()
        proc.wait(30)
    for trace in oracle:
        reward, metrics = _rewards(trace)
        assert reward == 1.0 and metrics["reward"] == 1.0, trace.get("metrics")
    for trace in embedded:
        reward, metrics = _rewards(trace)
        assert metrics.get("judged") == 1.0 and reward in (0.0, 1.0), trace.get("metrics")
        # held to the episode's 6 model calls: a model that keeps calling tools is stopped there (`turn_limit`)
        sampled = sum(1 for node in trace["nodes"] if node.get("sampled"))
        assert sampled <= 6, (sampled, trace["stop_condition"])
