"""Harness specs (`toolshift.harness/1`): how to run a harness CLI for one episode, as data.

A spec says how the harness starts on the user's first message and resumes its session with the next one
(argument lists, never a shell line), where its session id and its final reply are read, what files and
environment it is given (its configuration, pointing it at the episode's MCP server and at the model toolshift
serves), and which wire API it speaks. Values enter through `${name}` placeholders only, from a fixed set;
loading a spec runs nothing, and a spec naming an unknown placeholder is refused when it is read. Shipped
specs live in `toolshift/harness/specs/`; `harness:<path.yaml>` runs any other (a new harness is a new file).
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolshift.errors import BadInputError

HARNESS_FORMAT = "toolshift.harness/1"
PLACEHOLDERS = {
    "message": "the user's message for this turn",
    "session": "the harness's session id (read after the first turn, or made by toolshift: `session.made`)",
    "mcp_url": "the episode's MCP server (streamable HTTP)",
    "model_url": "the served model's root, http://127.0.0.1:PORT (Anthropic clients)",
    "model_openai_url": "the served model's OpenAI base URL, http://127.0.0.1:PORT/v1",
    "model_name": "the name to ask the served model for",
    "api_key": "the served model's key (a placeholder: a loopback server checks none)",
    "home": "the episode's private home folder for the harness (its HOME)",
    "work": "the harness's working directory",
    "instructions": "the agent's instructions: whom it serves and the domain's policy",
    "instructions_json": "the same as a JSON (and TOML) string literal, quotes included",
    "reply_file": "a file the harness may write its final reply to",
}
_PLACEHOLDER = re.compile(r"\$\{([a-z_]+)\}")
SHIPPED = ("codex", "qwen-code")


def _check_placeholders(text: str, where: str) -> str:
    for name in _PLACEHOLDER.findall(text):
        if name not in PLACEHOLDERS:
            raise ValueError(
                f"{where}: unknown placeholder ${{{name}}}; known: {', '.join(sorted(PLACEHOLDERS))}"
            )
    return text


def render(text: str, values: dict[str, str]) -> str:
    """`text` with each `${name}` replaced by its value (one pass: a value is never read for placeholders)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


class Package(BaseModel):
    """Where the harness comes from, so `make harnesses` can install it and a run can say which version ran."""

    model_config = ConfigDict(extra="forbid")
    manager: Literal["npm", "pypi"]
    name: str
    version: str


class ReadRule(BaseModel):
    """Where a value (the session id, the reply) is read after a turn.

    `stdout_json`: the JSON lines of stdout whose fields equal `match` (all of them), the last one's `field` (a
    dotted path); `stdout_text`: stdout itself, stripped; `file`: a file's text, stripped; `made`: the session id
    toolshift made before the first turn (for harnesses that take one, such as `--session-id`).
    """

    model_config = ConfigDict(extra="forbid")
    source: Literal["stdout_json", "stdout_text", "file", "made"] = Field(alias="from")
    match: dict[str, str] = Field(default_factory=dict)
    field: str | None = None
    path: str | None = None
    join: bool = False
    """`stdout_json`: join every matching line's field (the harness's messages of the turn) instead of the last."""

    @model_validator(mode="after")
    def _complete(self) -> ReadRule:
        if self.source == "stdout_json" and not self.field:
            raise ValueError("stdout_json needs `field`")
        if self.source == "file":
            if not self.path:
                raise ValueError("file needs `path`")
            _check_placeholders(self.path, "path")
        return self


class HarnessSpec(BaseModel):
    """One harness CLI, run one process per user message (`start`, then `resume` with the session id)."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["toolshift.harness/1"] = HARNESS_FORMAT
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    title: str
    package: Package | None = None
    executable: str = Field(pattern=r"^[A-Za-z0-9._/-]+$")
    wire_api: Literal["chat", "responses", "anthropic"]
    start: list[str]
    resume: list[str]
    session: ReadRule
    reply: ReadRule
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    """Files written before the first turn: path → text (both with placeholders)."""
    turn_timeout: float = Field(900.0, gt=0)
    skills_dir: str | None = None
    """The harness's own Agent Skills folder (placeholders allowed): an episode's skills are written there as
    SKILL.md folders, and the harness finds them as its users' skills, instead of toolshift's `read_skill`."""
    notes: str = ""

    @field_validator("start", "resume")
    @classmethod
    def _argv(cls, value: list[str]) -> list[str]:
        for arg in value:
            _check_placeholders(arg, "argument")
        return value

    @field_validator("skills_dir")
    @classmethod
    def _folder(cls, value: str | None) -> str | None:
        return None if value is None else _check_placeholders(value, "skills_dir")

    @field_validator("env", "files")
    @classmethod
    def _templates(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            _check_placeholders(key, "name")
            _check_placeholders(text, key)
        return value


def spec_path(name: str) -> Path | None:
    """The shipped spec called `name`, or None."""
    candidate = resources.files("toolshift.harness") / "specs" / f"{name}.yaml"
    return Path(str(candidate)) if candidate.is_file() else None


def load_spec(what: str) -> HarnessSpec:
    """A shipped spec by name (`codex`), or a spec file by path; refused with the file and field named."""
    from toolshift.fileio import read_text
    from toolshift.world.language.yamlfile import parse_yaml

    path = spec_path(what) if "/" not in what and not what.endswith((".yaml", ".yml")) else Path(what)
    if path is None:
        raise BadInputError(
            f"no harness {what!r}: shipped ones are {', '.join(SHIPPED)}, or give a spec file's path"
        )
    text = read_text(path, what="harness spec", max_bytes=1 << 20)
    data = parse_yaml(text, str(path))  # the strict bounded loader: one line for any YAML it cannot take
    try:
        return HarnessSpec.model_validate(data)
    except Exception as exc:
        errors = getattr(exc, "errors", None)
        if callable(errors):
            first = errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ()))
            raise BadInputError(first.get("msg", str(exc)), source=str(path), field=field or None) from None
        raise BadInputError(str(exc), source=str(path)) from None


def find_executable(spec: HarnessSpec) -> str | None:
    """The harness's program: `TOOLSHIFT_HARNESS_PATH` (folders, `:`-separated), the checkout's npm folder
    (`.cache/npm/node_modules/.bin`, where `make test` installs the shipped harnesses), then the PATH."""
    import os

    if "/" in spec.executable:
        return spec.executable if Path(spec.executable).is_file() else None
    folders = [f for f in os.environ.get("TOOLSHIFT_HARNESS_PATH", "").split(":") if f]
    checkout = Path(__file__).resolve().parents[3]
    folders.append(str(checkout / ".cache" / "npm" / "node_modules" / ".bin"))
    for folder in folders:
        found = shutil.which(spec.executable, path=folder)
        if found:
            return found
    return shutil.which(spec.executable)


def dotted(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def read_value(rule: ReadRule, stdout: str, values: dict[str, str]) -> str | None:
    """The value a rule reads from a finished turn (None when it is not there)."""
    if rule.source == "made":
        return values.get("session")
    if rule.source == "stdout_text":
        return stdout.strip()
    if rule.source == "file":
        path = Path(render(rule.path or "", values))
        return path.read_text(encoding="utf-8", errors="replace").strip() if path.is_file() else None
    found: list[str] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if all(str(dotted(event, k)) == v for k, v in rule.match.items()):
            value = dotted(event, rule.field or "")
            if isinstance(value, str):
                found.append(value)
    if not found:
        return None
    return "\n\n".join(found) if rule.join else found[-1]
