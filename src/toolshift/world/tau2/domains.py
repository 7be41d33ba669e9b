"""The three τ² worlds: their spec names, data and task files, and how each reads records back as τ² does."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolshift.errors import BadInputError
from toolshift.world.tau2 import files

if TYPE_CHECKING:
    from toolshift.world.tau2.tasks import Tau2Task


@dataclass(frozen=True)
class Tau2World:
    """One imported world: `name` for the CLI (`tau2-airline`), `domain` its spec name, `tau2_domain` τ²'s."""

    name: str
    domain: str
    tau2_domain: str
    module: str
    tasks_file: str
    split_file: str | None
    data_files: tuple[str, ...]
    note: str = ""

    def implementation(self) -> ModuleType:
        import importlib

        return importlib.import_module(self.module)

    def unavailable(self) -> str | None:
        """Why this world cannot be built here (its data missing or altered), or None."""
        return files.unavailable([*self.data_files, self.tasks_file])

    def cannot_import(self, task: Tau2Task) -> str | None:
        """Why a τ² task cannot be a task of this world, or None."""
        from toolshift.world.tau2.tasks import agent_actions

        criteria = task.evaluation_criteria
        if criteria is not None and criteria.env_assertions:
            return (
                "checks environment assertions, which τ²'s evaluator runs as τ² domain functions not imported"
            )
        if criteria is not None:
            for a in criteria.actions or []:
                if (a.requestor or "assistant") != "assistant":
                    return f"expects the user's device action {a.name!r} (the user's device is not imported)"
        state = task.initial_state
        if state is not None:
            if state.initialization_data is not None:
                return "sets its initial state from initialization_data, which this world does not import"
            if state.message_history:
                return "starts from a message history, which this world does not import"
            for call in state.initialization_actions or []:
                if call.env_type != "assistant":
                    return f"initialises the user's device ({call.func_name}), which is not imported"
        compiled = {t.name for t in _tools(self.name)}
        unknown = sorted({a.name for a in agent_actions(task)} - compiled)
        if unknown:
            return f"expects tools this world lacks: {', '.join(unknown)}"
        return None

    def initial_calls(self, task: Tau2Task) -> list[tuple[str, dict[str, Any]]]:
        """The agent-side calls that set up a task's initial state (τ²'s assistant initialization_actions)."""
        state = task.initial_state
        if state is None:
            return []
        return [
            (c.func_name, c.arguments)
            for c in state.initialization_actions or []
            if c.env_type == "assistant"
        ]

    def records(self) -> dict[str, Callable[[Any, str], dict[str, Any] | None]]:
        return self.implementation().RECORDS

    def export(
        self, conn: Any, keys: dict[str, set[str]] | None = None, *, ordered: bool = True
    ) -> dict[str, dict[str, Any]]:
        """The world's state as τ²'s database dict (`keys`: only these records; a deleted one is None).

        Records come in database order; `ordered=False` (with `keys`) sorts them by key instead, without
        reading every record's key: for a comparison that sorts keys anyway (the evaluator's canonical JSON)."""
        impl = self.implementation()
        if keys is not None and not ordered:
            return {
                table: {k: reader(conn, k) for k in sorted(keys.get(table, ()))}
                for table, reader in impl.RECORDS.items()
            }
        order = impl.record_keys(conn)
        wanted = keys if keys is not None else {t: set(ks) for t, ks in order.items()}
        out: dict[str, dict[str, Any]] = {}
        for table, reader in impl.RECORDS.items():
            names = [k for k in order[table] if k in wanted.get(table, set())]
            names += sorted(wanted.get(table, set()) - set(names))
            out[table] = {k: reader(conn, k) for k in names}
        return out

    def changed_records(self, changes: list[Any]) -> dict[str, set[str]]:
        return self.implementation().changed_records(changes)


def _tools(name: str) -> list[Any]:
    from toolshift.world.state.registry import load_domain

    return load_domain(name).tools


WORLDS: dict[str, Tau2World] = {
    w.name: w
    for w in (
        Tau2World(
            name="tau2-airline",
            domain="tau2_airline",
            tau2_domain="airline",
            module="toolshift.world.tau2.airline",
            tasks_file="data/tau2-bench/airline/tasks.json",
            split_file="data/tau2-bench/airline/split_tasks.json",
            data_files=(
                "data/tau-bench/airline/flights.json",
                "data/tau-bench/airline/reservations.json",
                "data/tau-bench/airline/users.json",
                "data/tau2-bench/airline/policy.md",
            ),
            note="τ-bench's airline database (τ²-bench's db.json is built from it), τ²'s 50 tasks",
        ),
        Tau2World(
            name="tau2-retail",
            domain="tau2_retail",
            tau2_domain="retail",
            module="toolshift.world.tau2.retail",
            tasks_file="data/tau2-bench/retail/tasks.json",
            split_file="data/tau2-bench/retail/split_tasks.json",
            data_files=("data/tau2-bench/retail/db.json", "data/tau2-bench/retail/policy.md"),
            note="τ²-bench's retail database and its 114 tasks",
        ),
    )
}


def tau2_world(name: str) -> Tau2World:
    """A τ² world by its CLI name (`tau2-airline`), its spec name (`tau2_airline`) or τ²'s (`airline`)."""
    for w in WORLDS.values():
        if name in (w.name, w.domain, w.tau2_domain):
            return w
    close = difflib.get_close_matches(name, list(WORLDS), n=2)
    hint = f" (did you mean {', '.join(close)}?)" if close else f" (τ² worlds: {', '.join(WORLDS)})"
    raise BadInputError(f"no τ² world {name!r}{hint}")
