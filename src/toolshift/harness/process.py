"""Harness CLIs as agents: one process per user message, run as its users run it, from a spec file.

`--model harness:codex@embedded` runs the shipped Codex CLI spec with the embedded model: for each episode a
private home and working directory, the harness's configuration written there (the episode's MCP server, the
model toolshift serves on the harness's wire API, the agent's instructions), then per user message one
non-interactive run — the spec's `start` for the first message, `resume` with the session id for the next —
whose reply is read where the spec says. The harness's own MCP client talks to the episode's MCP door; the
door keeps one world across its reconnections, and the episode's end closes it. Each turn's process group is
killed when the turn ends or times out, so nothing a harness started outlives its episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.config import RunConfig, outside_parts
from toolshift.agents.outside import AgentTurn, EpisodeContext
from toolshift.harness.served import ServedModel, served_model
from toolshift.harness.spec import HarnessSpec, find_executable, load_spec, read_value, render
from toolshift.models import Task

OUTPUT_LIMIT = 8 << 20
"""Bytes of a turn's stdout and stderr kept (a runaway harness cannot fill the memory)."""


class HarnessTurnError(Exception):
    """A harness turn failed (non-zero exit, no reply, timeout): the episode ends as the agent's error."""


class ProcessHarness:
    """A harness CLI for one episode (see the module's docstring)."""

    def __init__(self, spec: str, config: RunConfig, *, seed: int, task: Task | None = None) -> None:
        _, what, model = outside_parts(spec)
        self.spec: HarnessSpec = load_spec(what)
        self.program = find_executable(self.spec)
        if self.program is None:
            hint = (
                f" (npm: {self.spec.package.name}@{self.spec.package.version})" if self.spec.package else ""
            )
            raise ModelConfigError(
                f"harness {self.spec.name!r}: its program {self.spec.executable!r} is not installed{hint}; "
                "`make harnesses` installs the shipped ones into .cache/npm, or set TOOLSHIFT_HARNESS_PATH"
            )
        self.config, self.seed, self.model, self.task = config, seed, model, task
        self.name = spec
        self.model_name = model
        version = f"@{self.spec.package.version}" if self.spec.package else ""
        self.harness = f"{self.spec.name}{version}"
        self.values: dict[str, str] = {}
        self.native_skills = self.spec.skills_dir is not None
        self.skills: list[Any] = []
        """The episode's Agent Skills (set by `run_episode` when it has a library), for the harness's own folder."""
        self.session: str | None = None
        self.turns = 0
        self._served: ServedModel | None = None
        self._block: Any = None

    async def start(self, episode: EpisodeContext) -> None:
        home, work = episode.workdir / "home", episode.workdir / "work"
        home.mkdir()
        work.mkdir()
        self._block = served_model(
            self.model, self.config, seed=self.seed, budget=episode.max_turns, task=self.task
        )
        self._served = await self._block.__aenter__()
        endpoint = self._served.endpoint
        instructions = str(episode.extra.get("instructions") or episode.policy)
        self.values = {
            "mcp_url": episode.mcp_url,
            "model_url": endpoint.base_url,
            "model_openai_url": endpoint.openai_base_url,
            "model_name": endpoint.model,
            "api_key": endpoint.api_key,
            "home": str(home),
            "work": str(work),
            "instructions": instructions,
            "instructions_json": json.dumps(instructions, ensure_ascii=False),
            "reply_file": str(episode.workdir / "reply.txt"),
            "session": str(uuid.uuid4()),
            "message": "",
        }
        for name, text in self.spec.files.items():
            path = Path(render(name, self.values))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(text, self.values), encoding="utf-8")
        if self.skills and self.spec.skills_dir is not None:
            from toolshift.agents.skills import materialise

            materialise(self.skills, Path(render(self.spec.skills_dir, self.values)))

    def _environment(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SSL_CERT_FILE", "NODE_OPTIONS", "TERM")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.setdefault("PATH", os.defpath)
        env["HOME"] = self.values["home"]
        env["NO_COLOR"] = "1"
        env.update({k: render(v, self.values) for k, v in self.spec.env.items()})
        return env

    async def turn(self, message: str) -> AgentTurn:
        values = {**self.values, "message": message}
        if self.turns and self.session:
            values["session"] = self.session
        argv = [render(a, values) for a in (self.spec.resume if self.turns else self.spec.start)]
        reply_file = Path(values["reply_file"])
        reply_file.unlink(missing_ok=True)
        self.turns += 1
        clock = time.perf_counter()
        code, stdout, stderr = await self._run([self.program or self.spec.executable, *argv], values)
        seconds = time.perf_counter() - clock
        if self.turns == 1 and self.spec.session.source != "made":
            self.session = read_value(self.spec.session, stdout, values)
        elif self.spec.session.source == "made":
            self.session = values["session"]
        reply = read_value(self.spec.reply, stdout, values)
        info: dict[str, Any] = {"exit": code, "seconds": round(seconds, 3), "session": self.session}
        if code != 0 or reply is None:
            tail = (stderr or stdout).strip()[-600:]
            if self._served is not None and self._served.host.exhausted:  # stopped by the turn limit
                turn = self._served.turn_report(AgentTurn(text=reply or "", info=info))
                return turn
            raise HarnessTurnError(
                f"{self.spec.name} turn {self.turns} exited {code}"
                + (" without a reply" if reply is None else "")
                + (f": {tail}" if tail else "")
            )
        if self.session is None:
            raise HarnessTurnError(
                f"{self.spec.name}: no session id where the spec reads it ({self.spec.session.source})"
            )
        turn = AgentTurn(text=reply, info=info)
        return self._served.turn_report(turn) if self._served is not None else turn

    async def _run(self, argv: list[str], values: dict[str, str]) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=values["work"], env=self._environment(), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(
                asyncio.gather(_bounded(process.stdout), _bounded(process.stderr)), self.spec.turn_timeout
            )
            code = await process.wait()
        except TimeoutError:
            raise HarnessTurnError(
                f"{self.spec.name} turn {self.turns} took over {self.spec.turn_timeout:g} s"
            ) from None
        finally:
            _kill_group(process)
        return code, out, err

    async def close(self) -> None:
        if self._block is not None:
            block, self._block = self._block, None
            await block.__aexit__(None, None, None)


async def _bounded(stream: asyncio.StreamReader | None) -> str:
    if stream is None:
        return ""
    chunks: list[bytes] = []
    kept = 0
    while chunk := await stream.read(65536):
        if kept < OUTPUT_LIMIT:
            chunks.append(chunk[: OUTPUT_LIMIT - kept])
            kept += len(chunks[-1])
    return b"".join(chunks).decode("utf-8", errors="replace")


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the turn's whole process group (a harness's helpers, its MCP children), whether or not it ended."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def make(spec: str, config: RunConfig, *, seed: int, task: Task | None = None) -> ProcessHarness:
    """The `harness` agent kind (`toolshift.agent_kinds` entry point)."""
    return ProcessHarness(spec, config, seed=seed, task=task)
