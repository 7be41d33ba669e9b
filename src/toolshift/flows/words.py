"""Reading the request: an argument's value picked among the spans of the user's words, by a pattern or a model.

The ceiling's "with the user's words" counts read turns whose every value is in an earlier result or in
what the user wrote. A flow can only take those turns if something reads the words: a **picker**, given
what the user wrote so far, the tool about to be called and the argument's name, picks the value among
the spans of the user's words (one to six words, `toolshift.traces.spans`). `PatternPicker` is a rule
(the most recent span of the argument's shape); a model-backed picker (the embedded SmolLM2 in
`toolshift.agents.span_picker`) satisfies the same `WordsPicker` protocol. Flows never import a model:
it is found by name among the `toolshift.pickers` entry points when asked (`--picker embedded`).

`read_request` counts, as seed 003 does, the questions those turns pose (one per value taken from the
words), the values picked right, and the turns whose every value was picked right.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolshift.flows.timeline import OtherCallsEvent, Timeline, TurnEvent, UserEvent
from toolshift.flows.values import canonical, leaf_values, scalar_tokens
from toolshift.traces.spans import ConversationSpans, capitalised_runs, shape_of, word_spans

PICKERS = ("pattern", "embedded")


class WordsPicker(Protocol):
    """Picks an argument's value among the spans of what the user wrote, or None."""

    name: str

    def pick(self, words: str, tool: str, argument: str, spans: Sequence[str]) -> str | None: ...


def user_spans(words: str) -> list[str]:
    """The distinct spans of one to six words of `words`, in reading order."""
    return list(dict.fromkeys(word_spans(words)))


_QUOTED = re.compile(r"['\"“‘]([^'\"”’]{1,80})['\"”’]")


def argument_shape(argument: str) -> str:
    """The shape an argument's value has, guessed from its name: email, date, datetime, key or words."""
    name = argument.lower()
    if "email" in name:
        return "email"
    if "time" in name and "date" in name:
        return "datetime"
    if "date" in name or name in ("day", "deadline", "due"):
        return "date"
    if name == "id" or name.endswith(("_id", "_ids", "number", "code")):
        return "key"
    return "words"


@dataclass
class PatternPicker:
    """The rule: the most recent span of the argument's shape; for other arguments the most recent run of
    capitalised words (not a key, a date or a number), else the most recent quoted phrase."""

    name: str = "pattern"

    def pick(self, words: str, tool: str, argument: str, spans: Sequence[str]) -> str | None:
        shape = argument_shape(argument)
        allowed = set(spans)
        if shape != "words":
            found = ConversationSpans()
            found.add_user(words)
            values = [str(c.value) for c in found.of_shape(shape)]  # type: ignore[arg-type]
            values = [v for v in values if v in allowed and shape_of(v) == shape]
            return values[-1] if values else None
        runs = [r for r in capitalised_runs(words) if r in allowed and shape_of(r) == "words"]
        if runs:
            return runs[-1]
        quoted = [q.strip() for q in _QUOTED.findall(words) if q.strip() in allowed]
        return quoted[-1] if quoted else None


@dataclass
class Question:
    """One value of a read turn that only the user's words hold: what a picker must find."""

    episode: str
    turn: int
    tool: str
    argument: str
    value: str
    words: str


@dataclass
class Reading:
    """Reading the request on a set of episodes: the turns the words add, the questions, what was picked."""

    picker: str
    turns: int = 0
    ceiling: int = 0
    with_words: int = 0
    questions: int = 0
    right: int = 0
    taken: int = 0
    """Turns the words add whose every value the picker picked right."""
    by_tool: dict[str, list[int]] = field(default_factory=dict)
    """Per tool: [questions, right]."""

    @property
    def words_add(self) -> int:
        return self.with_words - self.ceiling

    def share_taken(self) -> float:
        return self.taken / self.words_add if self.words_add else float("nan")

    def share_right(self) -> float:
        return self.right / self.questions if self.questions else float("nan")

    def add(self, other: Reading) -> None:
        for name in ("turns", "ceiling", "with_words", "questions", "right", "taken"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for tool, (q, r) in other.by_tool.items():
            row = self.by_tool.setdefault(tool, [0, 0])
            row[0] += q
            row[1] += r


def words_questions(timeline: Timeline) -> tuple[int, int, list[list[Question]]]:
    """(ceiling turns, turns with the user's words, the questions of each turn the words add).

    The rule is the ceiling's (`toolshift.flows.ceiling`): a read turn after a tool response, every value
    in an earlier result, or (with the words) in what the user wrote, case-insensitively."""
    results: set[str] = set()
    said: list[str] = []
    lowered = ""
    responded = False
    ceiling = with_words = 0
    out: list[list[Question]] = []
    for event in timeline.events:
        if isinstance(event, UserEvent):
            said.append(event.text)
            lowered += "\n" + event.text.lower()
        elif isinstance(event, OtherCallsEvent):
            for i in event.calls:
                results |= scalar_tokens(timeline.calls[i].output)
            responded = True
        elif isinstance(event, TurnEvent):
            calls = [timeline.calls[i] for i in timeline.turns[event.turn]]
            if calls and responded and all(c.effect == "read" for c in calls):
                asked: list[Question] = []
                from_results = in_words = True
                for c in calls:
                    for name, value in c.arguments.items():
                        for leaf in leaf_values(value):
                            token = canonical(leaf)
                            if token in results:
                                continue
                            from_results = False
                            if token and token.lower() in lowered:
                                asked.append(Question(timeline.episode_id, event.turn, c.tool, name, token,
                                                      "\n".join(said)))  # fmt: skip
                            else:
                                in_words = False
                ceiling += from_results
                with_words += in_words
                if in_words and not from_results:
                    out.append(asked)
            for c in calls:
                results |= scalar_tokens(c.output)
            responded = responded or bool(calls)
    return ceiling, with_words, out


def picked_right(pick: str | None, value: str) -> bool:
    return pick is not None and pick.strip().lower() == value.strip().lower()


def read_request(
    timelines: Iterable[Timeline], picker: WordsPicker, *, progress: Callable[[], Any] | None = None
) -> Reading:
    """Ask the picker every question of the turns the user's words add; count values and turns right."""
    out = Reading(picker.name)
    for t in timelines:
        ceiling, with_words, turns = words_questions(t)
        out.turns += len(t.turns)
        out.ceiling += ceiling
        out.with_words += with_words
        for asked in turns:
            all_right = True
            for q in asked:
                ok = picked_right(picker.pick(q.words, q.tool, q.argument, user_spans(q.words)), q.value)
                out.questions += 1
                out.right += ok
                row = out.by_tool.setdefault(q.tool, [0, 0])
                row[0] += 1
                row[1] += ok
                all_right = all_right and ok
            out.taken += all_right
        if progress is not None:
            progress()
    return out


def count_questions(timelines: Iterable[Timeline]) -> int:
    return sum(len(q) for t in timelines for q in words_questions(t)[2])


PICKER_ENTRY_POINTS = "toolshift.pickers"
"""Entry-point group of model-backed pickers: `embedded` is the agents room's SmolLM2 picker (pyproject.toml).
Flows find a picker by name there and never import the room that holds the model (D179)."""


def picker_for(name: str, **options: Any) -> WordsPicker:
    """`pattern`, or a picker registered under `toolshift.pickers` (`embedded`: the embedded SmolLM2)."""
    from importlib.metadata import entry_points

    from toolshift.errors import BadInputError

    if name == "pattern":
        return PatternPicker()
    registered = {ep.name: ep for ep in entry_points(group=PICKER_ENTRY_POINTS)}
    if name in PICKERS and name in registered:
        return registered[name].load()(**options)
    if name in PICKERS:
        raise BadInputError(
            f"picker {name!r} is not installed: no {PICKER_ENTRY_POINTS} entry point named {name!r} "
            "(reinstall toolshift: `make test` or `pip install -e .`)",
            field="picker",
        )
    raise BadInputError(f"unknown picker {name!r}: one of {', '.join(PICKERS)}", field="picker")
