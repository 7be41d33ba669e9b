"""One text completion from a configured model (proposer, feedback, judge), under a hard outside deadline.

Models are the agents' backends (`embedded`, `openai:<m>`, `anthropic:<m>`). Each call runs on its own
event loop in its own thread (`toolshift.agents.loop.run_isolated`) and is waited for at most `timeout`
seconds from outside: a call that hangs past its own client timeout is abandoned, not waited on, and
reported as a timeout (the failure OpenEvolve's users report — evaluations running far past their limit
— cannot happen to a step here).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from toolshift.agents.chat import ModelConfigError
from toolshift.agents.config import RunConfig, check_model_spec, make_model
from toolshift.agents.loop import EpisodeHung, run_isolated
from toolshift.evolve.archive import Cost


class ModelCallFailed(Exception):
    """A model call that gave no usable answer in time: the reason is kept where the answer would be."""


def check_spec(spec: str, what: str) -> str:
    check_model_spec(spec, role="user")
    if spec == "scripted":
        raise ValueError(f"the {what} must be a model (embedded, openai:<m>, anthropic:<m>)")
    return spec


def complete(
    spec: str,
    messages: list[dict[str, str]],
    *,
    timeout: float,
    seed: int = 0,
    temperature: float | None = None,
    base_url: str | None = None,
    max_tokens: int = 4096,
) -> tuple[str, Cost]:
    """The model's text reply and what it cost; `ModelCallFailed` on a timeout or a failed call."""
    config = RunConfig(
        world="evolve",
        model=spec,
        temperature=temperature,
        base_url=base_url,
        seed=seed,
        max_tokens=max_tokens,
    )
    model = make_model(spec, config, seed=seed, role="user")
    started = time.perf_counter()

    async def call() -> Any:
        return await model.complete(messages, [])

    async def bounded() -> Any:
        return await run_isolated(call, deadline=timeout)

    try:
        reply = asyncio.run(bounded())
    except EpisodeHung:
        raise ModelCallFailed(f"{spec} gave no answer within {timeout:g} s (abandoned)") from None
    except ModelConfigError:
        raise
    except Exception as exc:  # the backend's own failure after its retries
        raise ModelCallFailed(f"{spec} failed: {type(exc).__name__}: {exc}") from None
    cost = Cost(
        calls=1,
        prompt_tokens=reply.prompt_tokens or 0,
        completion_tokens=reply.completion_tokens or 0,
        cost=reply.cost,
        seconds=time.perf_counter() - started,
    )
    return (reply.text or "").strip(), cost


_JSON = re.compile(r"\{.*\}", re.S)


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (models wrap it in prose or fences); `ModelCallFailed` if none."""
    m = _JSON.search(text)
    if m is None:
        raise ModelCallFailed(f"no JSON object in the reply: {text[:120]!r}")
    try:
        value = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        raise ModelCallFailed(f"the reply's JSON does not parse: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ModelCallFailed("the reply's JSON is not an object")
    return value
