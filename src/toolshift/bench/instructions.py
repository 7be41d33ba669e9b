"""Template-written user manuals and one-line requests for synthesised tasks, and the paraphrase fact check.

The manual (`UserInstruction`) holds the user's full intent, a motivation, the facts the user may
disclose when asked, and rules; it never names a tool or the plan. Templates need no model; an
optional paraphrase (any text-to-text callable) is accepted only if it keeps every fact verbatim.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolshift.models import UserInstruction
from toolshift.world.language.spec import DomainSpec

if TYPE_CHECKING:
    from toolshift.bench.drafts import Draft

_MOTIVATIONS = (
    "A colleague is waiting on this before they can carry on.",
    "The records are wrong and someone noticed in a report.",
    "It has to be sorted out before the end of the week.",
    "Your manager asked you to get this done today.",
    "You promised the other party an answer this afternoon.",
    "It came up in this morning's team meeting and is now on your list.",
    "You are clearing your backlog before going on leave.",
    "An audit next week will look at exactly this.",
)

RULES = (
    "Open with your one-line request only; give a fact when the agent asks for it or clearly needs it.",
    "Only state facts listed in this manual; if asked for anything else, say you do not know it.",
    "Never mention tools, functions, databases or how the agent should do its work.",
    "If the agent proposes something different from what you want, decline and restate what you want.",
    "When everything you asked for is done, thank the agent and end the conversation.",
)


def entity_noun(entity: str) -> str:
    """`purchase_order` → `purchase order`."""
    return entity.replace("_", " ")


def field_words(name: str, noun: str = "") -> str:
    """A field name as a person says it: `order_id` → `order number`, `work_email` → `work email`."""
    if name.endswith("_id"):
        name = name[:-3] + "_number"
    if name == "id":
        name = "number"
    return name.replace("_", " ")


def identified_phrase(noun: str, words: str, value: str) -> str:
    """How a person names a row by an identifier: `opportunity` + `opportunity number` → `opportunity
    OPP-000235`, `room` + `room code` → `room R052`; `employee` + `work email` → `the employee with work
    email …`."""
    head = noun.split(" ")[-1]
    if words == "number" or any(words in (f"{noun} {k}", f"{head} {k}") for k in ("number", "code", "id")):
        return f"{noun} {value}"
    return f"the {noun} with {words} {value}"


def role_words(param: str) -> str:
    """What a key parameter is to the user: `approver_id` → `approver`, `batch_id` → `batch`."""
    words = field_words(param)
    return words.removesuffix(" number") if words != "number" else words


def attribute_phrase(words: str, value: str, *, nested: bool = False, noun: str = "") -> str:
    """`placed on` + date → `placed on 2026-03-04`; `status` + `open` → `whose status is open` (or, for
    a reference that already has a "whose", `with status open`); a field named after its own noun drops
    it (`clause` + `clause type` → `whose type is …`)."""
    if noun and words.startswith(noun + " "):
        words = words.removeprefix(noun + " ")
    if words.endswith((" on", " at", " by")):
        return f"{words} {value}"
    return f"with {words} {value}" if nested else f"whose {words} is {value}"


def row_value_text(value: Any) -> str:
    """A value as a person writes it: `True` → `yes`, `2.5` → `2.50`, `employee_only` → `employee only`."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, str) and _SNAKE.fullmatch(value):
        return value.replace("_", " ")
    return str(value)


_SNAKE = re.compile(r"[a-z]+(?:_[a-z0-9]+)+")


def _article(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _intent_clause(intent: Any) -> str:
    details = [(k, v) for k, v in intent.details if k != "for"]
    owner = next((v for k, v in intent.details if k == "for"), "")
    if intent.kind == "update":
        changes = " and ".join(f"its {k} set to {v}" for k, v in details)
        return f"have {intent.target} changed: {changes}"
    if intent.kind == "create":
        fields = "; ".join(f"{k}: {v}" for k, v in details)
        who = f" for {owner}" if owner else ""
        return (
            f"have {intent.target} recorded{who} ({fields})"
            if fields
            else f"have {intent.target} recorded{who}"
        )
    if intent.kind == "delete":
        return f"have {intent.target} removed"
    extra = "; ".join(f"{k}: {v}" for k, v in details)
    return action_clause(intent.verb, intent.noun, intent.target) + (f" ({extra})" if extra else "")


def action_clause(verb: str, noun: str, target: str) -> str:
    """A custom action on its target, said the way its name reads: `reissue payslip` → `reissue <target>`,
    `mark finding remediated` → `mark <target> remediated`, `close won` → `close won for <target>`."""
    words = verb.split(" ")
    if verb.endswith(" " + noun):
        return verb[: -len(noun)] + target
    head = noun.split(" ")[-1]
    if head in words[1:]:
        i = words.index(head, 1)
        rest = words[i + 1 :]
        # only where the words after the noun still read after a long target ("… remediated", "… to category")
        if not rest or rest[0].endswith("ed") or rest[0] in ("to", "as", "on", "in", "from", "into", "with"):
            return " ".join([*words[:i], target, *rest])
    return f"{verb} for {target}"


def action_request_phrase(verb: str, noun: str) -> str:
    """`refund order` → `refund an order`; `grant store credit` stays as it is."""
    if verb.endswith(" " + noun):
        return verb[: -len(noun)] + _article(noun)
    return verb


def fact_key(noun: str, words: str) -> str:
    """The name a fact goes by: `customer` + `email` → `customer email`, `network alert` + `alert number`
    → `network alert number`, `order` + `order number` → `order number`."""
    if words.startswith(noun):
        return words
    first, _, rest = words.partition(" ")
    if rest and first in noun.split(" "):
        return f"{noun} {rest}"
    return f"{noun} {words}"


def make_instruction(spec: DomainSpec, draft: Draft, rng: random.Random) -> tuple[UserInstruction, str]:
    """The private manual and the public one-line request for a draft task."""
    clauses = [_intent_clause(i) for i in draft.intents]
    if not clauses:
        raise ValueError("a task needs at least one change")
    intent = "You want to " + clauses[0] + "".join(f"; then you also want to {c}" for c in clauses[1:]) + "."
    rules = list(RULES)
    if any(i.repeat > 1 for i in draft.intents):
        rules.append("Every record matching your description must be handled, not just one of them.")
    motivation = f"You deal with {spec.title.lower()} matters. " + rng.choice(_MOTIVATIONS)
    first = draft.intents[0]
    noun = first.noun
    plural = first.repeat > 1
    if first.kind == "update":
        options = [
            f"Hi, I need some details of {_article(noun)} changed.",
            f"Hello, can you update {_article(noun)} for me?",
            f"Some information on {_article(noun)} is out of date and needs correcting.",
        ]
    elif first.kind == "create":
        options = [
            f"Hi, I need a new {noun} set up.",
            f"Hello, I'd like to record a new {noun}.",
            f"Could you add a new {noun} to the system for me?",
        ]
    elif first.kind == "delete":
        options = [
            f"Hi, I need {_article(noun)} removed from the records.",
            f"Please delete {_article(noun)} for me.",
        ]
    else:
        phrase = action_request_phrase(first.verb, noun)
        options = [
            f"Hi, I need to {phrase} — can you help?",
            f"Hello, I'd like help to {phrase}.",
            f"Can you help me {phrase}, please?",
        ]
    if plural:
        options = [f"Hi, I have several {noun} records that all need the same change."]
    request = rng.choice(options)
    if len(draft.intents) > 1:
        request += " There is one more thing after that, too."
    return UserInstruction(
        intent=intent, motivation=motivation, facts=dict(draft.facts), rules=rules
    ), request


def missing_facts(instruction: UserInstruction, text: str) -> list[str]:
    """The facts (by name) whose value does not appear verbatim in `text` (case-insensitive)."""
    low = text.lower()
    return [k for k, v in instruction.facts.items() if v.lower() not in low]


def paraphrase(
    instruction: UserInstruction, rewrite: Callable[[str], str], forbidden: tuple[str, ...] = ()
) -> tuple[UserInstruction, str | None]:
    """Apply a model's rewrite to the intent; keep it only if every fact survives verbatim, it adds no
    number or code of its own, and it names no tool.

    Returns the manual to use (the original when the rewrite is refused) and the refusal reason.
    """
    text = rewrite(instruction.intent).strip()
    if not text:
        return instruction, "paraphrase_empty"
    lost = missing_facts(instruction, text)
    if lost:
        return instruction, "paraphrase_lost_facts"
    if added_values(instruction.intent, text):
        return instruction, "paraphrase_added_values"
    low = text.lower()
    if any(name.lower() in low for name in forbidden):
        return instruction, "paraphrase_names_function"
    return instruction.model_copy(update={"intent": text}), None


_VALUE = re.compile(r"[A-Za-z0-9@._+-]*\d[A-Za-z0-9@._+-]*")


def added_values(original: str, rewrite: str) -> list[str]:
    """Numbers, codes and dates in `rewrite` that `original` does not hold: a paraphrase may not invent
    a fact (a user simulator would state it)."""
    have = {v.strip(".,;:") for v in _VALUE.findall(original)}
    return [v for v in (w.strip(".,;:") for w in _VALUE.findall(rewrite)) if v and v not in have]


PARAPHRASE_PROMPT = (
    "Rewrite the user's task description below in natural, varied English, as a person would think "
    "about their own errand. Keep every name, number, code, date, amount and value exactly as written "
    "(character for character). Do not add facts. Do not mention tools, systems or steps. "
    "Reply with the rewritten description only."
)


def model_rewriter(spec: str, *, seed: int = 0) -> Callable[[str], str]:
    """A rewrite function backed by an agents chat model (`embedded`, `openai:<name>`, `anthropic:<name>`)."""
    import asyncio

    from toolshift.agents.config import RunConfig, make_model

    model = make_model(spec, RunConfig(world="bench", model=spec, temperature=0.7), seed=seed)

    def rewrite(text: str) -> str:
        messages = [{"role": "system", "content": PARAPHRASE_PROMPT}, {"role": "user", "content": text}]
        reply = asyncio.run(model.complete(messages, []))
        return reply.text or ""

    return rewrite
