"""How users name what Steward holds: a conversation's words for a tool (`unsaid`, learned as `heard_as`) and
a user's own name for a fact (`same_fact`), read by plan choice (`supply`) and the instrument alike."""

from __future__ import annotations

import functools
import re

from toolshift.steward.catalog import Catalog, CatalogTool
from toolshift.steward.distill import continues
from toolshift.steward.library import Skill
from toolshift.steward.retrieval import WORD, tokens

# a tool's verb said in other words: a request to "add a new …" or have one "recorded" asks to create it,
# one to have a record "changed" or a field "set" to update it
_SAID_AS = {
    "create": frozenset({"new", "add", "record", "recorded", "register", "log"}),
    "update": frozenset({"change", "changed", "set", "edit", "modify"}),
}


_VERSION_MARK = re.compile(r"v\d+")


class Said(set[str]):
    """The conversation's words as `tokens` gives them (plurals folded), with the words as written
    (`raw`): "lease records" says the record, not the verb "record"."""

    raw: frozenset[str] = frozenset()


def said_of(text: str) -> Said:
    said = Said(tokens(text))
    said.raw = frozenset(WORD.findall(text.lower()))
    return said


def unsaid(tool: str, said: set[str], catalog: Catalog | None = None) -> float:
    """The share of a tool name's words (domain prefix and version marks such as `v2` left out) that no
    word of the conversation says. With the catalog, the tool may be said as its description says it:
    the description's leading verb, as written, with the name's words the description repeats
    (`…_sign_off_life_event`, "Approve a reported life event …", is said by "approve life event"),
    whichever leaves less unsaid (D233)."""
    words = [w for w in tokens(" ".join(tool.split("_")[1:])) if not _VERSION_MARK.fullmatch(w)]
    if not words:
        return 0.0

    def heard(w: str, spoken: set[str]) -> bool:
        return w in spoken or bool(_SAID_AS.get(w, frozenset()) & spoken)

    best = sum(not heard(w, said) for w in words) / len(words)
    entry = catalog.tools.get(tool) if catalog is not None else None
    if entry is not None and best > 0:
        lead = _lead(entry.description)
        if lead and lead[0] not in words:
            rest = list(dict.fromkeys(w for w in words if w in lead[1:]))
            verb = heard(lead[0], said.raw if isinstance(said, Said) else said)
            best = min(best, (sum(not heard(w, said) for w in rest) + (not verb)) / (len(rest) + 1))
    return best


def heard_as(plans: list[Skill], catalog: Catalog) -> dict[str, list[frozenset[str]]]:
    """Per write tool, the words of the stored requests that named it: each plan's training requests (the
    words a successful episode's user opened with), each given to the plan's one write, or to the write
    it names best (fewest of the tool's words unsaid by it, a single best, sharing a word with its
    name): where a version renamed the verb, the users' words for the tool (D236). Plans with a merged
    write (`merged`) are left out."""
    out: dict[str, list[frozenset[str]]] = {}
    for plan in plans:
        writes = [
            t for t in dict.fromkeys(plan.tools)
            if t in catalog.tools and catalog.tools[t].effect != "read" and not continues(catalog.tools[t])
        ]  # fmt: skip
        if any(merged(catalog.tools[t]) for t in writes):
            # a merged tool does more than its training request's opening names ("change ship method;
            # there is one more thing …" for `…_change_ship_method_then_cancel_order`): never credited
            continue
        for request in plan.body.get("requests", []):
            words = frozenset(w for w in tokens(request) if len(w) > 1)
            if not words or not writes:
                continue
            shares = sorted((unsaid(t, set(words)), t) for t in writes)
            share, tool = shares[0]
            named = set(tokens(" ".join(tool.split("_")[1:])))
            if len(shares) == 1 or (share < 1 and shares[1][0] > share and words & named):
                out.setdefault(tool, []).append(words)
    return out


def merged(tool: CatalogTool) -> bool:
    """Does one call of the tool make several calls' work? Its schema takes each part's arguments as an
    object of their own (`step1`, `step2_value`), whatever its name or description says."""
    props = tool.input_schema.get("properties", {})
    parts = [r for r in tool.input_schema.get("required", []) if isinstance(props.get(r), dict)]
    return sum(props[r].get("type") == "object" and bool(props[r].get("properties")) for r in parts) >= 2


@functools.lru_cache(maxsize=4096)
def _lead(description: str) -> tuple[str, ...]:
    """The tokens of a description's first clause (up to its first `.`, `;`, `:` or `(`), once per text:
    `unsaid` reads them for every write tool a choice compares."""
    return tuple(tokens(re.split(r"[.;:(]", description, maxsplit=1)[0]))


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")) if w]


# words an interface adds to an argument's name without changing what it holds (`item` → `item_value`,
# `hire_id` → `hire_ref_value`): a fact named from the argument says them, the user does not
_FILLER = frozenset({"value", "ref", "val"})
_ORDINAL = re.compile(r"\s*\(\d+\)\s*$")


def _fact_words(name: str) -> list[str]:
    """A fact name's words less a part's ordinal mark ("campaign code (2)") and trailing filler words."""
    words = _words(_ORDINAL.sub("", name))
    while len(words) > 1 and words[-1] in _FILLER:
        words.pop()
    return words


def same_fact(asked: str, given: str) -> bool:
    """Does the fact the user named `given` answer the phrase `asked`? Same last word, and the words of one
    name all among the other's ("supplier site code" answers "supplier site supplier code"; "customer
    order number" never answers "customer order email"); a part's ordinal mark and an interface's filler
    words do not count ("item" answers "item value", "campaign code" answers "campaign code (2)" where the
    request has one part, D236)."""
    a, g = _fact_words(asked), _fact_words(given)
    return bool(a and g) and a[-1] == g[-1] and (set(a) <= set(g) or set(g) <= set(a))
