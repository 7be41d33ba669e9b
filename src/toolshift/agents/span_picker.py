"""The embedded model reading the request: it picks an argument's value among the spans of the user's words.

It satisfies `toolshift.flows.words.WordsPicker` by shape (this module does not import flows): shown what
the user wrote, the tool about to be called and the argument's name, SmolLM2 decodes greedily under a
grammar whose only strings are the spans offered, so its answer is always one of them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from toolshift.agents.copying import gbnf_literal
from toolshift.agents.decoding import chatml, constrained_generate
from toolshift.agents.embedded import load_llama
from toolshift.errors import BadInputError
from toolshift.traces.store import write_text_atomic

INSTRUCTION = (
    "You read what a user wrote and give the exact value of one argument of the tool call the agent makes "
    "next: copy only the value itself, without the words around it. "
    'Answer with JSON only: {"value": "THE WORDS"}.'
)
WORDS_CHARS = 1200
EXAMPLES = (  # written here, not taken from any benchmark
    ("please send the monthly report to priya before friday", "email.send_email", "recipient", "priya"),
    (
        "Hi, I'm Tom Reyes. Can you move my booking BK-2291 to next week?",
        "get_booking",
        "booking_id",
        "BK-2291",
    ),
)


def _question(words: str, tool: str, argument: str) -> str:
    return f"The user wrote:\n{words}\n\nThe agent calls {tool}. What is its argument {argument!r}?"


class EmbeddedSpanPicker:
    """SmolLM2-135M picking a span; answers are cached per (words, tool, argument)."""

    name = "embedded"

    def __init__(self, *, n_ctx: int = 2048, n_threads: int = 1, cache: Path | None = None) -> None:
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.cache: dict[tuple[str, str, str], str | None] = {}
        self.timing: dict[tuple[str, str, str], float] = {}
        """Seconds each answer took when it was decoded."""
        self.cache_path = cache
        """A JSON file of earlier answers (greedy decoding: the same question gets the same answer), kept up to date."""
        if cache is not None and cache.exists():
            try:
                for row in json.loads(cache.read_text(encoding="utf-8")):
                    key = (row["words"], row["tool"], row["argument"])
                    self.cache[key], self.timing[key] = row["value"], float(row["seconds"])
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInputError(f"not a picks cache: {exc}", source=str(cache)) from None
        self.seconds = 0.0
        self.asked = 0

    def prompt(self, words: str, tool: str, argument: str) -> str:
        shown = words if len(words) <= WORDS_CHARS else words[-WORDS_CHARS:]
        chat = [{"role": "system", "content": INSTRUCTION}]
        for said, call, name, value in EXAMPLES:
            chat.append({"role": "user", "content": _question(said, call, name)})
            chat.append({"role": "assistant", "content": json.dumps({"value": value})})
        chat.append({"role": "user", "content": _question(shown, tool, argument)})
        return chatml(chat)

    def pick(self, words: str, tool: str, argument: str, spans: Sequence[str]) -> str | None:
        key = (words, tool, argument)
        if key in self.cache:
            return self.cache[key]
        options = list(dict.fromkeys(s for s in spans if s))
        if not options:
            self.cache[key] = None
            return None
        start = time.perf_counter()
        literals = [gbnf_literal(json.dumps(s, ensure_ascii=False)) for s in options]
        grammar = f'root ::= "{{\\"value\\":" ({" | ".join(literals)}) "}}"\n'
        longest = max(len(json.dumps(s, ensure_ascii=False).encode()) for s in options)
        llm, lock = load_llama(self.n_ctx, self.n_threads, "reader")
        with lock:
            text = constrained_generate(
                llm,
                self.prompt(words, tool, argument),
                grammar,
                max_tokens=longest + 12,
                temperature=0.0,
                seed=0,
            ).text
        try:
            value = json.loads(text)["value"]
        except (ValueError, KeyError, TypeError):
            value = None
        self.cache[key] = value
        self.timing[key] = time.perf_counter() - start
        self.seconds += self.timing[key]
        self.asked += 1
        if self.cache_path is not None:
            rows = [
                {
                    "words": w,
                    "tool": t,
                    "argument": a,
                    "value": v,
                    "seconds": round(self.timing.get((w, t, a), 0.0), 3),
                }
                for (w, t, a), v in self.cache.items()
            ]
            write_text_atomic(self.cache_path, json.dumps(rows, ensure_ascii=False) + "\n")
        return value
