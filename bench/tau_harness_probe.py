"""Run under τ²-bench's Python (tests/peers.py): the gold replay of the airline tasks in τ²-bench's or τ-bench v1's harness.

Not imported by toolshift, and it never imports toolshift. `bench/bench_tau2_side_by_side.py`
runs it and compares its per-task rewards and seconds with our oracle replay.

    python tau_harness_probe.py tau2 OUT.json
        τ²-bench (TAU2_DATA_DIR must hold the airline db.json): per task, τ²'s Orchestrator runs a
        scripted gold agent (a measuring instrument: the task's expected actions, one per turn, then a
        reply stating the task's communicate_info) against a scripted user in a fresh environment,
        and τ²'s `evaluate_simulation` (EvaluationType.ALL) gives the reward.
    python tau_harness_probe.py taubench TAU_BENCH_DIR OUT.json
        τ-bench v1 (a checkout of sierra-research/tau-bench, not part of this project): per test task,
        a fresh `MockAirlineDomainEnv` (human user strategy: no model), every gold action through
        `env.step`, the task's outputs said by the agent, then `env.calculate_reward()`.

Seconds are the replay loop only (imports and the first environment are timed apart).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def tau2(out: Path) -> None:
    t0 = time.perf_counter()
    from tau2.agent.base_agent import HalfDuplexAgent
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.orchestrator.orchestrator import Orchestrator
    from tau2.registry import registry
    from tau2.user.user_simulator_base import HalfDuplexUser, UserState

    class GoldAgent(HalfDuplexAgent):
        def __init__(self, tools, domain_policy, actions, reply):
            super().__init__(tools=tools, domain_policy=domain_policy)
            self.actions, self.reply = actions, reply

        def get_init_state(self, message_history=None):
            return 0

        def generate_next_message(self, message, state):
            if state < len(self.actions):
                a = self.actions[state]
                call = ToolCall(id=f"call_{state}", name=a.name, arguments=a.arguments)
                return AssistantMessage(role="assistant", tool_calls=[call]), state + 1
            return AssistantMessage(role="assistant", content=self.reply), state + 1

        def is_stop(self, message):
            return False

        def set_seed(self, seed):
            pass

    class ScriptedUser(HalfDuplexUser):
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

    tasks = registry.get_tasks_loader("airline")()
    make_env = registry.get_env_constructor("airline")
    make_env()
    imports = time.perf_counter() - t0
    rewards: dict[str, float] = {}
    seconds: dict[str, float] = {}
    started, cpu = time.perf_counter(), time.process_time()
    for task in tasks:
        t = time.perf_counter()
        criteria = task.evaluation_criteria
        env = make_env()
        reply = " ".join(criteria.communicate_info or []) or "Done: your request is handled."
        agent = GoldAgent(env.get_tools(), env.get_policy(), criteria.actions or [], reply)
        user = ScriptedUser(str(task.user_scenario.instructions))
        sim = Orchestrator("airline", agent, user, env, task, max_steps=60, max_errors=20, seed=0).run()
        rewards[task.id] = evaluate_simulation(
            sim, task, EvaluationType.ALL, solo_mode=False, domain="airline"
        ).reward
        seconds[task.id] = time.perf_counter() - t
    total, cpu = time.perf_counter() - started, time.process_time() - cpu
    result = {"rewards": rewards, "seconds": seconds, "total": total, "cpu": cpu, "imports": imports}
    out.write_text(json.dumps(result))


def taubench(root: Path, out: Path) -> None:
    t0 = time.perf_counter()
    sys.path.insert(0, str(root))
    from tau_bench.envs.airline import MockAirlineDomainEnv
    from tau_bench.envs.airline.tasks_test import TASKS
    from tau_bench.types import RESPOND_ACTION_NAME, Action

    MockAirlineDomainEnv(user_strategy="human", task_index=0)
    imports = time.perf_counter() - t0
    rewards: dict[str, float] = {}
    seconds: dict[str, float] = {}
    started, cpu = time.perf_counter(), time.process_time()
    actions = {}
    for i, task in enumerate(TASKS):
        actions[str(i)] = [[a.name, a.kwargs] for a in task.actions if a.name != RESPOND_ACTION_NAME]
        t = time.perf_counter()
        env = MockAirlineDomainEnv(user_strategy="human", task_index=i)
        for action in task.actions:
            if action.name != RESPOND_ACTION_NAME:
                env.step(action)
        if task.outputs:  # the agent says the outputs (env.step would also ask the user model to answer)
            env.actions.append(Action(name=RESPOND_ACTION_NAME, kwargs={"content": " ".join(task.outputs)}))
        rewards[str(i)] = env.calculate_reward().reward
        seconds[str(i)] = time.perf_counter() - t
    total, cpu = time.perf_counter() - started, time.process_time() - cpu
    result = {"rewards": rewards, "seconds": seconds, "total": total, "cpu": cpu, "imports": imports}
    out.write_text(json.dumps({**result, "actions": actions}))


def main(argv: list[str]) -> Any:
    if argv[:1] == ["tau2"] and len(argv) == 2:
        return tau2(Path(argv[1]))
    if argv[:1] == ["taubench"] and len(argv) == 3:
        return taubench(Path(argv[1]), Path(argv[2]))
    sys.exit("usage: tau_harness_probe.py tau2 OUT.json | taubench TAU_BENCH_DIR OUT.json")


if __name__ == "__main__":
    main(sys.argv[1:])
