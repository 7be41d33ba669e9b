"""The protocol for agents that own their loop: an outside agent takes part in a toolshift episode through it.

toolshift's own agent is a model called one step at a time (`ChatModel.complete`). An outside agent — a
Python agent, an agent SDK, a harness CLI — runs its own tool loop instead: for each message of the user it
calls the episode's tools as it likes (over MCP, at `EpisodeContext.mcp_url`) and comes back with its reply.
toolshift keeps everything else: one world for the whole conversation, the simulated user, the judge and the
episode record (every call seen from the server side). The agent object is made fresh for each episode:

    class MyAgent:
        name = "my-agent"
        async def start(self, episode: EpisodeContext) -> None: ...   # connect to episode.mcp_url
        async def turn(self, message: str) -> str | AgentTurn: ...    # the user's message -> the reply
        async def close(self) -> None: ...

`start` and `close` are optional. An agent may instead call `episode.call_tool(name, arguments)` in process,
which is recorded exactly as a call over MCP. `toolshift.harness` loads such an object from `module:factory`
or an entry point, and runs harness CLIs through the same protocol (docs/usage.md, "Bring your own agent").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolshift.agents.chat import ToolDef


@dataclass
class ModelEndpoint:
    """A model an outside agent may use, served by toolshift over the wire APIs (`toolshift.modelserver`)."""

    base_url: str
    """The server's root, `http://127.0.0.1:PORT`: OpenAI clients take `base_url + "/v1"`, Anthropic's the root."""
    model: str
    api_key: str = "toolshift-local"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"


@dataclass
class EpisodeContext:
    """What an outside agent is given for one episode."""

    episode_id: str
    task_id: str
    mcp_url: str
    """The episode's MCP server (streamable HTTP): every connection to it reaches this episode's one world."""
    tools: list[ToolDef]
    """The tools listed at the start (a tool search may expose more; the server then says its list changed)."""
    title: str
    """Whom the agent serves (the world's title, e.g. the business)."""
    policy: str
    """The domain's policy, which the agent should follow."""
    workdir: Path
    """A private folder for this episode (a harness's home and working directory), removed afterwards."""
    max_turns: int
    model: ModelEndpoint | None = None
    """The model toolshift serves for this agent (`python:…@embedded`), or None when the agent brings its own."""
    call_tool: Callable[[str, dict[str, Any]], Awaitable[tuple[str, bool]]] | None = None
    """In-process calls: `(text, is_error)`, recorded as calls over MCP are."""
    list_tools: Callable[[], Awaitable[list[ToolDef]]] | None = None
    """The tools on offer now, in process (a tool search or a later user turn may have added some), as the
    MCP listing at `mcp_url` gives them."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentTurn:
    """An outside agent's answer to one user message, with what it knows of its own work (all optional)."""

    text: str
    ended: bool = False
    """The agent ended the conversation (as `end_conversation` would)."""
    model_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    """Anything worth keeping in the episode (a harness's session id, its exit code)."""


@runtime_checkable
class OutsideAgent(Protocol):
    """An agent that owns its loop (see the module's docstring)."""

    name: str

    async def turn(self, message: str) -> str | AgentTurn: ...


def owns_loop(agent: Any) -> bool:
    """An outside agent (a `turn` method) rather than a chat model (a `complete` method)."""
    return callable(getattr(agent, "turn", None)) and not callable(getattr(agent, "complete", None))


def as_turn(value: Any) -> AgentTurn:
    """An agent's answer as an `AgentTurn` (a bare string is its text)."""
    if isinstance(value, AgentTurn):
        return value
    if value is None:
        return AgentTurn(text="")
    if isinstance(value, str):
        return AgentTurn(text=value)
    raise TypeError(f"an agent's turn must return a string or an AgentTurn, not {type(value).__name__}")
