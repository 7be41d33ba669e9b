"""Multi-record requests no stored plan repeats: the same write on the other records of one parent (D191).

"Accept finding risk for finding F-26-0004 and every other finding of the same control whose status is
open (3 in all)": the stored plan writes one finding. After it has run, the instrument lists the
parent's records with the catalog's lookup of them (the read tool whose description says it lists the
entity's records "whose <parent key> is the given <parent key>", or whose name holds the entity and the
parent; a `…_start_…` lookup is run through its later calls), keeps the items whose field holds the
value the request names, and makes the plan's write again on each one not written already, with the
same arguments but the record's key. Everything comes from the request's words, the catalog and the
results: no fact name, no stored plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import _same, continues

_EVERY_OTHER = re.compile(
    r"\band every other (?P<entity>[a-z][a-z ]*?) of the same (?P<parent>[a-z][a-z ]*?) whose "
    r"(?P<field>[a-z][a-z ]*?) is (?P<value>[^()]+?) \(\d+ in all\)",
    re.IGNORECASE,
)
# "resolve every maintenance ticket of room R029 whose status is open (2 of them)": no record named first,
# the parent named by its reference (D211)
_EVERY_OF = re.compile(
    r"\bevery (?P<entity>[a-z][a-z ]*?) of (?P<parent>[a-z][a-z ]*?) [A-Za-z0-9-]*[0-9][A-Za-z0-9-]* whose "
    r"(?P<field>[a-z][a-z ]*?) is (?P<value>[^()]+?) \(\d+ of them\)"
)
_LISTS = re.compile(r"\bLists the [a-z ]+? whose ([a-z0-9_]+) is the given\b", re.IGNORECASE)


@dataclass(frozen=True)
class Repeat:
    """What a multi-record request names: the records (`entity`), their shared parent, the field that
    picks the others and its value."""

    entity: str
    parent: str
    field: str
    value: str


def parse_repeat(text: str) -> Repeat | None:
    """The multi-record part of a request ("… and every other lot of the same drug product whose status is
    available (3 in all)", or "every maintenance ticket of room R029 whose status is open (2 of them)": the
    plan writes the first such record, the repetition the others), or None."""
    m = _EVERY_OTHER.search(text) or _EVERY_OF.search(text)
    if m is None:
        return None
    return Repeat(*(m.group(g).strip().lower() for g in ("entity", "parent", "field", "value")))


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _names(tool: str, words: list[str]) -> bool:
    """Does the tool's name hold every one of the words (plural or not)?"""
    name = {_stem(w) for w in tool.split("_")[1:]}
    return all(_stem(w) in name for w in words)


def target_step(steps: list[dict[str, Any]], catalog: Catalog, rep: Repeat) -> int | None:
    """The plan's write the request repeats: the first write whose tool names the entity (its last word),
    else the plan's only write."""
    writes = [
        k
        for k, st in enumerate(steps)
        if (t := catalog.tools.get(st["tool"])) is not None and t.effect != "read" and not continues(t)
    ]
    named = [k for k in writes if _names(steps[k]["tool"], _words(rep.entity)[-1:])]
    if named:
        return named[0]
    return writes[0] if len(writes) == 1 else None


def list_tool(catalog: Catalog, domain: str, rep: Repeat) -> CatalogTool | None:
    """The domain's lookup of the parent's records: a read (not a later call of a split operation) taking
    one required key, whose name holds the entity's last word and the parent's words; one whose
    description says it lists records by that key ranks first."""
    entity = _words(rep.entity)[-1:]
    parent = _words(rep.parent)
    options = []
    for t in catalog.tools.values():
        required = t.input_schema.get("required", [])
        if t.domain != domain or t.effect != "read" or continues(t) or len(required) != 1:
            continue
        if not _names(t.name, entity + parent):
            continue
        said = _LISTS.search(t.description or "")
        options.append((said is None or said.group(1) != required[0], len(t.name), t.name))
    return catalog.tools[min(options)[2]] if options else None


def later_calls(catalog: Catalog, opener: CatalogTool) -> list[CatalogTool]:
    """The later calls of a split operation (`…_set_…`, `…_commit_…`) in step order, for its opener."""
    found = []
    for t in catalog.tools.values():
        m = re.match(r"^Step ([2-9]) of [2-9]\b", t.description or "")
        if m and t.domain == opener.domain and opener.name in (t.description or ""):
            found.append((int(m.group(1)), t.name, t))
    return [t for *_, t in sorted(found)]


def items_of(result: Any) -> list[dict[str, Any]]:
    """The records of a list result: its shallowest list of objects (`items`, `data.items`, a merged
    tool's last step's result)."""
    level = [result]
    for _ in range(5):
        for node in level:
            if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
                return node
        level = [
            c
            for node in level
            for c in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else [])
            if isinstance(c, dict | list)
        ]
    return []


def _value(item: dict[str, Any], name: str) -> Any:
    key = name.replace(" ", "_").replace("_", "").lower()
    return next((v for k, v in item.items() if k.replace("_", "").lower() == key), None)


def others(items: list[dict[str, Any]], rep: Repeat, key_field: str, done: set[str]) -> list[Any]:
    """The keys of the listed records whose field holds the request's value, other than those written."""
    out = []
    for it in items:
        key = _value(it, key_field)
        if key is None or str(key) in done or not _same(_value(it, rep.field), rep.value):
            continue
        out.append(key)
    return list(dict.fromkeys(out))


def find(name: str, results: list[Any], depth: int = 5) -> Any:
    """The value of a field of that name in the results (latest first; nested objects and lists' first
    items searched, shallowest first, `depth` levels down), else None."""
    for r in reversed(results):
        level = [r]
        for _ in range(depth):
            for node in level:
                if isinstance(node, dict) and node.get(name) is not None:
                    return node[name]
            level = [
                c
                for node in level
                for c in (
                    node.values() if isinstance(node, dict) else node[:1] if isinstance(node, list) else []
                )
                if isinstance(c, dict | list)
            ]
    return None


def record_field(results: list[Any], key_field: str, key: Any, name: str) -> Any:
    """Field `name` of the record whose `key_field` (or any field) holds `key`, in the results, latest
    first; None if no result holds that record."""
    if key is None:
        return None
    for r in reversed(results):
        stack = [r]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if node.get(name) is not None and (
                    _same(_value(node, key_field), key) or any(_same(v, key) for v in node.values())
                ):
                    return node[name]
                stack += [c for c in node.values() if isinstance(c, dict | list)]
            elif isinstance(node, list):
                stack += [c for c in node if isinstance(c, dict | list)]
    return None


class Repetition:
    """One multi-record request's further calls, one at a time: the parent's records listed (a split
    lookup through its later calls), then the plan's write (with the later calls of a split write) on
    each other record whose field holds the value the request names."""

    def __init__(self, rep: Repeat, steps: list[dict[str, Any]], made: dict[int, dict[str, Any]],
                 results: list[Any], catalog: Catalog, k: int, key: tuple[str, str],
                 listing: list[tuple[str, dict[str, Any]]]) -> None:  # fmt: skip
        self.rep, self.key = rep, key
        # the write and the calls that continue it (start → set → commit), as the plan made them
        chain = [k]
        while (
            chain[-1] + 1 < len(steps)
            and chain[-1] + 1 in made
            and continues(catalog.tools.get(steps[chain[-1] + 1]["tool"]))
        ):
            chain.append(chain[-1] + 1)
        self.write = [(steps[j]["tool"], made[j]) for j in chain]
        self.done = {str(made[k].get(key[0]))}
        self.pending: list[tuple[str, dict[str, Any], bool]] = [
            (name, args, n > 0) for n, (name, args) in enumerate(listing)
        ]
        self.listed = False

    @classmethod
    def start(cls, rep: Repeat | None, steps: list[dict[str, Any]], made: dict[int, dict[str, Any]],
              results: list[Any], catalog: Catalog) -> Repetition | None:  # fmt: skip
        """The repetition a request names after its plan has run, or None (no such request, no write of the
        plan that it repeats, already an `each` step, no lookup of the parent's records, no parent key)."""
        k = target_step(steps, catalog, rep) if rep is not None else None
        if rep is None or k is None or k not in made or steps[k].get("each"):
            return None
        key = key_argument(steps[k], made[k], rep)
        tool = list_tool(catalog, catalog.tools[steps[k]["tool"]].domain, rep)
        if key is None or tool is None:
            return None
        arg = tool.input_schema["required"][0]
        # the parent's key as the record written holds it: as a lookup before the write returned the
        # record (the write may change it: a shift reassigned), else the write's result, else any result
        names = list(dict.fromkeys([arg, arg.rsplit("_", 1)[0] + "_id"]))
        record = made[k].get(key[0])
        value = next(
            (v for n in names if (v := record_field(results[:k], key[1], record, n)) is not None), None
        )
        sources = [[results[k]] if k < len(results) else [], results]
        if value is None:
            value = next((v for src in sources for n in names if (v := find(n, src)) is not None), None)
        if value is None:
            return None
        later = later_calls(catalog, tool) if "_start_" in tool.name else []
        listing = [(tool.name, {arg: value}), *((t.name, {}) for t in later)]
        out = cls(rep, steps, made, results, catalog, k, key, listing)
        # the records the run's other writes made or changed are no others the request named: a ticket
        # the request's next part created is open, but was not one of "every … whose status is open" (D211)
        for j in made:
            t = catalog.tools.get(steps[j]["tool"]) if j < len(steps) else None
            if j != k and j < len(results) and t is not None and t.effect != "read":
                made_key = find(key[1], [results[j]], depth=3)
                if made_key is not None:
                    out.done.add(str(made_key))
        return out

    def next(self, last: Any) -> tuple[str, dict[str, Any]] | None:
        """The next call, given the last call's result; None when the repetition is over."""
        if not self.pending and not self.listed:
            self.listed = True
            arg, field = self.key
            for x in others(items_of(last), self.rep, field, self.done):
                first, *rest = self.write
                self.pending += [(first[0], {**first[1], arg: x}, False)]
                self.pending += [(name, args, True) for name, args in rest]
        if not self.pending:
            return None
        name, args, draft = self.pending.pop(0)
        if draft:  # a later call of a split operation: the draft the last call opened
            opened = find("draft_id", [last])
            if opened is not None:
                args = {**args, "draft_id": opened}
        return name, args


def key_argument(step: dict[str, Any], args: dict[str, Any], rep: Repeat) -> tuple[str, str] | None:
    """The write's argument naming the record (a key, `…_id` / `…_ref` or bound from an earlier result,
    whose name holds the entity's last word: `shift_id` for "work shift", never the `worker_id` it
    sets) and the field of a listed record that holds it (the binding's own field, else `<entity>_id`)."""
    bindings = step.get("args", {})
    entity = _stem(_words(rep.entity)[-1])
    for name in args:
        b = bindings.get(name, {})
        if not (name.endswith(("_id", "_ref")) or "step" in b) or entity not in map(_stem, name.split("_")):
            continue
        path = [p for p in b.get("path", []) if isinstance(p, str) and p != "*"]
        words = name.split("_")
        at = [_stem(w) for w in words].index(entity)
        return name, path[-1] if path else "_".join(words[: at + 1]) + "_id"
    return None
