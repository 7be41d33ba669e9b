"""`toolshift frameworks serve`: live episodes over HTTP, for a framework in a Python environment of its own.

verifiers cannot be installed beside toolshift (D421), so its environment drives toolshift's episodes over the
wire. Each episode is a `LiveEpisode` (`toolshift.agents.live`: `run_episode` with a relay agent) of one task
instance (`toolshift.frameworks.instances`); the framework's agent reaches the episode's tools at its MCP door,
where every call is recorded, and the verdict is toolshift's own:

    GET  /instances                     {"instances": [{"id", "task_id", "domain"}]}
    POST /episodes {"instance", "seed"} {"episode", "mcp_url", "instructions", "message", "max_turns"}
                                        (message: the user's opening; max_turns: the agent's model calls allowed)
    POST /episodes/{id}/reply {"text", "model_calls", "limit"}  {"message"}   (the user's next message; null
                                        once the episode ended; `limit`: the agent's model-call budget ended its
                                        turn, so the episode ends with `max_turns` as `toolshift run`'s does)
    POST /episodes/{id}/finish          {"verdict", "episode"}   (the verdict as inspect's score holds it; the episode)
    /oracle/v1/...                      the oracle as a model over the OpenAI (and Anthropic) APIs (`oracle=True`)

The oracle endpoint is the measuring instrument for a framework's plumbing: a model that answers each request
with the next step of the gold path of the open episode whose user opened the conversation as this one did
(`ConversationOracle` of that instance). A framework's agent driven by it must solve every valid task.

Served on loopback only (the Host header checked as every toolshift server checks it); at most `MAX_LIVE`
episodes open at once; a request body over `MAX_BODY` bytes is refused.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.agents.live import LiveEpisode
from toolshift.frameworks.instances import Instance, seed_of
from toolshift.traces.inspect_log import verdict_value
from toolshift.traces.store import EpisodeWriter, write_episodes

MAX_LIVE = 64
MAX_BODY = 1 << 20


class _Open(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instance: str = Field(max_length=500)
    seed: int | None = None
    agent: str = Field("verifiers", max_length=200)


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=200_000)
    ended: bool = False
    model_calls: int | None = Field(None, ge=0, le=1_000_000)
    """The model calls the agent made in this turn (the episode's turn count is the sum, as for any harness)."""
    limit: bool = False
    """The framework stopped the agent at the episode's `max_turns` model calls (the episode ends there)."""


class EpisodeService:
    """The live episodes of one set of task instances, by episode id."""

    def __init__(self, instances: list[Instance], *, oracle: bool = False, out: Path | None = None) -> None:
        self.instances = {i.id: i for i in instances}
        self.live: dict[str, LiveEpisode] = {}
        self.of: dict[str, Instance] = {}
        self.openings: dict[str, str | None] = {}
        self.oracle = oracle
        self.out = out
        """Each finished episode is appended here (`toolshift.episodes/1`), as it is judged."""
        self._lock = asyncio.Lock()

    async def open(self, body: _Open) -> dict[str, Any]:
        instance = self.instances.get(body.instance)
        if instance is None:
            raise KeyError(f"no instance {body.instance!r}")
        async with self._lock:
            if len(self.live) >= MAX_LIVE:
                raise OverflowError(f"{MAX_LIVE} episodes are open; finish one first")
            eid = uuid.uuid4().hex[:16]
            seed = seed_of(instance.id) if body.seed is None else body.seed
            live = LiveEpisode(lambda agent: instance.run(agent, seed), name=body.agent)
            self.live[eid], self.of[eid] = live, instance
        context, message = await live.open()
        self.openings[eid] = message
        return {
            "episode": eid,
            "mcp_url": context.mcp_url if context else None,
            "instructions": str(context.extra.get("instructions") or context.policy) if context else None,
            "message": message,
            "max_turns": context.max_turns if context else None,
        }

    async def reply(self, eid: str, body: _Reply) -> dict[str, Any]:
        info = {"model_budget_reached": True} if body.limit else {}
        return {
            "message": await self.live[eid].reply(
                body.text, ended=body.ended, model_calls=body.model_calls, info=info
            )
        }

    async def finish(self, eid: str) -> dict[str, Any]:
        live = self.live[eid]
        try:
            episode = await live.finish()
        finally:
            self.live.pop(eid, None)
            instance = self.of.pop(eid)
            self.openings.pop(eid, None)
        if self.out is not None:
            if not self.out.exists():
                write_episodes(self.out, [], meta={"service": "toolshift frameworks serve"})
            with EpisodeWriter(self.out, append=True) as writer:
                writer.write(episode)
                writer.sync()
        value = verdict_value(episode)
        if instance.scores is not None and value.get("judged"):
            value.update(instance.scores(episode))
        return {"verdict": value, "episode": json.loads(episode.model_dump_json())}

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from toolshift.world.mcp.http_guard import HostGate

        async def body_of(request: Request, model: type[BaseModel]) -> Any:
            raw = await request.body()
            if len(raw) > MAX_BODY:
                raise ValueError(f"request body over {MAX_BODY} bytes")
            return model.model_validate_json(raw or b"{}")

        def guarded(handler: Any) -> Any:
            async def endpoint(request: Request) -> JSONResponse:
                try:
                    return JSONResponse(await handler(request))
                except (ValidationError, ValueError) as exc:
                    return JSONResponse({"error": str(exc)[:1000]}, status_code=400)
                except KeyError as exc:
                    return JSONResponse({"error": str(exc)[:1000]}, status_code=404)
                except OverflowError as exc:
                    return JSONResponse({"error": str(exc)}, status_code=429)

            return endpoint

        async def instances(request: Request) -> dict[str, Any]:
            return {
                "instances": [
                    {"id": i.id, "task_id": i.task.id, "domain": i.task.domain}
                    for i in self.instances.values()
                ]
            }

        async def open_episode(request: Request) -> dict[str, Any]:
            return await self.open(await body_of(request, _Open))

        async def reply(request: Request) -> dict[str, Any]:
            return await self.reply(request.path_params["eid"], await body_of(request, _Reply))

        async def finish(request: Request) -> dict[str, Any]:
            return await self.finish(request.path_params["eid"])

        routes: list[Any] = [
            Route("/instances", guarded(instances), methods=["GET"]),
            Route("/episodes", guarded(open_episode), methods=["POST"]),
            Route("/episodes/{eid}/reply", guarded(reply), methods=["POST"]),
            Route("/episodes/{eid}/finish", guarded(finish), methods=["POST"]),
        ]
        if self.oracle:
            from starlette.routing import Mount

            from toolshift.modelserver.server import ModelHost, model_app

            routes.append(
                Mount("/oracle", app=model_app(ModelHost(_OpenEpisodesOracle(self), name="oracle")))
            )
        return HostGate(Starlette(routes=routes), "127.0.0.1")


class _OpenEpisodesOracle:
    """The oracle of whichever open episode this conversation is (its user's opening message), as a chat model."""

    name = "oracle"

    def __init__(self, service: EpisodeService) -> None:
        self.service = service

    async def complete(self, messages: list[dict[str, Any]], tools: list[Any]) -> Any:
        from toolshift.agents.chat import ModelReply
        from toolshift.agents.policies import ConversationOracle

        first = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        for eid, opening in list(self.service.openings.items()):
            if opening is not None and opening == first and eid in self.service.of:
                return await ConversationOracle(self.service.of[eid].oracle_task).complete(messages, tools)
        return ModelReply(
            text="(no open episode began this conversation)", prompt_tokens=0, completion_tokens=0, cost=0.0
        )
