"""Values a synthesised write takes: plausible amounts, dates, names and notes, and which values the world makes.

A mixin of the synthesizer (`bench.synthesis.Synthesizer`): it reads the spec's seed generators and the
rows at hand, with the synthesizer's seeded random source, so a build stays deterministic.
"""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING, Any

from toolshift.bench.graph import Param
from toolshift.models import RowChange
from toolshift.world.language.spec import DomainSpec, EntitySpec

if TYPE_CHECKING:
    from toolshift.world.state.world import World

_NAMES = ("Alex Morgan", "Sam Patel", "Jordan Lee", "Riley Chen", "Casey Novak", "Robin Okafor")
_NOTES = (
    "Requested by phone this morning",
    "Agreed with the team lead",
    "Follow-up from last week's call",
    "Raised during the monthly review",
    "Confirmed in writing by the requester",
)
_TEXT_POOLS: dict[str, tuple[str, ...]] = {
    "reason": (
        "Duplicate request",
        "No longer needed",
        "Budget was cut this quarter",
        "Raised in error",
        "Failed the review",
        "Requested by the owner",
    ),
    "resolution": (
        "Fixed and confirmed with the requester",
        "Resolved after a call with the requester",
        "Closed after the replacement arrived",
        "Workaround agreed and documented",
    ),
    "title": (
        "Quarterly review",
        "Annual safety review",
        "Follow-up check",
        "Process improvement",
        "Capacity upgrade",
        "Customer request",
    ),
}
_COMPANIES = (
    "Harbor Supplies Ltd",
    "Northwind Partners",
    "Cedar Works Co",
    "Atlas Systems Inc",
    "Lumen Group",
)
_PERSON_SUFFIXES = (
    "_by",
    "approver",
    "assignee",
    "owner",
    "reviewer",
    "manager",
    "technician",
    "inspector",
    "requester",
    "recipient",
    "contact",
    "signatory",
    "investigator",
)
_TEXT_POOLS["outcome"] = _TEXT_POOLS["summary"] = _TEXT_POOLS["resolution"]
_TEXT_POOLS["subject"] = _TEXT_POOLS["name"] = _TEXT_POOLS["title"]

_UPDATE_CALL = re.compile(r"""update\(\s*["']([a-z][a-z0-9_]*)["']\s*,([^)]*)\)""", re.S)
_KWARG = re.compile(r"\b([a-z][a-z0-9_]*)\s*=(?!=)")


class WriteValues:
    """Chooses the non-key values of a write (the synthesizer's `value_for`)."""

    world: World
    spec: DomainSpec
    ent: dict[str, EntitySpec]
    rng: random.Random

    def _from_gen(self, name: str, entity: str | None) -> Any:
        """A value from the seed generator of a same-named field (the given entity's first), or None."""
        order = [self.ent[entity]] if entity in self.ent else []
        order += [e for e in self.spec.entities if e.name != entity]
        r = self.rng
        for e in order:
            f = e.field(name)
            if f is None or f.gen is None:
                continue
            kind, extra = f.gen.kind, f.gen.model_extra or {}
            if kind in ("choice", "word") and extra.get("values"):
                return r.choice(list(extra["values"]))
            if kind == "pattern" and extra.get("format"):
                try:
                    return str(extra["format"]).format(n=e.rows + r.randint(100, 900))
                except (KeyError, IndexError, ValueError):
                    return None
            if kind in ("person_name", "first_name", "last_name"):
                return r.choice(_NAMES)
            if kind == "company":
                return r.choice(_COMPANIES)
            if kind in ("range", "money") and isinstance(extra.get("min"), int | float):
                lo, hi = float(extra["min"]), float(extra.get("max", extra["min"]))
                if f.type == "int":
                    return r.randint(int(lo), int(hi))
                return round(r.uniform(lo, hi), 2 if kind == "money" else 1)
            return None
        return None

    def value_for(
        self, p: Param, rows: list[dict[str, Any]], entity: str | None = None, current: Any = None
    ) -> Any:
        """A plausible value for a non-key parameter or field (enum choice, related amount, generator rule)."""
        r = self.rng
        if p.values:
            return r.choice(p.values)
        st = p.spec_type
        if (
            st in ("money", "float", "int")
            and isinstance(current, int | float)
            and not isinstance(current, bool)
        ):
            v = current * r.choice([0.9, 1.05, 1.1, 1.15]) if current else r.choice([5, 10, 20])
            return round(v) if st == "int" else round(v, 2)
        if st not in ("money",):
            gen = self._from_gen(p.name, entity)
            numeric = st in ("int", "float")
            if gen is not None and (isinstance(gen, int | float) if numeric else isinstance(gen, str)):
                return gen
        if st == "money":
            base = [
                v
                for row in rows
                for k, v in row.items()
                if isinstance(v, float) and v > 0 and not k.endswith("_id")
            ]
            if base and r.random() < 0.75:
                v = r.choice(base) * r.choice([0.25, 0.5, 1.0, 1.05, 1.1])
                return round(max(v, 1.0), 2)
            gen = self._from_gen(p.name, entity)
            if isinstance(gen, int | float):
                return float(gen)
            return float(r.choice([15, 25, 40, 50, 75, 100, 150]))
        if st == "int":
            return r.randint(1, 8)
        if st == "float":
            return round(r.uniform(1, 5), 1)
        if st == "bool":
            return r.random() < 0.5
        if st in ("date", "datetime"):
            d = self.world.runtime.add_days(self.spec.today, r.randint(1, 45))
            return d if st == "date" else f"{d}T10:00"
        if st == "email":
            return f"{r.choice(_NAMES).lower().replace(' ', '.')}@example.org"
        if st == "phone":
            return f"+44 20 7946 0{r.randint(100, 999)}"
        if p.name.endswith(_PERSON_SUFFIXES) or p.name == "full_name":
            return r.choice(_NAMES)
        for word, values in _TEXT_POOLS.items():
            if p.name == word or p.name.endswith("_" + word):
                return r.choice(values)
        return r.choice(_NOTES)


def managed_fields(spec: DomainSpec) -> dict[str, set[str]]:
    """Entity → fields some custom action sets (`update("order", key, status=...)` in its code), plus
    fields a spec marks `managed` (if the spec format has that flag)."""
    out: dict[str, set[str]] = {}
    for e in spec.entities:
        for f in e.fields:
            if getattr(f, "managed", False):
                out.setdefault(e.name, set()).add(f.name)
    for act in spec.actions:
        for entity, rest in _UPDATE_CALL.findall(act.code):
            out.setdefault(entity, set()).update(_KWARG.findall(rest))
    return out


def generated_values(
    spec: DomainSpec, arguments: list[dict[str, Any]], changes: list[list[RowChange]]
) -> list[str]:
    """Values the world generated in the rows a path created, besides their keys: running numbers.

    A `unique` field of a created row whose value the creating call was not given can only have been
    numbered by the world (a tracking number from a count of shipments), so its value depends on what
    was created before; the judge renames these like keys (D70). `changes[i]` are call i's changes.
    """
    unique = {(e.name, f.name) for e in spec.entities for f in e.fields if f.unique and f.name != e.key}
    out: list[str] = []
    for args, made in zip(arguments, changes, strict=True):
        given = {canonical(v) for v in args.values()}
        for c in made:
            if (
                c.op == "insert"
                and (c.table, c.field) in unique
                and isinstance(c.after, str)
                and canonical(c.after) not in given
                and c.after not in out
            ):
                out.append(c.after)
    return out


def canonical(value: Any) -> str:
    """A value as sorted-key JSON: equal values, equal text (results and arguments compared alike)."""
    return json.dumps(value, sort_keys=True, default=str)
