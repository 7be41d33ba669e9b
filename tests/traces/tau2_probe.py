"""Run under τ²-bench's own Python (tests/peers.py): its models, metrics and harness on results files.

Not a test module and never imports toolshift; the tests in test_tau2_peer.py run it and read the
JSON it prints. Commands:

    load PATH...              Results.load each path; validation error count and τ²'s metrics
    resave SRC DST LAYOUT     Results.load(SRC).save(DST, format=LAYOUT)
    make-run DST LAYOUT       a run made by τ²'s own orchestrator and evaluator on its mock domain
    same A B                  whether A and B load to the same Results (model_dump), and where not
    reeval PATH               rewards τ²'s `evaluate-trajs` recomputes (its own environment and evaluator)
    batch JSON                a list of [command, *args], run in order in one process
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tau2.agent.base_agent import HalfDuplexAgent
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.data_model.simulation import AgentInfo, Info, Results, UserInfo
from tau2.data_model.tasks import RewardType
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.metrics.agent_metrics import compute_metrics, get_tasks_pass_hat_k, pass_hat_k
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.registry import registry
from tau2.user.user_simulator_base import HalfDuplexUser, UserState


def load(paths: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in paths:
        try:
            results = Results.load(Path(path))
        except ValidationError as exc:
            kinds = Counter(
                ".".join(str(p) for p in e["loc"] if not isinstance(p, int)) + f" ({e['type']})"
                for e in exc.errors()
            )
            out[path] = {"errors": exc.error_count(), "kinds": dict(kinds.most_common(10))}
            continue
        metrics = compute_metrics(results)
        per_task = get_tasks_pass_hat_k(results)
        out[path] = {
            "errors": 0,
            "domain": results.info.environment_info.domain_name,
            "tasks": [t.id for t in results.tasks],
            "task_actions": {t.id: len(t.evaluation_criteria.actions or []) for t in results.tasks},
            "simulations": len(results.simulations),
            "terminations": dict(Counter(s.termination_reason.value for s in results.simulations)),
            "max_steps": results.info.max_steps,
            "max_errors": results.info.max_errors,
            "metrics": metrics.as_dict(),
            "db_match": metrics.db_match_count,
            "db_mismatch": metrics.db_mismatch_count,
            "termination_error": metrics.termination_error,
            "infra_errors": metrics.infra_error_count,
            "pass_hat_k_by_task": {str(k): v for k, v in per_task.to_dict(orient="index").items()},
            "pass_hat_k_check": pass_hat_k(2, 1, 1),
        }
    return out


class GoldAgent(HalfDuplexAgent):
    """A scripted agent (a measuring instrument): calls the task's gold actions one per turn, then replies."""

    def __init__(self, tools, domain_policy, actions, reply):
        super().__init__(tools=tools, domain_policy=domain_policy)
        self.actions, self.reply = actions, reply

    def get_init_state(self, message_history=None):
        return 0

    def generate_next_message(self, message, state):
        if state < len(self.actions):
            action = self.actions[state]
            call = ToolCall(id=f"call_{state}", name=action.name, arguments=action.arguments)
            return AssistantMessage(role="assistant", tool_calls=[call]), state + 1
        return AssistantMessage(role="assistant", content=self.reply), state + 1

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass


class ScriptedUser(HalfDuplexUser):
    """A scripted user (a measuring instrument): states the request, then ends after the agent's reply."""

    def __init__(self, request):
        super().__init__()
        self.request, self.said = request, 0

    def get_init_state(self, message_history=None):
        return UserState(messages=[], system_messages=[])

    def generate_next_message(self, message, state):
        self.said += 1
        text = self.request if self.said == 1 else "Thanks, that is all. ###STOP###"
        return UserMessage(role="user", content=text), state

    def set_seed(self, seed):
        pass


def make_run(dst: str, layout: str) -> dict[str, Any]:
    """Two trials of the mock domain's DB-judged tasks: the gold agent, then an agent that only replies."""
    tasks = [
        t
        for t in registry.get_tasks_loader("mock")()
        if t.evaluation_criteria is not None
        and RewardType.NL_ASSERTION not in t.evaluation_criteria.reward_basis
        and t.initial_state is None
        and t.evaluation_criteria.actions
        and not t.evaluation_criteria.env_assertions
    ][:2]
    simulations = []
    for trial in (0, 1):
        for task in tasks:
            env = registry.get_env_constructor("mock")()
            actions = task.evaluation_criteria.actions if trial == 0 else []
            agent = GoldAgent(env.get_tools(), env.get_policy(), actions, "Done: your request is handled.")
            user = ScriptedUser(str(task.user_scenario.instructions))
            sim = Orchestrator("mock", agent, user, env, task, max_steps=30, max_errors=10, seed=trial).run()
            sim.trial = trial
            sim.reward_info = evaluate_simulation(
                sim, task, EvaluationType.ALL, solo_mode=False, domain="mock"
            )
            simulations.append(sim)
    env = registry.get_env_constructor("mock")()
    results = Results(
        info=Info(
            git_commit="a2c0247",
            num_trials=2,
            max_steps=30,
            max_errors=10,
            seed=0,
            user_info=UserInfo(implementation="scripted_user"),
            agent_info=AgentInfo(implementation="gold_agent", llm=None),
            environment_info=env.get_info(include_tool_info=True),
        ),
        tasks=tasks,
        simulations=simulations,
    )
    if layout == "dir":
        Path(dst).mkdir(parents=True, exist_ok=True)  # else τ² writes simulations/ beside the file DST
    results.save(Path(dst), format=layout)
    return {
        "tasks": [t.id for t in tasks],
        "rewards": [s.reward_info.reward for s in simulations],
        "reward_by_id": {s.id: s.reward_info.reward for s in simulations},
        "terminations": [s.termination_reason.value for s in simulations],
        "policy": env.get_policy(),
    }


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'second' if key not in a else 'first'}"
            found = _first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r:.80} vs {b!r:.80}"


def same(a: str, b: str) -> dict[str, Any]:
    left = Results.load(Path(a)).model_dump(mode="json")
    right = Results.load(Path(b)).model_dump(mode="json")
    return {"same": left == right, "first_difference": _first_difference(left, right)}


def run(command: str, args: list[str]) -> Any:
    if command == "load":
        return load(args)
    if command == "resave":
        if args[2] == "dir":
            Path(args[1]).mkdir(parents=True, exist_ok=True)
        Results.load(Path(args[0])).save(Path(args[1]), format=args[2])
        return {"saved": args[1]}
    if command == "make-run":
        return make_run(args[0], args[1])
    if command == "same":
        return same(args[0], args[1])
    if command == "reeval":
        from tau2.scripts.evaluate_trajectories import compute_simulation_rewards

        graded = compute_simulation_rewards(Results.load(Path(args[0])), EvaluationType.ALL)
        return {s.id: s.reward_info.reward for s in graded.simulations}
    raise SystemExit(f"unknown command {command!r}")


def _plain(value: Any) -> Any:
    """JSON-safe: NaN (τ²'s mean of no costs) as null, so results compare equal."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def main(argv: list[str]) -> None:
    """`COMMAND ARGS...`, or `batch JSON` with a list of [command, *args] run in order (one import of τ²)."""
    if argv[0] == "batch":
        print(json.dumps(_plain([run(c[0], c[1:]) for c in json.loads(argv[1])])))
    else:
        print(json.dumps(_plain(run(argv[0], argv[1:]))))


if __name__ == "__main__":
    main(sys.argv[1:])
