"""How much each episode counts when a flow learns from many agents' runs: once each, an agent's trials of one
task as one, or every agent alike.

A flow's counts (a site's habit, a binding's agreements, a walk's ranks) are sums over episodes. Pooled as they
come, an agent that ran every task four times counts four times as much as one that ran each once, and an agent
with a hundred tasks drowns one with twenty. The weighting says how the counts are summed (`LearnedFrom.weighting`):

- `episodes`: every episode counts 1 (every flow before format 8);
- `tasks`: an agent's k trials of one task count 1/k each: a task the agent ran counts once, however often;
- `agents`: that, scaled so every agent's episodes sum to the same total, the mean of the agents' task counts
  (an agent with T tasks counts T̄/T per task), so the counts sum to the same total as `tasks`.

Which one a flow uses is chosen by cross-validation over agents on training data (`toolshift.flows.agentfolds`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import get_args

from toolshift.errors import BadInputError
from toolshift.flows.model import AgentShare, LearnedFrom, Weighting
from toolshift.flows.timeline import Timeline

WEIGHTINGS: tuple[Weighting, ...] = get_args(Weighting)


def episode_weights(
    timelines: Sequence[Timeline], weighting: Weighting = "episodes"
) -> dict[str, int | float]:
    """Each episode's weight by its id (`episodes`: the integer 1, so unweighted counts stay whole numbers)."""
    if weighting not in WEIGHTINGS:
        raise BadInputError(
            f"a weighting is one of {', '.join(WEIGHTINGS)}, not {weighting!r}", field="weighting"
        )
    if weighting == "episodes":
        return {t.episode_id: 1 for t in timelines}
    trials = Counter((t.agent, t.task_id) for t in timelines)
    weights: dict[str, int | float] = {t.episode_id: 1 / trials[(t.agent, t.task_id)] for t in timelines}
    if weighting == "agents":
        tasks = Counter(agent for agent, _ in trials)
        mean = sum(tasks.values()) / len(tasks) if tasks else 0.0
        weights = {t.episode_id: weights[t.episode_id] * mean / tasks[t.agent] for t in timelines}
    return weights


def agent_shares(timelines: Sequence[Timeline], weights: dict[str, int | float]) -> dict[str, AgentShare]:
    """Per agent: its episodes, tasks and summed weight (a flow's provenance, `LearnedFrom.by_agent`)."""
    episodes: Counter[str] = Counter()
    tasks: dict[str, set[str]] = {}
    weight: Counter[str] = Counter()
    for t in timelines:
        episodes[t.agent] += 1
        tasks.setdefault(t.agent, set()).add(t.task_id)
        weight[t.agent] += weights.get(t.episode_id, 1)
    return {
        agent: AgentShare(episodes=episodes[agent], tasks=len(tasks[agent]), weight=round(weight[agent], 9))
        for agent in sorted(episodes)
    }


def describe_agents(learned: LearnedFrom) -> str:
    """One line: the agents a flow learned from, with each one's share where the flow weighs them."""
    shares = learned.by_agent
    named = [
        f"{a} ({shares[a].episodes} episodes, {shares[a].tasks} tasks, weight {shares[a].weight:g})"
        if a in shares
        else a
        for a in learned.agents
    ]
    return f"learned from {len(learned.agents)} agents (weighed by {learned.weighting}): " + ", ".join(named)
