"""Deterministic seed data: the spec's `gen` rules (and per-type defaults) turned into rows.

Every entity draws from its own `random.Random(f"{seed}:{entity}")`, so adding an entity never
changes another entity's rows, and the same seed always gives the same world.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from toolshift.errors import BadInputError
from toolshift.world.language.spec import DomainSpec, EntitySpec, FieldSpec, Generator, row_format_problem

MAX_VALUE_CHARS = 10_000
"""Characters of one generated value."""
MAX_CHOICES = 10_000
"""Entries of a generator's `values`, `weights` or `words`."""
MAX_WORDS = 1_000
"""Words of one generated sentence."""
_SCALARS = (str, int, float, bool, date, type(None))


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST_NAMES = _words(
    "Ada Alan Amara Ana Andre Aisha Ben Bea Carlos Chen Chloe Dana Daniel Dev Elena Emil Eva Farah "
    "Felix Grace Hana Hugo Ines Ivan Jade Jonas Kai Kenji Lara Leo Lina Luca Maya Mei Mila Nadia Noah "
    "Nora Omar Oscar Priya Rafael Rosa Sami Sara Soren Tariq Theo Uma Vera Wen Yara Yusuf Zoe"
)
LAST_NAMES = _words(
    "Abbott Adeyemi Alvarez Bauer Bianchi Brooks Castro Chen Costa Dubois Eriksen Fischer Garcia Gupta "
    "Hansen Haddad Ito Jensen Kim Kowalski Larsen Lopez Moreau Muller Nakamura Novak Okafor Olsen Patel "
    "Perez Quinn Rossi Sato Schmidt Silva Singh Smith Tanaka Torres Vogel Walsh Weber Wong Yilmaz Zhang"
)
COMPANY_WORDS = _words(
    "Acme Apex Atlas Beacon Birch Cedar Cobalt Delta Ember Falcon Granite Harbor Helix Iris Juniper "
    "Keystone Lumen Maple Meridian Nimbus Northwind Orion Pioneer Quartz Redwood Summit Tidal Vertex"
)
COMPANY_SUFFIXES = ("Ltd", "Inc", "Group", "Logistics", "Partners", "Co", "Works", "Systems")
WORDS = _words(
    "alpha amber bright calm clear crisp daily eager early fresh gentle golden green quick quiet "
    "rapid silver simple solid steady strong sunny swift tidy urgent vivid warm wide"
)


def resolve_date(value: Any, today: date, where: str, source: str) -> date:
    """An ISO date, or `today`, `today+N` / `today-N` (days) relative to the world's date."""
    text = str(value).strip()
    if text.startswith("today"):
        rest = text[5:].replace(" ", "")
        if not rest:
            return today
        try:
            return today + timedelta(days=int(rest.rstrip("d")))
        except ValueError:
            raise BadInputError(f"bad relative date {text!r}", source=source, field=where) from None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        raise BadInputError(f"bad date {text!r} (ISO or today±N)", source=source, field=where) from None


DEFAULT_GEN: dict[str, dict[str, Any]] = {
    "string": {"kind": "word"},
    "text": {"kind": "sentence"},
    "int": {"kind": "range", "min": 0, "max": 100},
    "float": {"kind": "range", "min": 0.0, "max": 1000.0},
    "money": {"kind": "money", "min": 5, "max": 500},
    "bool": {"kind": "bool", "p": 0.5},
    "date": {"kind": "date", "start": "today-365", "end": "today"},
    "datetime": {"kind": "datetime", "start": "today-365", "end": "today"},
    "email": {"kind": "email"},
    "phone": {"kind": "phone"},
    "enum": {"kind": "choice"},
    "ref": {"kind": "ref"},
}


class RowGenerator:
    """Makes the rows of one entity; `keys` holds every entity's keys (known before any row is made)."""

    def __init__(self, spec: DomainSpec, entity: EntitySpec, keys: dict[str, list[str]], source: str) -> None:
        self.spec, self.entity, self.keys, self.source = spec, entity, keys, source
        self.today = date.fromisoformat(spec.today)
        self.rng = random.Random(f"{spec.seed}:{entity.name}")
        ent_index = spec.entities.index(entity)
        self.order: list[tuple[int, FieldSpec]] = _generation_order(entity, source, ent_index)
        self.makers: dict[str, Callable[[int, dict[str, Any]], Any]] = {}
        self.where: dict[str, str] = {}
        for j, f in self.order:
            where = f"entities[{ent_index}].fields[{j}].gen"
            gen = f.gen.model_dump() if f.gen is not None else {**DEFAULT_GEN[f.type]}
            try:
                self.makers[f.name] = self._maker(f, gen, where)
            except (TypeError, ValueError, OverflowError) as exc:
                raise BadInputError(
                    f"bad generator: {type(exc).__name__}: {exc}", source=source, field=where
                ) from None
            self.where[f.name] = where

    def rows(self) -> list[dict[str, Any]]:
        try:
            return self._rows()
        except BadInputError:
            raise
        except Exception as exc:
            field = getattr(self, "_current", None)
            raise BadInputError(
                f"seed generator failed: {type(exc).__name__}: {exc}",
                source=self.source,
                field=self.where.get(field or "", f"entities[{self.spec.entities.index(self.entity)}]"),
            ) from None

    def _rows(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen: dict[str, set[Any]] = {f.name: set() for _, f in self.order if f.unique}
        for n, key in enumerate(self.keys[self.entity.name], start=1):
            row: dict[str, Any] = {self.entity.key: key}
            for _, f in self.order:
                self._current = f.name
                value = self.makers[f.name](n, row)
                if f.unique and value is not None:
                    tries = 0
                    while value in seen[f.name] and tries < 20:
                        value, tries = self.makers[f.name](n, row), tries + 1
                    if value in seen[f.name]:
                        value = _disambiguate(value, n)
                    seen[f.name].add(value)
                if type(value) is str and len(value) > MAX_VALUE_CHARS:
                    raise BadInputError(
                        f"generated a value of {len(value):,} characters (the limit is {MAX_VALUE_CHARS:,})",
                        source=self.source,
                        field=self.where[f.name],
                    )
                row[f.name] = value
            out.append(row)
        return out

    def _maker(self, f: FieldSpec, gen: dict[str, Any], where: str) -> Callable[[int, dict[str, Any]], Any]:
        _check_plain(gen, where, self.source)
        when = gen.get("when")
        make = self._kind_maker(f, gen, where)
        if when is None:
            return make
        if not isinstance(when, dict) or not when or any(self.entity.field(k) is None for k in when):
            raise BadInputError(
                "`when` must map fields of the row to values", source=self.source, field=f"{where}.when"
            )
        accept = {k: set(v) if isinstance(v, list) else {v} for k, v in when.items()}
        otherwise = gen.get("else")
        return lambda n, row: make(n, row) if all(row.get(k) in vs for k, vs in accept.items()) else otherwise

    def _kind_maker(
        self, f: FieldSpec, gen: dict[str, Any], where: str
    ) -> Callable[[int, dict[str, Any]], Any]:
        rng, kind = self.rng, gen.get("kind")

        def bad(msg: str) -> BadInputError:
            return BadInputError(msg, source=self.source, field=where)

        if kind == "person_name":
            return lambda n, row: f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if kind == "first_name":
            return lambda n, row: rng.choice(FIRST_NAMES)
        if kind == "last_name":
            return lambda n, row: rng.choice(LAST_NAMES)
        if kind == "company":
            return lambda n, row: f"{rng.choice(COMPANY_WORDS)} {rng.choice(COMPANY_SUFFIXES)}"
        if kind == "email":
            src = gen.get("from")
            if src is not None and self.entity.field(src) is None:
                raise bad(f"email generator reads unknown field {src!r}")
            domain = gen.get("domain", "example.com")

            def email(n: int, row: dict[str, Any]) -> str:
                base = str(row.get(src) or "") if src else ""
                local = ".".join("".join(ch for ch in part if ch.isalnum()) for part in base.lower().split())
                local = local or f"{rng.choice(FIRST_NAMES).lower()}{rng.randint(1, 999)}"
                return f"{local}{n}@{domain}" if f.unique else f"{local}@{domain}"

            return email
        if kind == "phone":
            return lambda n, row: f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
        if kind in ("word", "choice"):
            values = gen.get("values") or f.values or (WORDS if kind == "word" else None)
            if not values:
                raise bad(f"{kind} generator needs `values`")
            if f.type in ("string", "text", "enum", "email", "phone", "date", "datetime", "ref"):
                values = [str(v) for v in values]
            if f.type == "enum" and f.values and any(v not in f.values for v in values):
                raise bad(f"generator values {values} are not all allowed by enum {f.values}")
            weights = gen.get("weights")
            if weights is not None and len(weights) != len(values):
                raise bad("`weights` and `values` differ in length")
            values = list(values)
            if weights:
                return lambda n, row: rng.choices(values, weights=weights)[0]
            return lambda n, row: rng.choice(values)
        if kind == "range":
            lo, hi = gen.get("min", 0), gen.get("max", 100)
            if isinstance(lo, int) and isinstance(hi, int) and f.type != "float":
                return lambda n, row: rng.randint(lo, hi)
            digits = int(gen.get("digits", 2))
            return lambda n, row: round(rng.uniform(float(lo), float(hi)), digits)
        if kind == "money":
            lo, hi = float(gen.get("min", 5)), float(gen.get("max", 500))
            return lambda n, row: round(rng.uniform(lo, hi), 2)
        if kind in ("date", "datetime"):
            start = resolve_date(gen.get("start", "today-365"), self.today, f"{where}.start", self.source)
            end = resolve_date(gen.get("end", "today"), self.today, f"{where}.end", self.source)
            if end < start:
                raise bad(f"date range ends ({end}) before it starts ({start})")
            span = (end - start).days
            as_datetime = kind == "datetime" or f.type == "datetime"
            if as_datetime:

                def stamp(n: int, row: dict[str, Any]) -> str:
                    day = start + timedelta(days=rng.randint(0, span))
                    return f"{day.isoformat()}T{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"

                return stamp
            return lambda n, row: (start + timedelta(days=rng.randint(0, span))).isoformat()
        if kind == "date_offset":
            src = gen.get("from")
            if src is None or self.entity.field(src) is None:
                raise bad(f"date_offset needs `from`: a date field of {self.entity.name}")
            lo, hi = int(gen.get("min", 0)), int(gen.get("max", gen.get("min", 0)))
            until = gen.get("until")
            last = (
                resolve_date(until, self.today, f"{where}.until", self.source) if until is not None else None
            )

            def offset(n: int, row: dict[str, Any]) -> str | None:
                base = row.get(src)
                if base is None:
                    return None
                day = date.fromisoformat(str(base)[:10]) + timedelta(days=rng.randint(lo, hi))
                if last is not None and day > last:
                    day = max(last, date.fromisoformat(str(base)[:10]))
                if f.type == "datetime":
                    return day.isoformat() + (str(base)[10:] if len(str(base)) > 10 else "T09:00")
                return day.isoformat()

            return offset
        if kind == "bool":
            p = float(gen.get("p", 0.5))
            return lambda n, row: rng.random() < p
        if kind == "pattern":
            fmt = gen.get("format")
            if not isinstance(fmt, str):
                raise bad("pattern generator needs a `format` string")
            why = row_format_problem(fmt, "n")
            if why is not None:
                raise bad(f"bad pattern format {fmt!r}: {why}")
            return lambda n, row: fmt.format(n=n)
        if kind == "sentence":
            words = [str(w) for w in gen.get("words") or WORDS]
            lo, hi = int(gen.get("min", 4)), int(gen.get("max", 10))
            if not 0 <= lo <= hi <= MAX_WORDS:
                raise bad(f"a sentence has from `min` to `max` words, 0 <= min <= max <= {MAX_WORDS}")

            def sentence(n: int, row: dict[str, Any]) -> str:
                text = " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))
                return text[:1].upper() + text[1:] + "."

            return sentence
        if kind == "ref":
            target = gen.get("entity") or f.ref
            if target not in self.keys:
                raise bad(f"ref generator points at unknown entity {target!r}")
            pool = self.keys[target]
            if target == self.entity.name:
                # A self-reference picks an earlier row, so hierarchies have no cycles.
                return lambda n, row: pool[rng.randrange(n - 1)] if n > 1 else None
            return lambda n, row: rng.choice(pool) if pool else None
        if kind == "const":
            value = gen.get("value")
            return lambda n, row: value
        if kind == "null_or":
            p = float(gen.get("p", 0.2))
            inner = gen.get("of")
            if not isinstance(inner, dict) or "kind" not in inner:
                raise bad("null_or generator needs `of`: another generator")
            make = self._maker(f, Generator.model_validate(inner).model_dump(), f"{where}.of")
            return lambda n, row: None if rng.random() < p else make(n, row)
        raise bad(f"unknown generator kind {kind!r}")


def _check_plain(gen: dict[str, Any], where: str, source: str) -> None:
    """A generator's options are plain values: scalars, and lists of at most MAX_CHOICES scalars."""
    for key, value in gen.items():
        if key in ("when", "of"):
            continue
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) > MAX_CHOICES:
            raise BadInputError(
                f"`{key}` has {len(value):,} entries (the limit is {MAX_CHOICES:,})",
                source=source,
                field=f"{where}.{key}",
            )
        for v in values:
            if not isinstance(v, _SCALARS) or (isinstance(v, str) and len(v) > MAX_VALUE_CHARS):
                raise BadInputError(
                    f"`{key}` must be a plain value or a list of plain values (strings up to {MAX_VALUE_CHARS:,} "
                    "characters)",
                    source=source,
                    field=f"{where}.{key}",
                )
    when = gen.get("when")
    if isinstance(when, dict):
        for k, v in when.items():
            for x in v if isinstance(v, list) else [v]:
                if not isinstance(x, _SCALARS):
                    raise BadInputError(
                        "`when` values must be plain values", source=source, field=f"{where}.when.{k}"
                    )


def _dependencies(gen: Generator | dict[str, Any] | None) -> set[str]:
    """Fields of the same row a generator reads (`from`, `when`, nested `of`)."""
    if gen is None:
        return set()
    g = gen.model_dump() if isinstance(gen, Generator) else gen
    deps = {g["from"]} if isinstance(g.get("from"), str) else set()
    if isinstance(g.get("when"), dict):
        deps |= set(g["when"])
    if isinstance(g.get("of"), dict):
        deps |= _dependencies(g["of"])
    return deps


def _generation_order(entity: EntitySpec, source: str, ent_index: int) -> list[tuple[int, FieldSpec]]:
    """Non-key fields in spec order, each after the fields its generator reads (emails after names)."""
    fields = {f.name: (j, f) for j, f in enumerate(entity.fields) if f.name != entity.key}
    tiers: dict[str, int] = {}

    def tier(name: str, seen: tuple[str, ...]) -> int:
        if name in tiers:
            return tiers[name]
        if name in seen:
            j = fields[name][0]
            raise BadInputError(
                f"generators read each other in a cycle: {' -> '.join((*seen, name))}",
                source=source,
                field=f"entities[{ent_index}].fields[{j}].gen",
            )
        if name not in fields:
            return 0
        f = fields[name][1]
        base = 1 if f.gen is not None and f.gen.kind == "email" else 0
        deps = [d for d in _dependencies(f.gen) if d != entity.key]
        tiers[name] = max([base, *(tier(d, (*seen, name)) + 1 for d in deps)])
        return tiers[name]

    for name in fields:
        tier(name, ())
    return sorted(fields.values(), key=lambda jf: (tiers[jf[1].name], jf[0]))


def _disambiguate(value: Any, n: int) -> Any:
    if isinstance(value, str):
        if "@" in value:
            local, _, dom = value.partition("@")
            return f"{local}.{n}@{dom}"
        return f"{value} {n}"
    if isinstance(value, int) and not isinstance(value, bool):
        return value + n * 1_000_003
    return value


def entity_keys(spec: DomainSpec) -> dict[str, list[str]]:
    """Every entity's seeded keys: `id_format` applied to 1..rows."""
    return {e.name: [e.id_format.format(n) for n in range(1, e.rows + 1)] for e in spec.entities}


def seed_rows(spec: DomainSpec, source: str = "<spec>") -> dict[str, list[dict[str, Any]]]:
    """All seed rows of a spec, by entity name."""
    keys = entity_keys(spec)
    return {e.name: RowGenerator(spec, e, keys, source).rows() for e in spec.entities}
