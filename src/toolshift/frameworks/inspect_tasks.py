"""toolshift's tasks as inspect_ai tasks: `inspect eval toolshift/delta_tau -T version=3 --model openai/<m>`.

Registered with inspect through the `inspect_ai` entry point (this module), so inspect finds `toolshift/delta_tau`,
`toolshift/tau2` and `toolshift/world` as it finds any packaged task. One sample per task instance
(`toolshift.frameworks.instances`). The solver hosts inspect's own agent — `react()` by default, with the
model inspect evaluates — as an agent that owns its loop (`toolshift.agents.outside`): toolshift runs the
episode (one world for the whole conversation, the simulated user taking its turns between the agent's, the
judge), and each user message is one run of the inspect agent over the conversation so far, its tools the
episode's tools (listed again before every generation, so tools a `search_tools` call exposed are offered),
each call going to the episode's world and recorded there. The score is toolshift's verdict (success, strict
success, collateral writes; τ²'s reward on τ²'s tasks) with tool P/R/F1 and SPE as metadata, and the whole
toolshift episode is kept in the sample's store (`toolshift_episode`), so `toolshift traces convert inspect`
gives back the episode `toolshift run` writes.

`-T agent=oracle` swaps the model for the oracle (`ConversationOracle` of the instance, served over the OpenAI
API for the episode): the same `react()` loop and tool plumbing, which must solve every valid task.
"""

from __future__ import annotations

import math
import time
from typing import Any

from inspect_ai import Task as InspectTask
from inspect_ai import task
from inspect_ai.agent import AgentState, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolError, ToolParams

from toolshift.agents.chat import ToolDef as ToolshiftToolDef
from toolshift.agents.outside import AgentTurn, EpisodeContext
from toolshift.frameworks import instances as sources
from toolshift.frameworks.instances import Instance, seed_of
from toolshift.traces.episode import Episode
from toolshift.traces.inspect_log import STORE_KEY, verdict_value

AGENTS = ("react", "oracle")
_LOADED: dict[str, dict[str, Instance]] = {}
"""The instances of each task made in this process, by the task's key: solver and scorer get the key alone,
which inspect records among their parameters (the instances hold code, never written to a log)."""


class EpisodeTools:
    """An inspect `ToolSource` over the episode's tools: listed afresh for each generation, each call answered
    by the episode's world (`EpisodeContext.call_tool`, recorded as a call over MCP is)."""

    def __init__(self, context: EpisodeContext) -> None:
        self.context = context
        self._made: dict[tuple[str, str], Tool] = {}

    async def tools(self) -> list[Tool]:
        listed = await self.context.list_tools() if self.context.list_tools else self.context.tools
        return [self._tool(t) for t in listed]

    def _tool(self, spec: ToolshiftToolDef) -> Tool:
        key = (spec.name, repr(spec.input_schema))
        if key not in self._made:
            call = self.context.call_tool
            assert call is not None, "an episode context always carries call_tool"

            async def execute(**kwargs: Any) -> str:
                text, error = await call(spec.name, kwargs)
                if error:
                    raise ToolError(text)
                return text

            self._made[key] = ToolDef(
                execute,
                name=spec.name,
                description=spec.description or spec.name,
                parameters=tool_params(spec.input_schema),
            ).as_tool()
        return self._made[key]


def tool_params(schema: dict[str, Any] | None) -> ToolParams:
    """A tool's JSON Schema as inspect's `ToolParams`; inspect asks every parameter for a description, and a
    parameter the world's schema leaves undescribed is described by its name."""
    schema = schema or {}
    properties = {
        name: {**prop, "description": prop.get("description") or name.replace("_", " ")}
        if isinstance(prop, dict)
        else prop
        for name, prop in (schema.get("properties") or {}).items()
    }
    return ToolParams.model_validate(
        {"type": "object", "properties": properties, "required": schema.get("required") or []}
    )


class InspectConversation:
    """inspect's agent as an agent that owns its loop: one run of it per user message, over the sample's messages."""

    harness = "inspect_ai"

    def __init__(self, state: TaskState, model: Any = None) -> None:
        self.state, self.model = state, model
        self.name = "inspect:react"
        self.model_name = str(model) if model is not None else str(get_model())
        self.agent: Any = None
        self.model_seconds = 0.0
        self.max_turns = 30
        self.calls = 0
        """Model calls (react's generations) made in this episode so far."""
        self.stopped = False
        """react wanted another model call past the limit: the episode ends with `max_turns`."""

    async def start(self, episode: EpisodeContext) -> None:
        self.state.messages = [
            ChatMessageSystem(content=str(episode.extra.get("instructions") or episode.policy))
        ]
        self.max_turns = episode.max_turns
        self.agent = react(
            prompt=None, tools=[EpisodeTools(episode)], model=self.model, submit=False,
            on_continue=self._on_continue,
        )  # fmt: skip

    async def _on_continue(self, state: AgentState) -> bool:
        """react's loop goes on while the model calls tools (its own rule without a submit tool) and the episode's
        `max_turns` model calls are not spent: the turn limit holds inspect's agent as it holds every agent."""
        self.calls += 1
        if not state.output.message.tool_calls:
            return False
        self.stopped = self.calls >= self.max_turns
        return not self.stopped

    async def turn(self, message: str) -> AgentTurn:
        self.state.messages.append(ChatMessageUser(content=message))
        if self.calls >= self.max_turns:  # spent on the last turn's reply: no call is left for this one
            return AgentTurn(text="", model_calls=0, info={"model_budget_reached": True})
        before = len(self.state.messages)
        agent_state = AgentState(messages=list(self.state.messages))
        try:
            agent_state = await self.agent(agent_state)
        finally:
            self.state.messages = agent_state.messages
        self.state.output = agent_state.output
        new = self.state.messages[before:]
        replies = [m for m in new if isinstance(m, ChatMessageAssistant)]
        text = agent_state.output.completion if replies and not replies[-1].tool_calls else ""
        usage = agent_state.output.usage
        return AgentTurn(
            text=text,
            model_calls=len(replies),
            prompt_tokens=usage.input_tokens if usage else None,
            completion_tokens=usage.output_tokens if usage else None,
            info={"model_budget_reached": True} if self.stopped else {},
        )


@solver
def toolshift_episode(instances: str, agent: str = "react") -> Solver:
    """Run the sample's task instance as one toolshift episode with inspect's `react()` agent (or the oracle)."""

    by_id = _LOADED[instances]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        instance = by_id[str(state.sample_id)]
        seed = seed_of(instance.id, state.epoch - 1)
        clock = time.perf_counter()
        if agent == "oracle":
            from toolshift.agents.config import RunConfig
            from toolshift.harness.served import served_model

            config = RunConfig(world="inspect", model="oracle")
            async with served_model(
                "oracle", config, seed=seed, budget=None, task=instance.oracle_task
            ) as served:
                model = get_model(
                    f"openai/{served.endpoint.model}", base_url=served.endpoint.openai_base_url,
                    api_key=served.endpoint.api_key, memoize=False,
                )  # fmt: skip
                episode = await instance.run(InspectConversation(state, model), seed)
        else:
            episode = await instance.run(InspectConversation(state), seed)
        episode.source["framework"] = {
            "name": "inspect_ai",
            "agent": agent,
            "seconds": round(time.perf_counter() - clock, 4),
        }
        state.store.set(STORE_KEY, episode.model_dump(mode="json"))
        state.completed = True
        return state

    return solve


def _judged_mean(key: str) -> Any:
    def compute(scores: list[SampleScore]) -> float:
        values = [
            float(s.score.value[key])
            for s in scores
            if isinstance(s.score.value, dict) and s.score.value.get("judged") and key in s.score.value
        ]
        return sum(values) / len(values) if values else math.nan

    return compute


@metric(name="SR")
def success_rate() -> Any:
    """Success rate over the judged samples (an unjudged episode is no number: left out, counted apart)."""
    return _judged_mean("success")


@metric(name="strict_SR")
def strict_success_rate() -> Any:
    return _judged_mean("strict_success")


@metric(name="collateral")
def collateral_writes() -> Any:
    """Mean collateral writes per judged episode."""
    return _judged_mean("collateral")


@metric(name="unjudged")
def unjudged() -> Any:
    def compute(scores: list[SampleScore]) -> float:
        return float(
            sum(1 for s in scores if isinstance(s.score.value, dict) and not s.score.value.get("judged"))
        )

    return compute


@scorer(metrics=[success_rate(), strict_success_rate(), collateral_writes(), unjudged()])
def toolshift_verdict(instances: str) -> Any:
    """toolshift's verdict of the sample's episode (recorded by `toolshift_episode`), its metrics as metadata."""
    by_id = _LOADED[instances]

    async def score(state: TaskState, target: Target) -> Score:
        recorded = state.store.get(STORE_KEY)
        if recorded is None:
            return Score(
                value={"judged": 0.0}, explanation="no toolshift episode was recorded for this sample"
            )
        episode = Episode.model_validate(recorded)
        instance = by_id[str(state.sample_id)]
        value = verdict_value(episode)
        metadata: dict[str, Any] = {
            "episode_id": episode.id,
            "termination_reason": episode.termination_reason,
            "judged_by": episode.outcome.judged_by if episode.outcome else None,
            "tool_calls": (episode.outcome.info.get("tool_calls") if episode.outcome else None),
        }
        if instance.scores is not None and value.get("judged"):
            metadata.update(instance.scores(episode))
        outcome = episode.outcome
        why = "unjudged" if not value.get("judged") else ("success" if value["success"] else "failure")
        missing = (outcome.info.get("missing") if outcome else None) or []
        explanation = f"{why} ({episode.termination_reason}); missing changes: {len(missing)}, collateral: {int(value.get('collateral', 0))}"
        return Score(
            value=value,
            answer=state.output.completion if state.output else None,
            explanation=explanation,
            metadata=metadata,
        )

    return score


def _task(found: list[Instance], agent: str, name: str) -> InspectTask:
    from toolshift.errors import BadInputError

    if agent not in AGENTS:
        raise BadInputError(f"agent must be one of {', '.join(AGENTS)}, not {agent!r}", field="agent")
    key = f"{name}#{len(_LOADED)}"
    _LOADED[key] = {i.id: i for i in found}
    samples = [
        Sample(
            id=i.id,
            input=i.task.public_request or i.task.id,
            target="Δgold ⊆ Δagent",
            metadata={"task_id": i.task.id, **i.metadata},
        )
        for i in found
    ]
    return InspectTask(
        dataset=MemoryDataset(samples, name=name), solver=toolshift_episode(key, agent), scorer=toolshift_verdict(key),
    )  # fmt: skip


@task
def delta_tau(
    build: str = "runs/eco/bench",
    version: int = 1,
    setting: str = "standard",
    split: str = "test",
    sample: int | None = None,
    seed: int = 0,
    user: str = "scripted",
    max_turns: int = 30,
    agent: str = "react",
) -> InspectTask:
    """Δτ-Bench: the build's `split` tasks at one ecosystem version and setting (`sample`: a seeded sample of
    tasks, the one `toolshift bench baseline --sample N --seed S` runs)."""
    found = sources.delta_tau(
        build, version=version, setting=setting, split=split or None, sample=sample, seed=seed, user=user, max_turns=max_turns,
    )  # fmt: skip
    return _task(found, agent, f"delta_tau v{version} {setting}")


@task
def tau2(
    domain: str = "airline",
    split: str | None = None,
    limit: int | None = None,
    user: str = "scripted",
    max_turns: int = 30,
    agent: str = "react",
) -> InspectTask:
    """τ²-bench's airline or retail tasks on toolshift's worlds, judged by τ²'s reward."""
    found = sources.tau2(domain, split=split, limit=limit, user=user, max_turns=max_turns)
    return _task(found, agent, f"tau2 {domain}")


@task
def world(
    world: str = "clinic",
    tasks: str = "tasks.jsonl",
    limit: int | None = None,
    user: str = "scripted",
    max_turns: int = 30,
    agent: str = "react",
) -> InspectTask:
    """A task file's tasks on any world `toolshift run --world` takes (a built-in domain, a saved world, a URL)."""
    found = sources.task_file(world, tasks, limit=limit, user=user, max_turns=max_turns)
    return _task(found, agent, f"{world} {tasks}")
