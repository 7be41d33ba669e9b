"""Run under τ²-bench's Python (tests/peers.py): one gold episode at a time in τ²-bench's or τ-bench v1's harness.

Not imported by toolshift, and it never imports toolshift. `bench/bench_tau2_side_by_side.py`
runs it as a server and interleaves its episodes with ours (bench/paired.py), task by task.

    python tau_harness_probe.py tau2
        τ²-bench (TAU2_DATA_DIR must hold the airline db.json): per task, a fresh environment, τ²'s
        Orchestrator running a scripted gold agent (a measuring instrument: the task's expected actions,
        one per turn, then a reply stating the task's communicate_info) against a scripted user, and
        τ²'s `evaluate_simulation` (EvaluationType.ALL) for the reward.
    python tau_harness_probe.py taubench TAU_BENCH_DIR
        τ-bench v1 (a checkout of sierra-research/tau-bench, not part of this project): per test task,
        a fresh `MockAirlineDomainEnv` (human user strategy: no model), every gold action through
        `env.step`, the task's outputs said by the agent, then `env.calculate_reward()`.

Protocol: one JSON line {"ready": true, "tasks": {id: gold actions}, "imports": s} once the imports and
a first environment are done, then, for each task id read from stdin, that task's episode and one line
{"id", "reward", "wall", "cpu"} (seconds of this process). The harness's own prints go to stderr, so
stdout carries only these lines.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def tau2_setup() -> tuple[dict[str, Any], Any, float]:
    """τ²'s airline tasks by id, an episode runner for one task, and the seconds imports + first env took."""
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

    tasks = {task.id: task for task in registry.get_tasks_loader("airline")()}
    make_env = registry.get_env_constructor("airline")
    make_env()

    def episode(task: Any) -> float:
        """One full episode: fresh environment, Orchestrator (gold agent, scripted user), evaluate_simulation."""
        criteria = task.evaluation_criteria
        env = make_env()
        reply = " ".join(criteria.communicate_info or []) or "Done: your request is handled."
        agent = GoldAgent(env.get_tools(), env.get_policy(), criteria.actions or [], reply)
        user = ScriptedUser(str(task.user_scenario.instructions))
        sim = Orchestrator("airline", agent, user, env, task, max_steps=60, max_errors=20, seed=0).run()
        return evaluate_simulation(sim, task, EvaluationType.ALL, solo_mode=False, domain="airline").reward

    return tasks, episode, time.perf_counter() - t0


def taubench_setup(root: Path) -> tuple[dict[str, Any], Any, float]:
    """τ-bench v1's airline test tasks by index, an episode runner for one task, and the setup seconds."""
    t0 = time.perf_counter()
    sys.path.insert(0, str(root))
    from tau_bench.envs.airline import MockAirlineDomainEnv
    from tau_bench.envs.airline.tasks_test import TASKS
    from tau_bench.types import RESPOND_ACTION_NAME, Action

    MockAirlineDomainEnv(user_strategy="human", task_index=0)

    def episode(i: int) -> float:
        """Fresh environment, the gold actions through env.step, the outputs said, calculate_reward."""
        task = TASKS[i]
        env = MockAirlineDomainEnv(user_strategy="human", task_index=i)
        for action in task.actions:
            if action.name != RESPOND_ACTION_NAME:
                env.step(action)
        if task.outputs:  # the agent says the outputs (env.step would also ask the user model to answer)
            env.actions.append(Action(name=RESPOND_ACTION_NAME, kwargs={"content": " ".join(task.outputs)}))
        return env.calculate_reward().reward

    tasks = {str(i): i for i in range(len(TASKS))}
    actions = {
        str(i): [[a.name, a.kwargs] for a in t.actions if a.name != RESPOND_ACTION_NAME]
        for i, t in enumerate(TASKS)
    }
    return {"tasks": tasks, "actions": actions}, episode, time.perf_counter() - t0


def serve(tasks: dict[str, Any], episode: Any, imports: float, actions: dict[str, Any], reply: Any) -> None:
    reply.write(json.dumps({"ready": True, "tasks": actions, "imports": imports}) + "\n")
    for line in sys.stdin:
        task_id = line.strip()
        if not task_id:
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        reward = episode(tasks[task_id])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        reply.write(json.dumps({"id": task_id, "reward": reward, "wall": wall, "cpu": cpu}) + "\n")


def main(argv: list[str]) -> Any:
    if argv not in (["tau2"],) and not (argv[:1] == ["taubench"] and len(argv) == 2):
        sys.exit("usage: tau_harness_probe.py tau2 | taubench TAU_BENCH_DIR")
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if argv == ["tau2"]:
        tasks, episode, imports = tau2_setup()
        actions = {
            k: [[a.name, a.arguments] for a in (t.evaluation_criteria.actions or [])]
            for k, t in tasks.items()
        }
        return serve(tasks, episode, imports, actions, reply)
    found, episode, imports = taubench_setup(Path(argv[1]))
    return serve(found["tasks"], episode, imports, found["actions"], reply)


if __name__ == "__main__":
    main(sys.argv[1:])
