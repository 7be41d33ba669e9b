"""The real MCP servers whose published histories make the ecosystem: packages, versions in order, how to start.

Every version each registry lists is part of the history. Versions are ordered as they were published:
the 0.x line, then the calendar versions (`2025.7.1` is a date), then the semver line that followed them
(`@modelcontextprotocol/server-filesystem` 2.0.1 and 2.3.0, built on the SDK's v2 packages and published after
2026.8.31, which npm's `latest` tag still names) — a plain semver sort would put 2.x before 2025.x (D360).

Two dependencies are held to the major the published code was written against, because a fresh install
today resolves the open ranges those versions declared to a later major their code cannot use (D361):

- npm: a version that turns zod schemas into JSON Schema with `zod-to-json-schema` and does not name `zod`
  itself gets zod 3 (the SDK's current 1.x brings zod 4, where `zod-to-json-schema` 3 yields an empty schema
  `{"$schema": ...}` for every tool, which the Python SDK's client refuses);
- PyPI: a version whose requirement on `mcp` has no upper bound gets `mcp<2` (the SDK's 2.x removed the
  low-level `Server.list_tools()` decorator those versions register their tools with).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Registry = Literal["npm", "pypi"]
StateKind = Literal["filesystem", "git", "memory", "sqlite", "none"]


@dataclass(frozen=True)
class ServerSpec:
    """One reference MCP server: where it is published and how one of its versions is started on a sandbox."""

    key: str
    registry: Registry
    package: str
    versions: tuple[str, ...]
    """Every published version the registry listed when this history was pinned, oldest first (`published_order`)."""
    state: StateKind
    """What a task changes, and how a diff judges it (`toolshift.drift.state`)."""
    args: tuple[str, ...] = ()
    """Arguments after the entry point; `{sandbox}` is the session's sandbox folder."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment; `{sandbox}` as in `args`."""
    title: str = ""
    script_state: tuple[str, str] | None = None
    """(file, variable): the state file a version without `process.env.<variable>` writes beside its own
    script; such a version is started from a per-sandbox copy whose file links into the sandbox (D368)."""

    @property
    def slug(self) -> str:
        """The package as one path component (`@modelcontextprotocol/server-memory` → `modelcontextprotocol+server-memory`)."""
        return self.package.lstrip("@").replace("/", "+")


def version_key(version: str) -> tuple[int, tuple[int, ...]]:
    """The publishing order of a version (D360): the 0.x line, then calendar versions, then the later semver line."""
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise ValueError(f"not a release version: {version!r}")
    parts = tuple(int(p) for p in version.split("."))
    era = 0 if parts[0] == 0 else 1 if parts[0] >= 2000 else 2
    return era, parts


def published_order(versions: str) -> tuple[str, ...]:
    """The versions (written space-separated) in publishing order."""
    return tuple(sorted(versions.split(), key=version_key))


_NPM = "@modelcontextprotocol/"

SERVERS: dict[str, ServerSpec] = {
    s.key: s
    for s in (
        ServerSpec(
            "filesystem",
            "npm",
            _NPM + "server-filesystem",
            published_order(
                "0.5.1 0.6.2 2.0.1 2.3.0 2025.1.14 2025.3.28 2025.7.1 2025.7.29 2025.8.18 2025.8.21 2025.11.25 "
                "2025.12.18 2026.1.14 2026.7.4 2026.7.10 2026.8.31"
            ),
            "filesystem",
            args=("{sandbox}",),
            title="the reference filesystem MCP server",
        ),
        ServerSpec(
            "git",
            "pypi",
            "mcp-server-git",
            published_order(
                "0.2.0 0.3.0 0.4.0 0.4.1 0.5.0 0.5.1 0.6.0 0.6.1 0.6.2 2025.1.14 2025.7.1 2025.9.25 2025.11.25 "
                "2025.12.18 2026.1.14 2026.6.4 2026.6.16 2026.7.10 2026.8.18 2026.10.10 2026.10.19"
            ),
            "git",
            args=("--repository", "{sandbox}/repo"),
            title="the reference git MCP server",
        ),
        ServerSpec(
            "memory",
            "npm",
            _NPM + "server-memory",
            published_order("0.6.2 2025.4.25 2025.8.4 2025.9.25 2025.11.25 2026.1.26 2026.7.4 2026.8.31"),
            "memory",
            env={"MEMORY_FILE_PATH": "{sandbox}/memory.jsonl"},
            title="the reference knowledge-graph memory MCP server",
            script_state=("memory.json", "MEMORY_FILE_PATH"),
        ),
        ServerSpec(
            "sqlite",
            "pypi",
            "mcp-server-sqlite",
            published_order(
                "0.1.0 0.3.0 0.3.1 0.4.0 0.4.1 0.5.0 0.5.1 0.6.0 0.6.1 0.6.2 2025.1.14 2025.4.25"
            ),
            "sqlite",
            args=("--db-path", "{sandbox}/db.sqlite"),
            title="the reference SQLite MCP server",
        ),
        ServerSpec(
            "everything",
            "npm",
            _NPM + "server-everything",
            published_order(
                "0.6.2 2025.1.14 2025.3.19 2025.4.8 2025.4.28 2025.5.12 2025.7.1 2025.7.29 2025.8.4 2025.8.18 "
                "2025.9.12 2025.9.25 2025.11.25 2025.12.18 2026.1.14 2026.1.26 2026.7.4 2026.8.18 2026.8.31"
            ),
            "none",
            args=("stdio",),
            title="the MCP test server that exercises every protocol feature",
        ),
    )
}
"""The servers, by key. `everything` has no state a task could change: it is in the catalog history only."""

TASK_SERVERS = ("filesystem", "git", "memory", "sqlite")


def server(key: str) -> ServerSpec:
    from toolshift.errors import BadInputError

    if key not in SERVERS:
        raise BadInputError(f"unknown server {key!r} (known: {', '.join(SERVERS)})", field="server")
    return SERVERS[key]


def check_version(spec: ServerSpec, version: str) -> str:
    from toolshift.errors import BadInputError

    if version not in spec.versions:
        raise BadInputError(
            f"{spec.package} has no version {version!r} in its pinned history ({spec.versions[0]} … "
            f"{spec.versions[-1]}, {len(spec.versions)} versions)",
            field="version",
        )
    return version
