"""Run under τ²-bench's own Python (tests/peers.py): replay each task's expected actions in τ²-bench's environment.

Not a test module and never imports toolshift. `tests/world/test_tau2_agreement.py` writes what our
worlds did (the initial database as τ²'s records, and per task each call's outcome and the records
it changed) and runs this script on it, which rebuilds τ²-bench's database from the same shared
files, replays every task's expected actions through τ²-bench's `Environment.make_tool_call` (as its
evaluator does for the gold trajectory: every action, errors caught), and compares record by record:

- the initial databases (every record);
- per task, every record either side changed (the union), τ²'s final record against ours;
- per task, every call's result (τ²'s `to_json_str`, parsed; a string result stays a string) or error
  message against ours;
- per task, every record of ours that τ²'s own record model accepts and dumps unchanged;

and it reports τ²'s tool schemas (what its agent sees), which the test compares with our catalog.

Every record either side changed is compared, and every other record is the initial one on both
sides (checked first), so the comparison covers the whole database. Each task starts from τ²'s model
validating the database JSON afresh (`model_validate_json`, 0.15 s; a `deepcopy` of the dict took 0.7 s).

    python tau2_replay_probe.py SHARED OURS.json OUT.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tau2.data_model.tasks import Task
from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.environment import get_environment as airline_environment
from tau2.domains.retail.data_model import RetailDB
from tau2.domains.retail.environment import get_environment as retail_environment
from tau2.environment.environment import Environment


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


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def first_difference(path: str, ours: Any, theirs: Any) -> str | None:
    """Where two JSON values first differ (types count: 100 and 100.0 differ), or None."""
    if type(ours) is not type(theirs):
        return f"{path}: ours {canonical(ours)[:200]} ({type(ours).__name__}), τ² {canonical(theirs)[:200]} ({type(theirs).__name__})"
    if isinstance(ours, dict):
        for key in list(theirs) + [k for k in ours if k not in theirs]:
            if key not in ours or key not in theirs:
                side = "τ²" if key in theirs else "ours"
                return f"{path}.{key}: only in {side}"
            found = first_difference(f"{path}.{key}", ours[key], theirs[key])
            if found:
                return found
        return None
    if isinstance(ours, list):
        if len(ours) != len(theirs):
            return f"{path}: ours has {len(ours)} elements, τ² {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found = first_difference(f"{path}[{i}]", a, b)
            if found:
                return found
        return None
    return None if ours == theirs else f"{path}: ours {canonical(ours)[:200]}, τ² {canonical(theirs)[:200]}"


def compare_records(
    tables: dict[str, set[str]], ours: dict[str, dict[str, Any]], theirs: dict[str, Any]
) -> str | None:
    for table, keys in tables.items():
        for key in sorted(keys):
            mine, other = ours.get(table, {}).get(key), theirs[table].get(key)
            if mine is None or other is None:
                if mine is not other:
                    return f"{table}[{key}]: {'missing in ours' if mine is None else 'missing in τ²'}"
                continue
            found = first_difference(f"{table}[{key}]", mine, other)
            if found:
                return found
    return None


def model_refusals(db_class: Any, records: dict[str, dict[str, Any]]) -> list[str]:
    """Our records that τ²'s own record models refuse, or dump differently from what we wrote."""
    out = []
    for table, by_key in records.items():
        record_model = db_class.model_fields[table].annotation.__args__[1]  # Dict[str, Model]
        for key, record in by_key.items():
            if record is None:
                continue
            try:
                dumped = record_model.model_validate(record).model_dump()
            except Exception as exc:
                out.append(f"{table}[{key}]: τ²'s {record_model.__name__} refuses it: {exc}"[:400])
                continue
            found = first_difference(f"{table}[{key}] as τ² dumps it", record, dumped)
            if found:
                out.append(found)
    return out


def replay(env: Environment, task: Task) -> list[dict[str, Any]]:
    calls = []
    for action in task.evaluation_criteria.actions or []:
        try:
            resp = env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
        except Exception as exc:  # τ²'s evaluator catches every error of a gold action
            calls.append({"name": action.name, "ok": False, "error": str(exc)})
            continue
        result = resp if isinstance(resp, str) else json.loads(env.to_json_str(resp))
        calls.append({"name": action.name, "ok": True, "result": result})
    return calls


def compare_calls(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[str]:
    out = []
    if len(ours) != len(theirs):
        return [f"ours made {len(ours)} calls, τ² {len(theirs)}"]
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a["ok"] != b["ok"]:
            what = b.get("error") if not b["ok"] else a.get("error")
            out.append(f"step {i} {b['name']}: {'τ² failed' if not b['ok'] else 'ours failed'}: {what}")
        elif not a["ok"] and a["error"] != b["error"]:
            out.append(f"step {i} {b['name']}: error ours {a['error']!r}, τ² {b['error']!r}")
        elif a["ok"]:
            found = first_difference(f"step {i} {b['name']} result", a["result"], b["result"])
            if found:
                out.append(found)
    return out


def main(shared: Path, ours_path: Path, out_path: Path) -> None:
    ours = json.loads(ours_path.read_text())
    out: dict[str, Any] = {"domains": {}}
    for domain, mine in ours["domains"].items():
        started = time.perf_counter()
        load, db_class, environment = DOMAINS[domain]
        data = load(shared)
        raw = json.dumps(data)
        base = db_class.model_validate_json(raw)
        base_dump = base.model_dump()
        every = {t: set(base_dump[t]) | set(mine["initial"].get(t, {})) for t in base_dump}
        tools = environment(db=base).get_tools()
        report: dict[str, Any] = {
            "initial": {"first_difference": compare_records(every, mine["initial"], base_dump)},
            "tools": {t.name: t.openai_schema["function"] for t in tools},
            "tasks": {},
        }
        tasks_file = shared / "data" / "tau2-bench" / domain / "tasks.json"
        tasks = {t["id"]: Task.model_validate(t) for t in json.loads(tasks_file.read_text())}
        for task_id, done in mine["tasks"].items():
            task = tasks[task_id]
            env = environment(db=db_class.model_validate_json(raw))
            calls = replay(env, task)
            final = env.tools.db.model_dump()
            changed = {t: {k for k, v in final[t].items() if base_dump[t].get(k) != v} for t in final}
            for t in changed:
                changed[t] |= {k for k in base_dump[t] if k not in final[t]}
                changed[t] |= set(done["records"].get(t, {}))
            difference = compare_records(changed, done["records"], final)
            refused = model_refusals(db_class, done["records"])
            report["tasks"][task_id] = {
                "first_difference": difference,
                "call_differences": compare_calls(done["calls"], calls),
                "model_refusals": refused,
                "tau2_errors": [
                    f"step {i} {c['name']}: {c['error']}" for i, c in enumerate(calls) if not c["ok"]
                ],
                "changed": {t: len(v) for t, v in changed.items()},
            }
        report["seconds"] = round(time.perf_counter() - started, 2)
        out["domains"][domain] = report
    out_path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
