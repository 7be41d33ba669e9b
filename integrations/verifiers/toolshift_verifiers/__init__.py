"""toolshift's tasks as a verifiers environment: `vf-eval toolshift-verifiers --env.taskset.service URL`.

verifiers finds this package by the taskset id (`toolshift-verifiers` imports `toolshift_verifiers`), as it finds
every installed environment. The episodes are toolshift's own, served by `toolshift frameworks serve` (a
toolshift installation in its own environment, D421): one world for the conversation, toolshift's simulated
user, toolshift's judge. `ToolshiftEnv.run` opens an episode of the task's instance, gives the assistant agent
the episode's MCP door as its one tool server (every call recorded by toolshift), and relays the conversation:
the user's message to the assistant's `Interaction.turn`, its reply back to toolshift, until the user or the
agent ends it. The assistant runs verifiers' own `null` harness (the chat program with MCP tools) against the
model vf-eval is given, held to the episode's `max_turns` model calls (a `@vf.stop` on the rollout's turns, as
toolshift holds every agent it runs: its own loop, a harness whose model it serves), so a model that never stops
calling tools ends the episode at the turn limit instead of running on. `finalize` records toolshift's verdict on the assistant's trace: reward
`strict_success`; metrics `success`, `collateral`, `judged` (and τ²'s `reward`, Δτ-Bench's P/R/F1 and SPE).
"""

from __future__ import annotations

from typing import Any

import httpx
import verifiers.v1 as vf
from pydantic import Field

__all__ = ["ToolshiftEnv", "ToolshiftTaskset"]

END = "end_conversation"


class ToolshiftTaskConfig(vf.TaskConfig):
    door: str | None = None
    """The episode's MCP URL, set per episode by `ToolshiftEnv.run` (never by hand)."""
    max_turns: int | None = None
    """The episode's turn limit (model calls), set per episode by `ToolshiftEnv.run` from the service."""


class ToolshiftTaskData(vf.TaskData):
    instance: str = ""
    """The toolshift task instance (`GET /instances` of the service)."""


class EpisodeDoor(vf.Toolset):
    """The episode's MCP server, run by toolshift: a remote tool server for verifiers (its `url` set)."""


class ToolshiftTask(vf.Task[ToolshiftTaskData, vf.State, ToolshiftTaskConfig]):
    @classmethod
    def toolsets(cls, config: ToolshiftTaskConfig) -> list[vf.Toolset]:  # type: ignore[override]
        return [EpisodeDoor(vf.ToolsetConfig(url=config.door))] if config.door else []

    @property
    def key(self) -> str:
        return self.data.instance or self.hash

    @vf.stop
    def turn_limit(self, trace: vf.Trace) -> bool:
        """The assistant has made the episode's `max_turns` model calls: its next one is refused."""
        return self.config.max_turns is not None and trace.num_turns >= self.config.max_turns


class ToolshiftTasksetConfig(vf.TasksetConfig):
    service: str = "http://127.0.0.1:8766"
    """`toolshift frameworks serve`'s address."""
    task: ToolshiftTaskConfig = ToolshiftTaskConfig()


class ToolshiftTaskset(vf.Taskset[ToolshiftTask, ToolshiftTasksetConfig]):
    def load(self) -> list[ToolshiftTask]:
        listed = httpx.get(f"{self.config.service}/instances", timeout=60).json()["instances"]
        return [
            ToolshiftTask(
                ToolshiftTaskData(id=i["id"], name=i["task_id"], instance=i["id"], prompt=None), self.config.task
            )
            for i in listed
        ]


class ToolshiftEnvConfig(vf.EnvConfig):
    assistant: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())
    """The agent under evaluation (`--env.assistant.*`): verifiers' chat program with the episode's MCP tools, on
    this machine (the episode's MCP door and toolshift's service listen on loopback only)."""
    max_user_turns: int = Field(30, ge=1)
    """Bounds the relay if the user never ends the conversation (toolshift's own limits apply first)."""


class ToolshiftEnv(vf.Env[ToolshiftEnvConfig]):
    """A toolshift episode per rollout, relayed between toolshift's user and verifiers' assistant."""

    def __init__(self, config: ToolshiftEnvConfig) -> None:
        super().__init__(config)
        self._verdicts: dict[int, dict[str, float]] = {}

    async def run(self, task: Any, agents: Any) -> None:
        service = self.taskset.config.service
        async with httpx.AsyncClient(base_url=service, timeout=1800) as http:
            opened = (await http.post("/episodes", json={"instance": task.data.instance, "agent": "verifiers"})).json()
            eid = opened["episode"]
            try:
                config = task.config.model_copy(
                    update={"door": opened["mcp_url"], "max_turns": opened.get("max_turns")}
                )
                assistant_task = ToolshiftTask(
                    task.data.model_copy(update={"prompt": None, "system_prompt": opened["instructions"]}), config
                )
                message = opened["message"]
                async with agents.assistant.interaction(assistant_task) as assistant:
                    for _ in range(self.config.max_user_turns):
                        if message is None:
                            break
                        before = assistant.trace.num_turns
                        segment = await assistant.turn(message)
                        limited = assistant.trace.stop_condition == "turn_limit"
                        if segment.terminated and not limited:
                            break
                        reply = {
                            "text": "" if segment.terminated else segment.last_reply,
                            "model_calls": assistant.trace.num_turns - before,
                            "limit": limited,
                        }
                        message = (await http.post(f"/episodes/{eid}/reply", json=reply)).json()["message"]
                        if limited:
                            break
            finally:
                result = (await http.post(f"/episodes/{eid}/finish")).json()
        self._verdicts[id(task)] = result["verdict"]

    async def finalize(self, task: Any, episode: Any) -> None:
        verdict = self._verdicts.pop(id(task))
        for trace in episode.traces:
            if trace.agent.name != "assistant":
                continue
            if verdict.get("judged"):
                trace.record_reward("strict_success", verdict["strict_success"])
            for name, value in verdict.items():
                if name != "strict_success":
                    trace.record_metric(name, value)
