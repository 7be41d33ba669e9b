"""The gateway's configuration (`toolshift.gateway/1`): backends, the middleware chain, recording, flows, serving.

Read from YAML with the strict bounded loader (`toolshift.world.language.yamlfile`, a `safe_load` that refuses
duplicate keys and alias bombs) and validated by pydantic; every CLI flag maps onto one field, so a
flag-only gateway and a `--config` one are the same object. A bad file is one line naming the file and
field (exit 2). The auth token is never in the file: `token_env` names the environment variable holding it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolshift.errors import BadInputError
from toolshift.world.mcp.http_guard import is_loopback

GATEWAY_FORMAT = "toolshift.gateway/1"
MiddlewareName = Literal["record", "flows", "steward", "watch"]
KNOWN_MIDDLEWARE: tuple[str, ...] = ("record", "flows", "steward", "watch")
DEFAULT_TOKEN_ENV = "TOOLSHIFT_GATEWAY_TOKEN"


class BackendConfig(BaseModel):
    """One MCP server behind the gateway: exactly one of `command`, `url`, `world` or `build`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    command: list[str] | None = Field(default=None, min_length=1)
    """An MCP server started as a subprocess and spoken to over stdio (one process per client session)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for `command` (never recorded)."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    """A streamable-HTTP MCP server (one MCP session per client session)."""
    world: str | None = None
    """A toolshift domain (a built-in name or a spec path), served in-process, a fork per client session."""
    build: Path | None = None
    """The version middleware: a toolshift bench build whose `domain` is served at ecosystem `version`."""
    domain: str | None = None
    version: int | None = Field(default=None, ge=1)
    prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_.-]{0,32}$")
    """Prepended to this backend's tool names (needed when two backends offer the same name)."""

    @model_validator(mode="after")
    def _one_kind(self) -> BackendConfig:
        kinds = [k for k in ("command", "url", "world", "build") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a backend is exactly one of command, url, world or build (got {kinds or 'none'})"
            )
        if self.build is not None and (self.domain is None or self.version is None):
            raise ValueError("a build backend (the version middleware) needs domain and version")
        if self.build is None and (self.domain is not None or self.version is not None):
            raise ValueError("domain and version belong to a build backend")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("command", "url", "world", "build") if getattr(self, k) is not None)

    def describe(self) -> str:
        """How to reach it, for error messages (no environment values)."""
        if self.command is not None:
            return "command " + " ".join(self.command)
        if self.url is not None:
            return f"url {self.url}"
        if self.world is not None:
            return f"world {self.world}"
        return f"build {self.build} domain {self.domain} v{self.version}"


class RecordConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out: Path
    """Folder of `<domain>.episodes.jsonl` (appended) and `<domain>.catalog.json`."""
    domain: str | None = None
    """The episodes' domain (default: the first backend's world or domain, else its name)."""
    redact: list[str] = Field(default_factory=list)
    """Argument names recorded as `[redacted]`, beside the built-in secret-looking ones."""
    agent: str | None = None
    """Recorded as the episodes' agent (the gateway cannot know which model is calling)."""


class FlowsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flow: Path
    catalog: Path
    """The tool catalog the flow was learned for; the backend's own catalog must agree with it."""
    decider: Literal["reach", "next-step"] = "reach"
    threshold: float = Field(default=0.3, gt=0.0, le=1.0)
    max_lookups: int = Field(default=8, ge=1, le=64)
    """Lookups made after one call, chains included."""
    rule: Path | None = None
    """A decision rule (`toolshift flows price --choose-rule`, toolshift.flow-rule/1) for `decider`: one θ or a
    threshold per decision on scores recalibrated per site; it replaces `threshold`."""


class StewardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    library: Path
    """A Steward library (`toolshift steward build` / `maintain`) kept for the served version's catalog."""
    list_tools: bool = True
    """False: the client's harness asks `steward_plan` itself and hands the plan to its model (D196), so the
    three Steward tools are answered but not listed, and the supply stays what that call made it; where that
    call finds no plan, the session is served the backend's own tools, as without Steward (D214)."""


class WatchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    log: Path
    """The catalog log (`toolshift.catalog-log/1`): every catalog version the backend has served, in order."""
    library: Path | None = None
    """A Steward library re-checked against each new catalog (`toolshift steward check`)."""
    domain: str | None = None
    """The library's domain the backend serves (default: the backend's name)."""
    maintain: bool = True
    """After the check, bring the library to the new catalog by maintenance with no episodes (D365, D369)."""


class GatewayConfig(BaseModel):
    """The whole gateway: what `toolshift gateway serve` runs."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.gateway/1"] = GATEWAY_FORMAT
    backends: list[BackendConfig] = Field(min_length=1, max_length=16)
    middleware: list[MiddlewareName] = Field(default_factory=list)
    """Outermost first. Each name at most once."""
    record: RecordConfig | None = None
    flows: FlowsConfig | None = None
    steward: StewardConfig | None = None
    watch: WatchConfig | None = None
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8766, ge=0, le=65535)
    token_env: str = DEFAULT_TOKEN_ENV
    """The environment variable holding the bearer token HTTP clients must send (required beyond loopback)."""
    idle_timeout: float | None = Field(default=600.0, gt=0)
    """Client sessions (and their backend sessions) unused this long are closed; None: never."""
    call_timeout: float = Field(default=30.0, gt=0, le=3600)
    """A backend that does not answer a call (or the handshake) within this is reported unreachable."""
    max_sessions: int | None = Field(default=256, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> GatewayConfig:
        if len(set(self.middleware)) != len(self.middleware):
            raise ValueError("a middleware is named twice")
        if "steward" in self.middleware:
            if self.steward is None:
                raise ValueError("middleware steward needs a steward section (library: file)")
            if len(self.backends) != 1 or self.backends[0].build is None:
                raise ValueError(
                    "middleware steward fronts exactly one build backend (a library is kept for one catalog)"
                )
            if self.middleware[0] != "steward":
                raise ValueError(
                    "steward must come first in the middleware list (recordings and flows see world calls)"
                )
        if "watch" in self.middleware:
            if self.watch is None:
                raise ValueError("middleware watch needs a watch section (log: file)")
            if len(self.backends) != 1:
                raise ValueError(
                    "middleware watch fronts exactly one backend (a catalog log is one server's)"
                )
        if "record" in self.middleware and self.record is None:
            raise ValueError("middleware record needs a record section (out: folder)")
        if "flows" in self.middleware and self.flows is None:
            raise ValueError("middleware flows needs a flows section (flow, catalog)")
        if "flows" in self.middleware and len(self.backends) != 1:
            raise ValueError(
                "middleware flows fronts exactly one backend (a flow is learned for one catalog)"
            )
        names = [b.name for b in self.backends]
        if len(set(names)) != len(names):
            raise ValueError("two backends share a name")
        return self

    def token(self) -> str | None:
        value = os.environ.get(self.token_env, "")
        return value or None

    def loopback(self) -> bool:
        return is_loopback(self.host)


def load_config(path: Path) -> GatewayConfig:
    """A gateway YAML file, read strictly and validated; bad input names the file and field."""
    from toolshift.world.language.yamlfile import load_yaml

    raw = load_yaml(path, what="gateway config")
    if not isinstance(raw, dict):
        raise BadInputError("a gateway config is a mapping", source=str(path))
    if raw.get("format", GATEWAY_FORMAT) != GATEWAY_FORMAT:
        raise BadInputError(
            f"unknown gateway config format {raw.get('format')!r} (this reader knows {GATEWAY_FORMAT})",
            source=str(path),
            field="format",
        )
    try:
        config = GatewayConfig.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from exc
    base = Path(path).resolve().parent
    return resolve_paths(config, base)


def resolve_paths(config: GatewayConfig, base: Path) -> GatewayConfig:
    """Relative paths in a config file are relative to the file."""

    def fix(p: Path | None) -> Path | None:
        return None if p is None or p.is_absolute() else base / p

    for b in config.backends:
        if b.build is not None and not b.build.is_absolute():
            b.build = base / b.build
        if b.world is not None and b.world.endswith((".yaml", ".yml")) and not Path(b.world).is_absolute():
            b.world = str(base / b.world)
    if config.record is not None and not config.record.out.is_absolute():
        config.record.out = base / config.record.out
    if config.steward is not None:
        config.steward.library = fix(config.steward.library) or config.steward.library
    if config.watch is not None:
        config.watch.log = fix(config.watch.log) or config.watch.log
        config.watch.library = fix(config.watch.library)
    if config.flows is not None:
        config.flows.flow = fix(config.flows.flow) or config.flows.flow
        config.flows.catalog = fix(config.flows.catalog) or config.flows.catalog
    return config
