"""Reads the user asks for by name (flow format 6): a user message whose words hold a read's name words.

After each user message (once a tool has responded), a read is "asked" when every word of its ask — a
subset of its name's words (`intent.name_words`) — starts a word of that message the way intent words
match (the first five letters, or the whole word when shorter): "check the tire pressure" asks
`check_tire_pressure` by {tire, pressure}. Per read, the subset is learned from the training runs: of the
subsets of at most three of its name words matched by at least `MIN_MESSAGES` messages, the one whose
messages were most often followed by the agent calling the read before its next write (Laplace's
(count + 1)/(messages + 2); ties: more messages, then fewer words). Only reads the flow can bind
(`ToolFlow.binding_chance` > 0) get one. The decider scores an asked read by that chance times its binding
chance, as it scores a site's habit (`toolshift.flows.decide`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

from toolshift.flows.intent import _WORD, MIN_LETTERS, STEM, name_words
from toolshift.flows.model import Ask, ToolFlow
from toolshift.flows.timeline import Catalog, Timeline, TurnEvent, UserEvent

MIN_MESSAGES = 3
MAX_WORDS = 3


def message_stems(text: str) -> frozenset[str]:
    """Every prefix up to `STEM` letters of the message's words (so `word[:STEM]` of an ask word is looked up)."""
    out: set[str] = set()
    for w in _WORD.findall(text.lower()):
        if len(w) >= MIN_LETTERS:
            out.add(w[:STEM])
            out.update(w[:k] for k in range(MIN_LETTERS, min(len(w), STEM)))
    return frozenset(out)


def asked(words: Sequence[str], stems: frozenset[str]) -> bool:
    """Whether a message with these `message_stems` holds every ask word."""
    return bool(words) and all(w[:STEM] in stems for w in words)


def _messages(
    timeline: Timeline, catalog: Catalog
) -> list[tuple[frozenset[str], str | None, frozenset[str]]]:
    """Per user message after a tool responded: its stems, the agent's next call if a read (else None), and
    the reads the agent called before its next write."""
    pending: list[tuple[frozenset[str], list[str], set[str], list[bool]]] = []
    responded = False
    for event in timeline.events:
        if isinstance(event, UserEvent):
            if responded:
                pending.append((message_stems(event.text), [], set(), [False]))
        elif isinstance(event, TurnEvent):
            for i in timeline.turns[event.turn]:
                tool = timeline.calls[i].tool
                for _, first, reached, stopped in pending:
                    if stopped[0]:
                        continue
                    if not first:
                        first.append(tool)
                    if catalog.is_write(tool):
                        stopped[0] = True
                    elif catalog.is_read(tool):
                        reached.add(tool)
            responded = responded or bool(timeline.turns[event.turn])
        else:
            responded = True
    return [
        (stems, first[0] if first and catalog.is_read(first[0]) else None, frozenset(reached))
        for stems, first, reached, _ in pending
    ]


def learn_asks(
    timelines: Sequence[Timeline],
    catalog: Catalog,
    tools: dict[str, ToolFlow],
    weights: Mapping[str, int | float] | None = None,
) -> dict[str, Ask]:
    """Each bindable read's ask (the name-word subset and its counts), where one is matched often enough
    (`MIN_MESSAGES` messages, however weighed); each message counted by its episode's weight."""
    messages = [
        (*m, weights.get(t.episode_id, 1) if weights else 1) for t in timelines for m in _messages(t, catalog)
    ]
    out: dict[str, Ask] = {}
    for name in sorted(tools):
        if tools[name].binding_chance() <= 0.0:
            continue
        words = sorted(set(name_words(name)))
        best: Ask | None = None
        for k in range(1, min(MAX_WORDS, len(words)) + 1):
            for subset in combinations(words, k):
                matched = [m for m in messages if asked(subset, m[0])]
                if len(matched) < MIN_MESSAGES:
                    continue
                ask = Ask(
                    words=list(subset),
                    messages=sum(m[3] for m in matched),
                    next=sum(m[3] for m in matched if m[1] == name),
                    reach=sum(m[3] for m in matched if name in m[2]),
                )
                if ask.reach == 0:
                    continue
                rank = (ask.chance("reach"), ask.messages, -len(ask.words))
                if best is None or rank > (best.chance("reach"), best.messages, -len(best.words)):
                    best = ask
        if best is not None:
            out[name] = best
    return out
