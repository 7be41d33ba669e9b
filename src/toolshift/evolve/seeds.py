"""Seed task sets: the built-in worlds' tasks, a build's sample, and other benchmarks' own tasks.

The built-in worlds' tasks are short errands with the record named (the demo's three clinic tasks and
the same kind on library and freight_depot): a read and a write, Δgold recorded by replaying them.
A sample of a `toolshift bench build` adds the benchmark's synthesised tasks — longer paths from a
user-known value to a write — so a seed set holds tasks at both ends of a solver's range. `world_seeds`
samples the tasks of τ²-bench airline and retail, BFCL multi-turn and AgentDojo as toolshift imports
them, each keeping its benchmark's judge (`tau2-evaluator`, BFCL's checker, AgentDojo's utility).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from toolshift.agents.demo import demo_tasks
from toolshift.agents.tasks import task_from_path
from toolshift.errors import BadInputError
from toolshift.models import Task, UserInstruction


def builtin_world_tasks() -> list[Task]:
    """Nine short tasks on clinic, library and freight_depot (ids given by the user when asked)."""
    tasks = list(demo_tasks())
    tasks += [
        task_from_path(
            "library", "demo-fines", "I'd like to pay my library fines.",
            UserInstruction(intent="Pay all unpaid fines of library card LIB-000180.",
                            facts={"library card number": "LIB-000180"}),
            [("get_member", {"card_number": "LIB-000180"}), ("pay_fines", {"card_number": "LIB-000180"})],
        ),
        task_from_path(
            "library", "demo-renew", "Can I renew my loan, please?",
            UserInstruction(intent="Renew loan LN-000001.", facts={"loan id": "LN-000001"}),
            [("get_loan", {"loan_id": "LN-000001"}), ("renew_loan", {"loan_id": "LN-000001"})],
        ),
        task_from_path(
            "library", "demo-member-email", "Please update the email on my library account.",
            UserInstruction(intent="Change the email of card LIB-000002 to dana.hansen@new.example.",
                            facts={"library card number": "LIB-000002", "new email": "dana.hansen@new.example"}),
            [("get_member", {"card_number": "LIB-000002"}),
             ("update_member", {"card_number": "LIB-000002", "email": "dana.hansen@new.example"})],
        ),
        task_from_path(
            "freight_depot", "demo-inspection", "I need to record a pallet inspection.",
            UserInstruction(intent="Record that pallet PAL-000002 passed its inspection by Sami Kowalski.",
                            facts={"pallet id": "PAL-000002", "inspector": "Sami Kowalski", "result": "passed"}),
            [("depot_get_pallet", {"pallet_id": "PAL-000002"}),
             ("depot_record_inspection", {"pallet_id": "PAL-000002", "inspector": "Sami Kowalski", "result": "passed"})],
        ),
        task_from_path(
            "freight_depot", "demo-cancel-shipment", "Please cancel one of our shipments.",
            UserInstruction(intent="Cancel shipment SHP-000001 and return its pallets to zone Z-002.",
                            facts={"shipment id": "SHP-000001", "return zone": "Z-002"}),
            [("depot_get_shipment", {"shipment_id": "SHP-000001"}),
             ("depot_cancel_shipment", {"shipment_id": "SHP-000001", "return_zone_id": "Z-002"})],
        ),
        task_from_path(
            "library", "demo-lost-copy", "I have lost a library book.",
            UserInstruction(intent="Report copy CP-00001 lost, with a replacement fee of 25.00.",
                            facts={"copy id": "CP-00001", "replacement fee": "25.00"}),
            [("get_copy", {"copy_id": "CP-00001"}), ("report_copy_lost", {"copy_id": "CP-00001", "replacement_fee": 25.0})],
        ),
    ]  # fmt: skip
    return tasks


MAX_CALLS = 64


def parse_calls(spec: str) -> set[int]:
    """Ground-truth lengths from `1,5-9` (numbers and ranges, comma-separated)."""
    out: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        low, dash, high = part.partition("-")
        try:
            a, b = int(low), int(high if dash else low)
        except ValueError:
            raise BadInputError(
                f"{spec!r}: write call counts as numbers or ranges, e.g. 1,5-9", field="calls"
            ) from None
        if not 1 <= a <= b <= MAX_CALLS:
            raise BadInputError(f"{part!r}: a range of call counts within 1-{MAX_CALLS}", field="calls")
        out.update(range(a, b + 1))
    return out


def sample_build(
    build: str | Path,
    per_domain: int,
    *,
    domains: list[str] | None = None,
    seed: int = 0,
    calls: set[int] | None = None,
) -> list[Task]:
    """`per_domain` tasks of each domain of a bench build (the same ones for the same seed), optionally only
    those whose ground truth has one of `calls` calls (to make a seed set at both ends of a solver's range)."""
    from toolshift.bench.build import iter_domain_tasks

    out: list[Task] = []
    for name, tasks in iter_domain_tasks(build):
        if domains and name not in domains:
            continue
        if calls:
            tasks = [t for t in tasks if len(t.gold_path) in calls]
        ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"{seed}:{t.id}".encode()).hexdigest())
        out += ranked[:per_domain]
    if not out:
        raise BadInputError("the build holds no tasks for these domains", source=str(build))
    return out


WORLD_FAMILIES = ("tau2-airline", "tau2-retail", "bfcl", "agentdojo")


def world_seeds(world: str, per_world: int, *, seed: int = 0, calls: set[int] | None = None) -> list[Task]:
    """`per_world` tasks of another benchmark (the same ones for the same seed): `tau2-airline`,
    `tau2-retail`, `bfcl[:<category>]` (default `base`) or `agentdojo[:<suite>]` (default every suite).
    Only tasks whose ground truth changes the world and succeeds on it; τ² tasks that need a starting
    state are left out, and τ² ids get their world's name (`tau2-airline-7`: ids repeat across worlds)."""
    family, _, subset = world.partition(":")
    if family not in WORLD_FAMILIES:
        raise BadInputError(
            f"{world!r}: seeds come from {', '.join(WORLD_FAMILIES)} (bfcl:<category>, agentdojo:<suite>)",
            field="world",
        )
    if family.startswith("tau2-"):
        if subset:
            raise BadInputError(f"{world!r}: a τ² world has no subsets", field="world")
        tasks = _tau2_tasks(family)
    else:
        from toolshift.world.external import export_tasks, require_family

        require_family(family)
        chosen = [subset] if subset else (["base"] if family == "bfcl" else None)
        report = export_tasks(family, subsets=chosen)
        tasks = [t for t in report.tasks if t.expected_changes]
    if calls:
        tasks = [t for t in tasks if len(t.gold_path) in calls]
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"{seed}:{t.id}".encode()).hexdigest())
    if not ranked:
        raise BadInputError(f"{world} has no tasks of these lengths that change the world", field="world")
    return ranked[:per_world]


def _tau2_tasks(name: str) -> list[Task]:
    from toolshift.world.tau2.domains import tau2_world
    from toolshift.world.tau2.tasks import import_tasks, read_tau2_tasks

    world = tau2_world(name)
    needs_state = {t.id for t in read_tau2_tasks(world) if world.initial_calls(t)}
    report = import_tasks(name)
    broken = {f.task_id for f in report.gold_errors}  # our verification replays every call
    return [
        t.model_copy(update={"id": f"{name}-{t.id}", "domain": name})
        for t in report.tasks
        if t.expected_changes and t.id not in needs_state and t.id not in broken
    ]
