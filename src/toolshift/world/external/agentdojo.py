"""AgentDojo's suites as worlds: their environments, tools, user tasks and utility checks, from `agentdojo`.

A world `agentdojo:<suite>.<user task>` (e.g. `agentdojo:banking.user_task_0`) is the suite's default
environment (the injection vectors at their benign defaults, as AgentDojo runs a suite without attacks),
after the task's own `init_environment`; its tools are the suite's functions with their pydantic argument
schemas, run through AgentDojo's `FunctionsRuntime` and shown as AgentDojo shows results to its agents
(`tool_result_to_str`). Only benign user tasks are served; injection tasks are not.

Judging is AgentDojo's own utility check (`utility_from_traces`, else `utility`) on the model's last
answer, the environment before the task ran, the environment after it, and the calls made.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
from dataclasses import dataclass
from typing import Any

from toolshift.errors import BadInputError
from toolshift.models import GoldCall, RowChange, ScriptedTurn, Task, UserInstruction
from toolshift.world.external.objects import ExternalDomain, ExternalSpec, ObjectWorld, View, jsonable
from toolshift.world.state.tools import Tool
from toolshift.world.toolerror import ToolError

PACKAGE = "agentdojo"
FAMILY = "agentdojo"
JUDGE = "agentdojo-utility"
SUITES = ("workspace", "slack", "banking", "travel")
BENCHMARK_VERSION = "v1.2.2"
"""The newest suite version the pinned agentdojo ships; tasks are read at this version."""

READ_VERBS = ("get", "search", "read", "list", "check")
_lock = threading.Lock()
"""Leading words of AgentDojo functions that change no environment state; the rest are labelled `write`."""


def available() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def require() -> None:
    if not available():
        raise BadInputError(
            "AgentDojo worlds need the agentdojo package: pip install 'toolshift[agentdojo]' (or `make extras`)",
            source=FAMILY,
        )


@functools.cache
def suite(name: str) -> Any:
    require()
    if name not in SUITES:
        raise BadInputError(f"unknown AgentDojo suite {name!r} (known: {', '.join(SUITES)})")
    from agentdojo.task_suite.load_suites import get_suite

    return get_suite(BENCHMARK_VERSION, name)


def task_ids(suite_name: str) -> list[str]:
    """The suite's user task ids in number order."""
    ids = list(suite(suite_name).user_tasks)
    return sorted(ids, key=lambda t: int(re.sub(r"\D", "", t) or 0))


def split_name(name: str) -> tuple[str, str]:
    """`banking.user_task_0` → (`banking`, `user_task_0`); bad names are bad input."""
    suite_name, _, task_id = name.partition(".")
    if suite_name not in SUITES or not re.fullmatch(r"user_task_\d{1,4}", task_id):
        raise BadInputError(
            f"not an AgentDojo task {name!r}: expected <suite>.user_task_<n>, suites {', '.join(SUITES)}"
        )
    if task_id not in suite(suite_name).user_tasks:
        raise BadInputError(f"AgentDojo suite {suite_name} has no {task_id}")
    return suite_name, task_id


class DojoState:
    """One AgentDojo environment (a pydantic model) and the suite's functions runtime."""

    def __init__(self, suite_name: str, env: Any) -> None:
        self.suite_name = suite_name
        self.env = env

    def clone(self) -> DojoState:
        return DojoState(self.suite_name, self.env.model_copy(deep=True))

    def view(self) -> View:
        """The environment's fields (inbox, calendar, bank account, ...) as JSON."""
        dumped = jsonable(self.env.model_dump(mode="json"))
        return {k: (v if isinstance(v, dict) else {"value": v}) for k, v in dumped.items()}

    def invoke(self, function: str, args: dict[str, Any]) -> Any:
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime

        result, error = FunctionsRuntime(suite(self.suite_name).tools).run_function(self.env, function, args)
        if error is not None:
            raise ToolError("tool_error", error)
        return tool_result_to_str(result)


_defaults: dict[str, Any] = {}


def default_environment(suite_name: str) -> Any:
    """A copy of the suite's default environment (injection vectors at their benign defaults).

    Read once per suite: AgentDojo parses its YAML (about a second for workspace) for every task it runs."""
    with _lock:
        env = _defaults.get(suite_name)
    if env is None:
        env = suite(suite_name).load_and_inject_default_environment({})
        with _lock:
            _defaults[suite_name] = env
    return env.model_copy(deep=True)


def initial_environment(suite_name: str, task_id: str) -> Any:
    """The suite's default environment after the task's `init_environment`: where the task starts."""
    task = suite(suite_name).get_user_task_by_id(task_id)
    return task.init_environment(default_environment(suite_name))


@functools.cache
def system_message() -> str:
    """AgentDojo's default system message, the policy its agents are given."""
    import importlib.resources

    import yaml

    text = (importlib.resources.files(PACKAGE) / "data" / "system_messages.yaml").read_text(encoding="utf-8")
    messages = yaml.safe_load(text)
    return str(messages.get("default", "")) if isinstance(messages, dict) else ""


def _effect(name: str) -> str:
    return "read" if name.split("_", 1)[0] in READ_VERBS else "write"


@functools.cache
def _tools(suite_name: str) -> tuple[Tool, ...]:
    return tuple(
        Tool(
            name=f.name,
            description=f.description,
            input_schema=f.parameters.model_json_schema(),
            effect=_effect(f.name),  # type: ignore[arg-type]
            handler=functools.partial(_handle, f.name),
            meta={"kind": "agentdojo", "suite": suite_name},
        )
        for f in suite(suite_name).tools
    )


def _handle(function: str, state: DojoState, args: dict[str, Any]) -> Any:
    return state.invoke(function, args)


_domains: dict[str, ExternalDomain] = {}


def load_domain(name: str) -> ExternalDomain:
    """The world of one user task, `<suite>.<user task>` (cached per process)."""
    with _lock:
        if name in _domains:
            return _domains[name]
    suite_name, task_id = split_name(name)
    spec = ExternalSpec(
        name=f"{FAMILY}:{name}",
        title=f"AgentDojo {suite_name}",
        description=f"AgentDojo {BENCHMARK_VERSION} suite {suite_name}, environment of {task_id}",
        policy=system_message(),
    )
    domain = ExternalDomain(
        spec,
        list(_tools(suite_name)),
        lambda: DojoState(suite_name, initial_environment(suite_name, task_id)),
        schema_checked=False,  # AgentDojo's runtime validates (and coerces) with the functions' pydantic models
    )
    with _lock:
        _domains[name] = domain
    return domain


def _reproducible(changes: list[RowChange], name: str, gold: list[GoldCall]) -> list[RowChange]:
    """Δgold without the leaves a second replay of the reference does not reproduce.

    AgentDojo stamps the emails and events its tools create with the wall clock (`datetime.now()`), so
    those leaves differ in every run and no agent could match them; its utility checks never look at
    them. Leaves that two replays agree on are kept (D103)."""
    world = ObjectWorld(load_domain(name))
    before = world.snapshot()
    for g in gold:
        world.call(g.tool, g.arguments)
    again = {
        (c.table, c.key, c.field, c.op, repr(c.before), repr(c.after)) for c in world.changes_since(before)
    }
    return [c for c in changes if (c.table, c.key, c.field, c.op, repr(c.before), repr(c.after)) in again]


@dataclass
class Verdict:
    utility: bool
    info: dict[str, Any]


def judge(
    name: str, pre: DojoState, post: DojoState, model_output: str, calls: list[tuple[str, dict[str, Any]]]
) -> Verdict:
    """AgentDojo's utility check of one user task, as `TaskSuite.run_task_with_pipeline` makes it."""
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.types import text_content_block_from_string

    suite_name, task_id = split_name(name)
    s = suite(suite_name)
    task = s.get_user_task_by_id(task_id)
    trace = [FunctionCall(function=n, args=dict(a)) for n, a in calls]
    utility = s._check_user_task_utility(
        task, [text_content_block_from_string(model_output)], pre.env, post.env, trace
    )
    return Verdict(bool(utility), {"suite": suite_name, "user_task": task_id, "version": BENCHMARK_VERSION})


def task_for(name: str) -> Task:
    """A user task as a toolshift task: one scripted turn (the prompt), the ground truth as the gold path,
    and AgentDojo's ground-truth answer as the reply that closes it. A ground-truth call that fails on
    the world is bad input naming the task and call."""
    suite_name, task_id = split_name(name)
    user_task = suite(suite_name).get_user_task_by_id(task_id)
    world = ObjectWorld(load_domain(name))
    before = world.snapshot()
    state: DojoState = world.state  # type: ignore[assignment]
    gold: list[GoldCall] = []
    for i, call in enumerate(user_task.ground_truth(state.env.model_copy(deep=True))):
        args = jsonable(dict(call.args))
        result = world.call(call.function, args)
        if not result.ok:
            raise BadInputError(
                f"ground-truth call {call.function} failed: {result.error}",
                source=f"agentdojo {BENCHMARK_VERSION}",
                record=name,
                field=f"ground_truth[{i}]",
            )
        gold.append(
            GoldCall(tool=call.function, arguments=args, result=result.result, function=call.function)
        )
    expected = _reproducible(world.changes_since(before), name, gold)
    prompt = user_task.PROMPT
    return Task(
        id=name,
        domain=f"{FAMILY}-{suite_name}",
        public_request=prompt,
        instruction=UserInstruction(intent=prompt),
        gold_path=gold,
        base_functions=[g.tool for g in gold],
        expected_changes=expected,
        turns=[ScriptedTurn(text=prompt, gold_calls=len(gold), reply=user_task.GROUND_TRUTH_OUTPUT or None)],
        judge=JUDGE,
        difficulty={
            "suite": suite_name,
            "path_length": len(gold),
            "agentdojo": user_task.DIFFICULTY.name.lower(),
        },
    )
