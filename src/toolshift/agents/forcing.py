"""What an action grammar forces next: the text every admitted output continues with, for jump-forward decoding.

An action grammar (`toolshift.agents.copying.action_grammar`) admits a call of one of a few tools or a
reply; most of its bytes are fixed once a few choices are made (`{"tool":"`, the rest of a tool's name
after its first distinguishing token, `","arguments":{"appointment_id":`, the rest of the one value left).
`Forcer` follows the output decoded so far through the same alternatives the grammar spells and returns
the longest text every alternative still open continues with; the decoder evaluates those tokens in one
batch instead of sampling them one forward pass each. It is conservative: a list argument or an optional
argument set too large to spell out forces nothing from its start, so it never forces what the grammar
leaves open (the decoder also checks each forced token against the llama.cpp grammar before using it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations

from toolshift.agents.copying import ActionGrammar, ArgChoice, ToolChoice

MAX_SUBSETS = 64
"""Optional-argument subsets spelled out per tool; past this its arguments force nothing."""


@dataclass(frozen=True)
class Free:
    """Free text of at most `limit` printable ASCII characters other than the quote and the backslash."""

    limit: int


class Opaque:
    """A stretch the forcer does not follow (a list): nothing is forced from its start on."""


OPAQUE = Opaque()
Atom = str | Free | Opaque
Option = tuple[Atom, ...]
Part = tuple[Option, ...]
"""A part of an output: one of its options (each a run of atoms)."""
Pattern = tuple[Part, ...]
State = tuple[int, int, int, int, int]
"""(pattern, part, option, atom, offset into the atom)."""

END = -1


def _free_char(c: str) -> bool:
    return " " <= c <= "~" and c not in '"\\'


def _value(arg: ArgChoice) -> Part:
    if arg.many:
        return ((OPAQUE,),)
    options: list[Option] = [(lit,) for lit in arg.literals]
    if arg.free:
        options.append(('"', Free(arg.free), '"'))
    return tuple(options)


def _arg(arg: ArgChoice, comma: bool) -> list[Part]:
    return [((("," if comma else "") + json.dumps(arg.name) + ":",),), _value(arg)]


def _patterns_of(choice: ToolChoice) -> list[Pattern]:
    head: Part = (('{"tool":' + json.dumps(choice.tool) + ',"arguments":{',),)
    tail: Part = (("}}",),)
    required = [a for a in choice.args if a.required]
    optional = [a for a in choice.args if not a.required]
    body: list[Part] = []
    for k, arg in enumerate(required):
        body += _arg(arg, k > 0)
    if optional and choice.needs_one:  # a search: exactly one filter
        return [(head, *_arg(arg, False), tail) for arg in optional]
    if not optional:
        return [(head, *body, tail)]
    subsets = [s for n in range(len(optional) + 1) for s in combinations(optional, n)]
    if len(subsets) > MAX_SUBSETS:
        return [(head, *body, ((OPAQUE,),))]
    out = []
    for subset in subsets:
        parts = list(body)
        for arg in subset:
            parts += _arg(arg, bool(parts))
        out.append((head, *parts, tail))
    return out


def patterns(grammar: ActionGrammar) -> list[Pattern]:
    """The grammar's outputs as patterns of literal text, alternatives and free text."""
    out = [p for c in grammar.choices for p in _patterns_of(c)]
    if grammar.can_reply and grammar.fixed_replies:
        said = [json.dumps({"reply": r}, separators=(",", ":")) for r in grammar.fixed_replies]
        out.append((tuple((x,) for x in said),))
    elif grammar.can_reply:
        end = '?"}' if grammar.question else '"}'
        out.append(((('{"reply":"', Free(grammar.reply_chars), end),),))
    return out


class Forcer:
    """Follows decoded text through the patterns; `forced()` is the text all open alternatives continue with."""

    def __init__(self, pats: list[Pattern]) -> None:
        self.pats = pats
        self.states: set[State] = set()
        for p in range(len(pats)):
            self.states |= self._enter(p, 0)

    def _enter(self, p: int, i: int) -> set[State]:
        """The states at the start of part i of pattern p (END past its last part)."""
        if i == len(self.pats[p]):
            return {(p, END, 0, 0, 0)}
        out: set[State] = set()
        for o in range(len(self.pats[p][i])):
            out |= self._settle((p, i, o, 0, 0))
        return out

    def _settle(self, s: State) -> set[State]:
        """`s` and the states reached from it without consuming a character."""
        p, i, o, a, j = s
        if i == END:
            return {s}
        option = self.pats[p][i][o]
        if a == len(option):
            return self._enter(p, i + 1)
        atom = option[a]
        if isinstance(atom, str):
            return {s} if j < len(atom) else self._settle((p, i, o, a + 1, 0))
        if isinstance(atom, Free):
            return {s} | self._settle((p, i, o, a + 1, 0))
        return {s}

    def advance(self, text: str) -> None:
        for c in text:
            nxt: set[State] = set()
            for s in self.states:
                p, i, o, a, j = s
                if i == END:
                    continue
                atom = self.pats[p][i][o][a]
                if isinstance(atom, str):
                    if atom[j] == c:
                        nxt |= self._settle((p, i, o, a, j + 1))
                elif isinstance(atom, Free):
                    if j < atom.limit and _free_char(c):
                        nxt |= self._settle((p, i, o, a, j + 1))
                else:
                    nxt.add(s)
            self.states = nxt

    def done(self) -> bool:
        """Every open alternative is complete: the output can only end here."""
        return bool(self.states) and all(s[1] == END for s in self.states)

    def _continuation(self, s: State) -> str:
        p, i, o, a, j = s
        out = ""
        while i != END:
            option = self.pats[p][i][o]
            while a < len(option):
                atom = option[a]
                if not isinstance(atom, str):
                    return out
                out += atom[j:]
                a, j = a + 1, 0
            i += 1
            if i == len(self.pats[p]) or len(self.pats[p][i]) != 1:
                return out
            o, a = 0, 0
        return out

    def forced(self) -> str:
        """The longest text every open alternative continues with ("" when the model must choose)."""
        if not self.states:
            return ""
        conts = [self._continuation(s) for s in self.states]
        first = min(conts, key=len)
        for n, c in enumerate(first):
            if any(other[n] != c for other in conts):
                return first[:n]
        return first
