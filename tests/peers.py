"""Peer harnesses the tests run against, and the one place that knows where τ²-bench's Python is.

τ²-bench (the read-only snapshot in ../shared/peers/tau2-bench) needs Python ≥ 3.12, which toolshift
does not. It is installed, non-editable (pip builds it from the snapshot without writing into it),
into its own virtual environment `.venv-tau2/` at the repository root (git-ignored), once: by
`make test` (which runs `python tests/peers.py tau2` first) or by the first test that asks for it.
The environment is rebuilt only when the snapshot or the interpreter changes (a digest of both is
kept in `.venv-tau2/.installed`); concurrent builders wait on a lock. Tests get it through the
`tau2_python` fixture (tests/conftest.py), which skips with the reason where it cannot exist.

    python tests/peers.py tau2     # build or check the environment; prints the install time
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOOLSHIFT_SHARED", REPO.parent / "shared"))
TAU2_PEER = SHARED / "peers" / "tau2-bench"
TAU2_VENV = Path(os.environ.get("TOOLSHIFT_TAU2_VENV", REPO / ".venv-tau2"))
PYTHON312_CANDIDATES = (
    os.environ.get("TOOLSHIFT_PYTHON312", ""),
    "/root/.pyenv/versions/3.12.1/bin/python3.12",
    shutil.which("python3.12") or "",
    shutil.which("python3.13") or "",
)


def python312() -> Path | None:
    """A Python 3.12 or 3.13 interpreter (τ²-bench's `requires-python`), or None."""
    for candidate in PYTHON312_CANDIDATES:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def tau2_unavailable() -> str | None:
    """Why τ²-bench cannot be installed here, or None when it can."""
    if not (TAU2_PEER / "pyproject.toml").is_file():
        return f"τ²-bench snapshot not found at {TAU2_PEER} (set TOOLSHIFT_SHARED to the shared/ folder)"
    if python312() is None:
        return "no Python 3.12 here (τ²-bench needs >= 3.12; set TOOLSHIFT_PYTHON312 to one)"
    return None


def _digest(python: Path) -> str:
    """What the environment was built from: the interpreter and every file of the snapshot's package."""
    h = hashlib.sha256(str(python.resolve()).encode())
    files = [TAU2_PEER / "pyproject.toml", *sorted((TAU2_PEER / "src").rglob("*"))]
    for path in files:
        if path.is_file():
            h.update(str(path.relative_to(TAU2_PEER)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def tau2_venv_python() -> Path:
    return TAU2_VENV / "bin" / "python"


def ensure_tau2_venv(log=print) -> Path:
    """The τ²-bench environment's python, built first if missing or stale. Raises RuntimeError on failure."""
    reason = tau2_unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    python = python312()
    assert python is not None
    digest = _digest(python)
    stamp = TAU2_VENV / ".installed"
    TAU2_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(TAU2_VENV.parent / f"{TAU2_VENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and json.loads(stamp.read_text()).get("digest") == digest:
            return tau2_venv_python()
        shutil.rmtree(TAU2_VENV, ignore_errors=True)
        started = time.monotonic()
        log(f"installing τ²-bench from {TAU2_PEER} into {TAU2_VENV} (Python {python}) ...")
        steps = [
            [str(python), "-m", "venv", str(TAU2_VENV)],
            [str(tau2_venv_python()), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
            [str(tau2_venv_python()), "-m", "pip", "install", "--quiet", str(TAU2_PEER)],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
                raise RuntimeError(f"{' '.join(step)} failed:\n{tail}")
        seconds = round(time.monotonic() - started, 1)
        stamp.write_text(json.dumps({"digest": digest, "python": str(python), "install_seconds": seconds}))
        log(f"τ²-bench installed in {seconds} s")
    return tau2_venv_python()


def tau2_env() -> dict[str, str]:
    """Environment for τ²-bench processes: its data folder, quiet logs, and no network at import.

    litellm fetches a model price list from GitHub when imported unless told to use its bundled copy.
    """
    return {
        **os.environ,
        "TAU2_DATA_DIR": str(TAU2_PEER / "data"),
        "LOGURU_LEVEL": "ERROR",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run_tau2(
    python: Path, script: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run a script under τ²-bench's python, from a folder outside the repository (nothing of ours on its path)."""
    return subprocess.run(
        [str(python), str(script), *args],
        capture_output=True,
        text=True,
        env=tau2_env(),
        cwd=str(TAU2_VENV),
        timeout=timeout,
        check=False,
    )


LLAMA_STARTUP_SECONDS = 180.0
"""How long llama_cpp.server may take to load before a fixture gives up (a hang guard, not a speed check)."""


@contextlib.contextmanager
def llama_server(log_dir: Path, *args: str) -> Iterator[str]:
    """`python -m llama_cpp.server` on the embedded GGUF on a free loopback port; yields its /v1 URL.

    `args` are the server's own options beyond model, host and port (alias, chat format, context).
    """
    import httpx
    import pytest

    from toolshift.agents.embedded import gguf_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = log_dir / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), *args,
             "--host", "127.0.0.1", "--port", str(port), "--verbose", "False"],
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + LLAMA_STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama_cpp.server did not answer in {LLAMA_STARTUP_SECONDS:g} s:\n{log.read_text()[-3000:]}"
                )
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def main(argv: list[str]) -> int:
    if argv != ["tau2"]:
        print("usage: python tests/peers.py tau2", file=sys.stderr)
        return 2
    reason = tau2_unavailable()
    if reason is not None:
        print(f"τ²-bench environment skipped: {reason}")
        return 0
    try:
        python = ensure_tau2_venv()
    except RuntimeError as exc:
        print(f"τ²-bench environment: {exc}", file=sys.stderr)
        return 1
    print(f"τ²-bench environment ready: {python}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
