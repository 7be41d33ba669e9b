"""How an evolved task reads: the benchmark's naturalness rubric plus the user-side rules, and the writer.

Every program's text is scored by the rules `toolshift.bench.naturalness` applies to the benchmark's
synthesised tasks (the intent's clauses: `names_by_identifier`, `short_references`, `no_echo`,
`one_whose`, `plain_words`, `readable_length`, `natural_values`) and by four rules on what the user
says, which the bench writer meets by construction and a structural edit could break:

- `request_articles`: the opening line's errand has its article ("approve a price change", not
  "approve price change"; a record named by its identifier needs none);
- `no_aside`: no parenthesised aside in the opening line ("(I also asked about … last week …)");
- `facts_are_values`: every fact the user may state is a value, never arithmetic ("92723.35", not
  "92728.35 minus 5.00");
- `no_placeholders`: no unfilled template slot (`{`, `}`, `None`) in the user's text.

`revise` is the writer a structural child goes through before it becomes a program: it gives the
opening line its articles, takes parenthesised asides out of their brackets and, where a rewriter
model is configured, paraphrases the intent with the bench's fact-preserving paraphrase (kept only
if every fact survives verbatim). A child that still fails a rule is rejected at stage `rubric`, the
failed rules and the offending words kept as its reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from toolshift.bench.naturalness import RULES as BENCH_RULES
from toolshift.bench.naturalness import rule_score
from toolshift.evolve.program import InstructionSpec, TaskSpec
from toolshift.models import Task, UserInstruction

USER_RULES = ("request_articles", "no_aside", "facts_are_values", "no_placeholders")
RULES = (*BENCH_RULES, *USER_RULES)

DETERMINERS = frozenset(
    ("a", "an", "the", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these", "those",
     "some", "every", "all", "each", "one", "two", "three", "another", "any", "several", "both", "no")
)  # fmt: skip
PRONOUNS = frozenset(
    ("it", "them", "him", "her", "us", "me", "you", "everything", "something", "anything", "nothing",
     "which", "what", "whether", "if", "how", "when", "why", "out", "up", "back", "in", "on", "off")
)  # fmt: skip
_ERRAND = re.compile(
    r"\b(?P<lead>(?:need|like|want|help(?: me)?|please) to|help me|Please|please) (?P<verb>[a-z]+) "
    r"(?P<obj>(?:[a-z]+ ){0,2}[a-z]+)(?P<end> —|,|\.|\?| please| for me\b)"
)
_ASIDE = re.compile(r"\s*\(([^()]*)\)")
_ARITHMETIC = re.compile(
    r"\b(?:plus|minus|times|half of|twice|double|days (?:after|before)|more than|less than)\b"
    r"|\d\s+[-+*/×]\s+\d"
)
_DATEISH = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _has_article(verb: str, first: str) -> bool:
    """Whether an errand's object needs no article: it has one, or it is a pronoun or particle."""
    return first in DETERMINERS or first in PRONOUNS or verb in DETERMINERS or first.endswith("'s")


def bare_errands(request: str) -> list[str]:
    """The opening line's errands whose object lacks an article: `change salary`, `release order hold`."""
    out = []
    for m in _ERRAND.finditer(request):
        first = m.group("obj").split(" ")[0]
        if _has_article(m.group("verb"), first):
            continue
        out.append(f"{m.group('verb')} {m.group('obj')}")
    return out


def with_articles(request: str) -> str:
    """`Hi, I need to change salary — can you help?` → `Hi, I need to change a salary — can you help?`."""

    def fix(m: re.Match[str]) -> str:
        obj = m.group("obj")
        first = obj.split(" ")[0]
        if _has_article(m.group("verb"), first):
            return m.group(0)
        return f"{m.group('lead')} {m.group('verb')} {_article(first)} {obj}{m.group('end')}"

    return _ERRAND.sub(fix, request)


def without_asides(request: str) -> str:
    """A parenthesised aside as a sentence of its own: `… one (prefer X). If …` → `… one. Prefer X. If …`."""
    out = request
    while (m := _ASIDE.search(out)) is not None:
        head, tail = out[: m.start()].rstrip(), out[m.end() :]
        inner = m.group(1).strip()
        if inner:
            inner = inner[0].upper() + inner[1:]
            inner = inner if inner.endswith((".", "!", "?")) else inner + "."
            if head and not head.endswith((".", "!", "?", ":")):
                head += "."
            tail = tail.lstrip()
            if tail[:1] in (".", ",", ";"):
                tail = tail[1:].lstrip()
            out = " ".join(p for p in (head, inner, tail) if p)
        else:
            out = f"{head}{tail}"
    return out.strip()


def arithmetic_facts(facts: dict[str, str]) -> list[str]:
    """Facts (by name) given as a computation rather than a value."""
    return [k for k, v in facts.items() if not _DATEISH.match(v) and _ARITHMETIC.search(v)]


@dataclass
class RubricResult:
    """One task's rubric: each rule passed or not, and what failed in words."""

    passed: dict[str, bool]
    why: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(self.passed.values())

    @property
    def failed(self) -> list[str]:
        return [r for r in RULES if not self.passed.get(r, True)]

    def reason(self) -> str:
        return "; ".join(f"{r}: {self.why.get(r, 'fails')}" for r in self.failed)


_IDENTIFIER = re.compile(r"[^\s,;()]*\d[^\s,;()]*")
_VALUES = re.compile(r"\bVALUE(?: VALUE)+\b")
_SENTENCE = re.compile(r"(?<=[a-z0-9)])[.!?]\s+(?=[A-Z])|\n+")


def _as_clauses(task: Task) -> Task:
    """The intent as the bench's rules read a one-sentence intent: each sentence a clause of its own (a
    τ² manual is prose), and the values the user states verbatim (identifiers such as `paypal_7644869`,
    numbers, the facts) read as values, not as raw field names."""
    intent = task.instruction.intent
    for v in sorted(task.instruction.facts.values(), key=len, reverse=True):
        if v:
            intent = intent.replace(v, "VALUE")
    intent = _IDENTIFIER.sub("VALUE", intent)
    # two values side by side ("pallet PAL-000002 passed") are no doubled word
    intent = _VALUES.sub("VALUE", intent)
    intent = _SENTENCE.sub("; ", intent.strip())
    return task.model_copy(update={"instruction": task.instruction.model_copy(update={"intent": intent})})


@dataclass
class Rubric:
    """The rubric for one domain: its entity nouns, and (for the bench's worlds) the identifier reader."""

    nouns: list[str]
    routed: Callable[[Task], bool] | None = None

    def score(self, task: Task) -> RubricResult:
        routed = bool(self.routed(task)) if self.routed is not None else False
        bench = rule_score(_as_clauses(task), self.nouns, routed).passed
        why: dict[str, str] = {}
        if not bench["names_by_identifier"]:
            why["names_by_identifier"] = "a record the user names by its identifier is reached another way"
        request = task.public_request
        bare = bare_errands(request)
        asides = [m.group(0).strip() for m in _ASIDE.finditer(request)]
        sums = arithmetic_facts(task.instruction.facts)
        text = " ".join([request, task.instruction.intent, *task.instruction.facts.values()])
        holes = [
            w for w in ("{", "}", "None") if re.search(rf"(?<![A-Za-z]){re.escape(w)}(?![A-Za-z])", text)
        ]
        passed = {
            **bench,
            "request_articles": not bare,
            "no_aside": not asides,
            "facts_are_values": not sums,
            "no_placeholders": not holes,
        }
        if bare:
            why["request_articles"] = "no article in " + ", ".join(repr(b) for b in bare)
        if asides:
            why["no_aside"] = "aside " + asides[0][:80]
        if sums:
            why["facts_are_values"] = ", ".join(f"{k} = {task.instruction.facts[k]!r}" for k in sums)
        if holes:
            why["no_placeholders"] = "unfilled " + ", ".join(holes)
        for r, ok in bench.items():
            if not ok and r not in why:
                why[r] = "fails the benchmark's rule"
        return RubricResult(passed, why)


def rubric_for(domain: str) -> Rubric:
    """The rubric of a world: the bench's identifier reader where the domain is one of ours (or τ²)."""
    from toolshift.evolve.worlds import is_external_domain

    if is_external_domain(domain):
        return Rubric(nouns=[])
    from toolshift.bench.audit import TaskReader
    from toolshift.bench.instructions import entity_noun
    from toolshift.world import World, load_domain

    compiled = load_domain(domain)
    nouns = [entity_noun(e.name) for e in compiled.spec.entities]
    state: dict[str, TaskReader] = {}

    def routed(task: Task) -> bool:
        if "reader" not in state:
            state["reader"] = TaskReader(World(compiled))
        try:
            return bool(state["reader"].routed_despite_identifier(task))
        except (KeyError, ValueError):  # a call the reader cannot place (a tool outside the spec's kinds)
            return False

    return Rubric(nouns=nouns, routed=routed)


_CACHE: dict[str, Rubric] = {}


def score_task(task: Task) -> RubricResult:
    if task.domain not in _CACHE:
        _CACHE[task.domain] = rubric_for(task.domain)
    return _CACHE[task.domain].score(task)


def revise(spec: TaskSpec, rewrite: Callable[[str], str] | None = None) -> tuple[TaskSpec, list[str]]:
    """The child's text through the writer: articles, no asides, and a model's paraphrase where configured.
    Returns the revised spec and what was revised (empty when nothing was)."""
    notes: list[str] = []
    request = spec.public_request
    fixed = without_asides(request)
    if fixed != request:
        notes.append("aside taken out of its brackets")
    again = with_articles(fixed)
    if again != fixed:
        notes.append("articles: " + ", ".join(bare_errands(fixed)))
    instruction = spec.instruction
    if rewrite is not None:
        from toolshift.bench.instructions import paraphrase

        said = {k: v for k, v in instruction.facts.items() if v in instruction.intent}  # what it must keep
        manual = UserInstruction(intent=instruction.intent, motivation=instruction.motivation, facts=said)
        try:
            para, refused = paraphrase(manual, rewrite)
        except Exception as exc:  # a model that fails keeps the template's words, and says so
            para, refused = manual, f"rewriter failed: {type(exc).__name__}"
        if refused is None and para.intent != instruction.intent:
            instruction = InstructionSpec(
                intent=para.intent,
                motivation=instruction.motivation,
                facts=dict(instruction.facts),
                rules=list(instruction.rules),
            )
            notes.append("intent paraphrased by the rewriter")
        elif refused is not None:
            notes.append(f"rewriter refused ({refused})")
    if not notes:
        return spec, []
    return spec.model_copy(update={"public_request": again, "instruction": instruction}), notes
