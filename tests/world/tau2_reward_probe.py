"""Run under τ²-bench's own Python (tests/peers.py): τ²'s evaluator's reward for each mutated case.

Not a test module and never imports toolshift. `tests/world/test_tau2_reward.py` writes the cases
(`tests/tau2_mutations.py`: per case a task, the assistant's tool calls, its closing text and how the
episode ended); this script plays each one as a conversation in τ²-bench's own environment (a user
opening, each call answered by `Environment.get_response`, the closing text, the user's `###STOP###`),
makes it a `SimulationRun` and scores it with `tau2.evaluator.evaluator.evaluate_simulation`
(`EvaluationType.ALL`, τ²'s default). The environments are τ²'s own, registered as a τ² domain whose
database is rebuilt from the shared files for every environment τ² asks for (its snapshot lacks
airline's db.json).

τ² scores NL assertions with an LLM, and none runs here: for a task with NL assertions and
NL_ASSERTION in its reward_basis, the task is scored with NL_ASSERTION taken out of its basis, and
the case says so (`nl_dropped`). Also reported: τ²'s tool types per domain (`get_tool_types`).

    python tau2_reward_probe.py SHARED CASES.json OUT.json
    python tau2_reward_probe.py reeval SHARED RESULTS OUT.json

`reeval` loads a Results (toolshift's `export-tau2` of the cases' episodes) with τ²'s own model and
re-scores every simulation with τ²'s `compute_simulation_rewards` (what `tau2 evaluate-trajs` runs),
its domain (the Results' `domain_name`) registered as above, and NL_ASSERTION dropped as above.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import RewardType, Task
from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.environment import get_environment as airline_environment
from tau2.domains.retail.data_model import RetailDB
from tau2.domains.retail.environment import get_environment as retail_environment
from tau2.environment.toolkit import get_tool_types
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.registry import registry

ENDINGS = {"user_stop": TerminationReason.USER_STOP, "max_turns": TerminationReason.MAX_STEPS}


def airline_data(shared: Path) -> dict[str, Any]:
    folder = shared / "data" / "tau-bench" / "airline"
    users = json.loads((folder / "users.json").read_text())
    return {
        "flights": json.loads((folder / "flights.json").read_text()),
        "users": {uid: {"user_id": uid, **u} for uid, u in users.items()},
        "reservations": json.loads((folder / "reservations.json").read_text()),
    }


def retail_data(shared: Path) -> dict[str, Any]:
    return json.loads((shared / "data" / "tau2-bench" / "retail" / "db.json").read_text())


DOMAINS = {
    "airline": (airline_data, FlightDB, airline_environment),
    "retail": (retail_data, RetailDB, retail_environment),
}


def register(shared: Path, domain: str, name: str | None = None) -> tuple[str, Any]:
    """τ²'s environment of a domain over the shared data, registered under a name of its own."""
    load, db_class, environment = DOMAINS[domain]
    raw = json.dumps(load(shared))

    def make(solo_mode: bool = False, **_: Any) -> Any:
        return environment(db=db_class.model_validate_json(raw), solo_mode=solo_mode)

    name = name or f"toolshift-shared-{domain}"
    registry.register_domain(make, name)
    return name, make


def play(make: Any, case: dict[str, Any]) -> SimulationRun:
    """The case as a τ² conversation, each call answered by τ²'s own environment."""
    env = make()
    messages: list[Any] = [UserMessage(role="user", content="Hello, I need help with my request.")]
    for i, (name, arguments) in enumerate(case["calls"]):
        call = ToolCall(id=f"call_{i}", name=name, arguments=arguments, requestor="assistant")
        messages.append(AssistantMessage(role="assistant", tool_calls=[call]))
        messages.append(env.get_response(call))
    messages.append(AssistantMessage(role="assistant", content=case["text"]))
    messages.append(UserMessage(role="user", content="Thank you, that is all. ###STOP###"))
    return SimulationRun(
        id=case["id"],
        task_id=case["task_id"],
        start_time="2026-01-01T00:00:00",
        end_time="2026-01-01T00:00:00",
        duration=0.0,
        termination_reason=ENDINGS[case["termination"]],
        messages=messages,
    )


def without_llm(task: Task) -> tuple[Task, bool]:
    """The task as scored without an LLM: NL_ASSERTION out of the basis when it has assertions to judge."""
    criteria = task.evaluation_criteria
    if criteria is None or RewardType.NL_ASSERTION not in criteria.reward_basis or not criteria.nl_assertions:
        return task, False
    copy = task.model_copy(deep=True)
    copy.evaluation_criteria.reward_basis = [b for b in criteria.reward_basis if b != RewardType.NL_ASSERTION]
    return copy, True


def main(shared: Path, cases_path: Path, out_path: Path) -> None:
    cases = json.loads(cases_path.read_text())
    out: dict[str, Any] = {"cases": {}, "tool_types": {}, "seconds": {}}
    for domain in sorted({c["domain"] for c in cases}):
        started = time.perf_counter()
        name, make = register(shared, domain)
        out["tool_types"][domain] = {k: v.value for k, v in get_tool_types(make().tools).items()}
        tasks_file = shared / "data" / "tau2-bench" / domain / "tasks.json"
        tasks = {t["id"]: Task.model_validate(t) for t in json.loads(tasks_file.read_text())}
        for case in (c for c in cases if c["domain"] == domain):
            task, dropped = without_llm(tasks[case["task_id"]])
            info = evaluate_simulation(
                play(make, case), task, EvaluationType.ALL, solo_mode=False, domain=name
            )
            out["cases"][case["id"]] = {"reward_info": info.model_dump(mode="json"), "nl_dropped": dropped}
        out["seconds"][domain] = round(time.perf_counter() - started, 2)
    out_path.write_text(json.dumps(out, indent=1))


def reeval(shared: Path, results_path: Path, out_path: Path) -> None:
    from tau2.data_model.simulation import Results
    from tau2.metrics.agent_metrics import compute_metrics
    from tau2.scripts.evaluate_trajectories import compute_simulation_rewards

    results = Results.load(results_path)
    name = results.info.environment_info.domain_name
    register(shared, name.removeprefix("tau2_"), name)
    dropped = {}
    for i, task in enumerate(results.tasks):
        results.tasks[i], dropped[task.id] = without_llm(task)
    graded = compute_simulation_rewards(results, EvaluationType.ALL)
    out = {
        "as_written": {s.id: s.reward_info.model_dump(mode="json") for s in results.simulations},
        "reeval": {s.id: s.reward_info.model_dump(mode="json") for s in graded.simulations},
        "nl_dropped": dropped,
        "metrics": compute_metrics(results).as_dict(),
    }
    out_path.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    if sys.argv[1] == "reeval":
        reeval(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
