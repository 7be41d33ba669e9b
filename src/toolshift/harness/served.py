"""The model an outside agent uses, served for one episode over the wire APIs (`toolshift.modelserver`).

`python:…@<model>` and `harness:…@<model>` name the model the agent talks to: `embedded` (the default: the
embedded SmolLM2, no key, no network) or any chat model toolshift reaches (`openai:<m>`, `anthropic:<m>`). It is
made as `toolshift run` makes its own agent's model — seeded by the episode — and served on a loopback port of
the episode's own, held to the episode's turn limit in model calls, its calls logged for the episode record.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.config import RunConfig, make_model
from toolshift.agents.outside import AgentTurn, ModelEndpoint
from toolshift.agents.policies import ConversationOracle
from toolshift.models import Task
from toolshift.modelserver.server import LOCAL_KEY, ModelHost, serving


@dataclass
class ServedModel:
    """The model of one episode's outside agent: its host (calls logged) and where it is served."""

    host: ModelHost
    endpoint: ModelEndpoint
    seen: int = 0
    """Calls already reported in an earlier turn."""

    def turn_report(self, turn: AgentTurn) -> AgentTurn:
        """`turn` with the model calls made since the last report: count, tokens, the harness's prompt size."""
        calls = self.host.calls[self.seen :]
        self.seen = len(self.host.calls)
        answered = [c for c in calls if not c.over_budget and c.error is None]
        turn.model_calls = len(answered)
        turn.prompt_tokens = sum(c.prompt_tokens or 0 for c in answered)
        turn.completion_tokens = sum(c.completion_tokens or 0 for c in answered)
        if calls:
            turn.info["model"] = {
                "calls": len(answered),
                "failed": sum(1 for c in calls if c.error is not None),
                "seconds": round(sum(c.seconds for c in calls), 3),
                "served_seconds": round(sum(c.served_seconds for c in calls), 3),
                "system_chars": max(c.system_chars for c in calls),
                "tools_chars": max(c.tools_chars for c in calls),
                "tools": max(c.tools for c in calls),
                "left_out_tools": max(c.left_out for c in calls),
                "apis": sorted({c.api for c in calls}),
                "called": [name for c in answered for name in c.called],
            }
        if any(c.over_budget for c in calls):
            turn.info["model_budget_reached"] = True
        return turn


@contextlib.asynccontextmanager
async def served_model(
    model: str, config: RunConfig, *, seed: int, budget: int | None, task: Task | None = None
) -> AsyncIterator[ServedModel]:
    """Serve `model` (a chat model spec) for the length of the block, its calls capped at `budget`; `oracle`
    serves the task's gold path, one call per model call (the measuring instrument: a harness driven by it
    solves every valid task unless the harness's plumbing loses something)."""
    if model == "oracle":
        if task is None:
            raise ModelConfigError("@oracle needs the episode's task")
        chat: Any = ConversationOracle(task)
    else:
        chat = make_model(model, config.model_copy(update={"model": model}), seed=seed)
    host = ModelHost(chat, budget=budget, name=model_name(model))
    async with serving(host) as url:
        yield ServedModel(host, ModelEndpoint(url, host.name or model, LOCAL_KEY))


def model_name(spec: str) -> str:
    """The name an agent asks its model for: the spec's own name (`embedded`, `gpt-4o` of `openai:gpt-4o`)."""
    kind, _, name = spec.partition(":")
    return (name or spec) if kind in ("openai", "anthropic") else spec


def with_endpoint(context: Any, served: ServedModel | None) -> Any:
    """The episode's context with the served model set (unchanged when the agent brings its own)."""
    if served is not None:
        context.model = served.endpoint
    return context
