"""A run's configuration, its hash (the resume key), and the factories that turn it into models and users."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolshift.agents.chat import DEFAULT_MAX_TOKENS, ChatModel, ModelConfigError
from toolshift.agents.loop import EpisodeLimits
from toolshift.agents.retry import RateLimitListener
from toolshift.agents.users import LLMUser, ScriptedUser, UserSimulator, user_for_task
from toolshift.errors import BadInputError
from toolshift.models import Task
from toolshift.traces.episode import Episode

RUN_FORMAT = "toolshift.run/1"
SCRIPTED_MODELS = ("oracle", "replay")
OUTSIDE_KINDS = ("python", "harness")
"""Agents that own their loop (`toolshift.agents.outside`), found among the `toolshift.agent_kinds` entry points."""
AGENT_KINDS_GROUP = "toolshift.agent_kinds"
MODEL_KINDS = (
    "embedded", "embedded:recent", "oracle", "replay", "openai:<model>", "anthropic:<model>",
    "python:<module>:<factory>[@<model>]", "harness:<name>[@<model>]",
)  # fmt: skip
CHAT_KINDS = ("embedded", "openai:<model>", "anthropic:<model>")
USER_KINDS = ("scripted", "embedded", "openai:<model>", "anthropic:<model>")


LATER_FIELDS = ("skills",)
"""RunConfig fields added after runs were made: left out of the key while unset."""


class RunConfig(BaseModel):
    """Everything that changes what an episode is. Its hash keys the run's files and every episode's id.

    Execution details that do not change an episode (concurrency, executor, output folder) are not here.
    """

    model_config = ConfigDict(extra="forbid")

    format: Literal["toolshift.run/1"] = RUN_FORMAT
    world: str
    model: str
    user: str = "scripted"
    max_turns: int = Field(30, ge=1)
    model_timeout: float = Field(120.0, gt=0)
    tool_timeout: float = Field(30.0, gt=0)
    user_timeout: float = Field(120.0, gt=0)
    episode_timeout: float = Field(900.0, gt=0)
    result_chars: int = Field(2000, ge=100)
    temperature: float | None = None
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=1)
    """Cap on one reply's output tokens, for API models (the embedded model has its own per-turn caps)."""
    seed: int = 0
    base_url: str | None = None
    """The OpenAI-compatible endpoint of the run's `openai:` models (None: api.openai.com)."""
    anthropic_base_url: str | None = None
    """The endpoint of the run's `anthropic:` models (None: api.anthropic.com)."""
    replay_from: str | None = None
    skills: str | None = None
    """A folder of Agent Skills offered to the agent (`toolshift.agents.skills`; a harness's own skills folder)."""

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        check_model_spec(value, role="model")
        return value

    @field_validator("user")
    @classmethod
    def _known_user(cls, value: str) -> str:
        check_model_spec(value, role="user")
        return value

    def limits(self) -> EpisodeLimits:
        return EpisodeLimits(
            max_turns=self.max_turns,
            model_timeout=self.model_timeout,
            tool_timeout=self.tool_timeout,
            user_timeout=self.user_timeout,
            episode_timeout=self.episode_timeout,
            result_chars=self.result_chars,
        )

    def stored(self) -> dict[str, Any]:
        """The configuration as a run file keeps it: fields added later left out while unset, so a run made before
        them reads back equal."""
        dumped = self.model_dump(mode="json")
        for name in LATER_FIELDS:
            if dumped.get(name) is None:
                dumped.pop(name, None)
        return dumped

    def key(self) -> str:
        """12 hex digits of the SHA-256 of the canonical JSON: the resume key. Fields added later are left out
        while unset, so a run made before them keeps its key."""
        body = json.dumps(self.stored(), sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:12]


def is_outside(spec: str) -> bool:
    """A spec naming an agent that owns its loop (`python:…`, `harness:…`)."""
    return spec.partition(":")[0] in OUTSIDE_KINDS


def outside_parts(spec: str) -> tuple[str, str, str]:
    """(kind, what, model) of `python:<what>[@<model>]` or `harness:<what>[@<model>]`; the model defaults to
    `embedded`, the model toolshift serves the agent over the wire APIs."""
    kind, _, rest = spec.partition(":")
    what, at, model = rest.rpartition("@") if "@" in rest else (rest, "", "")
    return kind, what, (model if at else "embedded")


def check_model_spec(spec: str, role: Literal["model", "user", "chat", "any"] = "any") -> None:
    """Refuse a spec that names no agent (`role="model"`), no user simulator (`"user"`), no chat model
    (`"chat"`: embedded or an endpoint, for a writer or a judge), or none of them (`"any"`)."""
    kind, _, name = spec.partition(":")
    if kind in OUTSIDE_KINDS and role == "model":
        what, model = outside_parts(spec)[1:]
        if not what:
            raise BadInputError(f"{spec!r} names no {kind} agent: {kind}:<name>[@<model>]", field=role)
        if (
            model != "oracle"
        ):  # the oracle served as the agent's model: the instrument that checks the plumbing
            check_model_spec(model, role="chat")
        return
    if role == "chat":
        if (kind in ("openai", "anthropic") and name) or spec == "embedded":
            return
        raise BadInputError(
            f"{spec!r} is not a chat model: use one of {', '.join(CHAT_KINDS)}", field="model"
        )
    if (
        (kind in ("openai", "anthropic") and name)
        or spec == "embedded"
        or (spec == "embedded:recent" and role != "user")
    ):
        return
    if (spec in ("oracle", "replay") and role != "user") or (spec == "scripted" and role != "model"):
        return
    kinds = {"model": MODEL_KINDS, "user": USER_KINDS}.get(role, (*MODEL_KINDS, "scripted"))
    what = "user simulator" if role == "user" else "model"
    raise BadInputError(f"unknown {what} {spec!r}: use one of {', '.join(kinds)}", field=role)


def resolve_endpoints(
    model: str, user: str, base_url: str | None = None, *, environ: dict[str, str] | None = None
) -> dict[str, str | None]:
    """The endpoints a run talks to, as they go into its configuration (and so its key): `--base-url`,
    else TOOLSHIFT_BASE_URL, else OPENAI_BASE_URL for `openai:` models; ANTHROPIC_BASE_URL for
    `anthropic:` ones. An endpoint no model of the run uses is left out, so it cannot change the key."""
    env = os.environ if environ is None else environ
    if is_outside(model):  # the model an outside agent is served is the one that talks to an endpoint
        model = outside_parts(model)[2]
    kinds = {model.partition(":")[0], user.partition(":")[0]}
    openai_url = base_url or env.get("TOOLSHIFT_BASE_URL") or env.get("OPENAI_BASE_URL") or None
    anthropic_url = env.get("ANTHROPIC_BASE_URL") or None
    return {
        "base_url": openai_url if "openai" in kinds else None,
        "anthropic_base_url": anthropic_url if "anthropic" in kinds else None,
    }


def episode_seed(config: RunConfig, task_id: str, trial: int) -> int:
    """A stable per-episode seed: the same episode samples the same way on any machine or executor."""
    return zlib.crc32(f"{config.seed}:{task_id}:{trial}".encode())


def make_model(
    spec: str,
    config: RunConfig,
    *,
    seed: int,
    on_rate_limit: RateLimitListener | None = None,
    role: str = "agent",
    task: Task | None = None,
) -> ChatModel:
    """A chat model for `embedded`, `openai:<name>` or `anthropic:<name>` (`role`: agent or user); for
    `python:…` and `harness:…` (as the agent), an agent that owns its loop, made by its entry point for `task`."""
    if is_outside(spec) and role == "agent":
        return outside_agent(spec, config, seed=seed, task=task)  # type: ignore[return-value]
    if spec in ("embedded", "embedded:recent"):
        from toolshift.agents.embedded import EmbeddedModel

        temperature = 0.7 if config.temperature is None else config.temperature
        pick = "recent" if spec == "embedded:recent" else "model"  # the rule that copies the most recent span
        return EmbeddedModel(temperature=temperature, seed=seed, role=role, pick=pick)
    kind, _, name = spec.partition(":")
    if kind == "openai":
        from toolshift.agents.openai_backend import OpenAIChatModel

        return OpenAIChatModel(
            name,
            base_url=config.base_url,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            on_rate_limit=on_rate_limit,
        )
    if kind == "anthropic":
        from toolshift.agents.anthropic_backend import AnthropicChatModel

        return AnthropicChatModel(
            name,
            base_url=config.anthropic_base_url,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            on_rate_limit=on_rate_limit,
        )
    raise ModelConfigError(f"{spec!r} is not a chat model")


def make_agent(
    config: RunConfig,
    task: Task,
    trial: int,
    *,
    recorded: dict[tuple[str, int], Episode] | None = None,
    shared: ChatModel | None = None,
    on_rate_limit: RateLimitListener | None = None,
) -> ChatModel:
    """The agent for one episode: a scripted policy, or a chat model (`shared` when it is stateless)."""
    from toolshift.agents import policies

    if config.model == "oracle":
        return policies.oracle(task)
    if config.model == "replay":
        episode = (recorded or {}).get((task.id, trial)) or (recorded or {}).get((task.id, 0))
        if episode is None:
            raise BadInputError(f"no recorded episode for task {task.id!r}", source=config.replay_from)
        return policies.replay(episode)
    if shared is not None:
        return shared
    return make_model(
        config.model,
        config,
        seed=episode_seed(config, task.id, trial),
        on_rate_limit=on_rate_limit,
        task=task,
    )


def make_user(
    config: RunConfig, task: Task, trial: int, *, on_rate_limit: RateLimitListener | None = None
) -> UserSimulator:
    fixed = user_for_task(task)  # tasks with scripted turns (BFCL, AgentDojo) speak their own script
    if fixed is not None:
        return fixed
    if config.user == "scripted":
        return ScriptedUser(task.public_request, task.instruction)
    model = make_model(
        config.user, config, seed=episode_seed(config, task.id, trial) + 1, on_rate_limit=on_rate_limit
    )
    return LLMUser(model, task.public_request, task.instruction, timeout=config.user_timeout)


def outside_agent(spec: str, config: RunConfig, *, seed: int, task: Task | None = None) -> Any:
    """A fresh agent that owns its loop, for one episode: the `toolshift.agent_kinds` entry point named by the
    spec's kind (`python`, `harness`, or one an installed package adds) makes it from the spec (and the task,
    which `…@oracle` needs: the measuring instrument served as the agent's model)."""
    from importlib.metadata import entry_points

    kind = spec.partition(":")[0]
    found = [ep for ep in entry_points(group=AGENT_KINDS_GROUP) if ep.name == kind]
    if not found:
        raise ModelConfigError(
            f"no agent kind {kind!r} is installed (entry points {AGENT_KINDS_GROUP!r}): reinstall toolshift"
        )
    return found[0].load()(spec, config, seed=seed, task=task)


def shares_model(config: RunConfig) -> bool:
    """API models hold no per-episode state, so one client serves every episode of a run."""
    return config.model.split(":", 1)[0] in ("openai", "anthropic")


def load_recorded(path: str) -> dict[tuple[str, int], Episode]:
    """Recorded episodes by (task id, trial), for `replay`."""
    from pathlib import Path

    from toolshift.traces.store import iter_episodes

    out: dict[tuple[str, int], Episode] = {}
    for episode in iter_episodes(Path(path)):
        out.setdefault((episode.task_id, episode.trial), episode)
    return out


def describe(config: RunConfig) -> dict[str, Any]:
    return {"run": config.key(), **config.stored()}
