"""The model a skill method writes, merges, analyses and validates with: one call, fixed fields, every token logged.

Every method's model call goes through `MethodModel.ask`: a system and a user message in, an answer of named
fields out (free text up to a length, or one of a few options). The embedded model answers under a llama.cpp
grammar that admits exactly that JSON object, so a 135M model's answer always parses; an API model is given
one function with those fields and called until it calls it or answers in JSON. Each call's prompt and
completion tokens, as the backend reports them, are appended to the method's ledger with the call's id, so
maintenance tokens are counted the same way for every method, and a resumed run reads an answer from the
ledger instead of asking again (the same id and prompt).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolshift.fileio import jsonl_lines, repair_jsonl_tail

MAX_PROMPT_CHARS = 9000
"""The user message is cut to this many characters (the embedded model's context is 4,096 tokens)."""


@dataclass(frozen=True)
class Field:
    """One field of an answer: free text of at most `limit` characters, or one of `options`."""

    kind: Literal["text", "choice"] = "text"
    limit: int = 400
    options: tuple[str, ...] = ()


@dataclass
class Spent:
    """One model call's record in a method's ledger."""

    id: str
    version: int
    purpose: str
    prompt_tokens: int
    completion_tokens: int
    digest: str
    answer: dict[str, str]


class Ledger:
    """A method's model calls, one JSON line each (`calls.jsonl`): its maintenance tokens, and its answers for a
    resumed run. Appended as each call ends; a torn last line (a killed run) is dropped on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: dict[str, Spent] = {}
        if path.exists():
            repair_jsonl_tail(path)
            with path.open("rb") as fh:
                for line in jsonl_lines(fh, source=str(path)):
                    if not line.is_blank():
                        row = json.loads(line.data)
                        self.calls[row["id"]] = Spent(**row)

    def add(self, spent: Spent) -> None:
        self.calls[spent.id] = spent
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(spent.__dict__, ensure_ascii=False, sort_keys=True) + "\n")

    def tokens(self, version: int) -> dict[str, int]:
        """Prompt + completion tokens of the version's calls, per purpose."""
        out: dict[str, int] = {}
        for c in self.calls.values():
            if c.version == version:
                out[c.purpose] = out.get(c.purpose, 0) + c.prompt_tokens + c.completion_tokens
        return out

    def count(self, version: int) -> int:
        return sum(1 for c in self.calls.values() if c.version == version)


def _lit(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _gbnf(fields: dict[str, Field]) -> str:
    """The grammar of the JSON object with exactly these fields, in order (free text: no quote, backslash or
    control character, so the object always parses)."""
    parts, rules = [], [r'ch ::= [^"\\\x00-\x1f]']
    for k, (name, f) in enumerate(fields.items()):
        parts += [_lit(("{" if k == 0 else ", ") + json.dumps(name) + ": "), f"v{k}"]
        if f.kind == "choice":
            rules.append(f"v{k} ::= " + " | ".join(_lit(json.dumps(o)) for o in f.options))
        else:
            rules.append(f"v{k} ::= {_lit(chr(34))} ch{{1,{f.limit}}} {_lit(chr(34))}")
    return "\n".join([f"root ::= {' '.join(parts)} {_lit('}')}", *rules])


class MethodModel:
    """A method's model (any of `toolshift run`'s `embedded`, `openai:<m>`, `anthropic:<m>`), its calls logged."""

    def __init__(
        self, spec: str, ledger: Ledger, *, base_url: str | None = None, temperature: float = 0.7
    ) -> None:
        self.spec = spec
        self.ledger = ledger
        self.base_url = base_url
        self.temperature = temperature
        self.version = 0
        self._api: Any = None

    def ask(
        self, call_id: str, purpose: str, system: str, user: str, fields: dict[str, Field]
    ) -> dict[str, str]:
        """The answer's fields (each present; "" where an API model left one out). Logged under `call_id`."""
        user = user if len(user) <= MAX_PROMPT_CHARS else user[:MAX_PROMPT_CHARS] + " …"
        digest = hashlib.sha256(json.dumps([system, user, list(fields)]).encode()).hexdigest()[:16]
        done = self.ledger.calls.get(call_id)
        if done is not None and done.digest == digest:
            return done.answer
        seed = zlib.crc32(call_id.encode())
        if self.spec.startswith("embedded"):
            answer, p, c = self._embedded(system, user, fields, seed)
        else:
            answer, p, c = self._remote(system, user, fields, seed)
        answer = {k: str(answer.get(k, "")) for k in fields}
        for k, f in fields.items():
            if f.kind == "choice" and answer[k] not in f.options:
                answer[k] = f.options[0]
        self.ledger.add(Spent(call_id, self.version, purpose, p, c, digest, answer))
        return answer

    def _embedded(
        self, system: str, user: str, fields: dict[str, Field], seed: int
    ) -> tuple[dict[str, Any], int, int]:
        from toolshift.agents.decoding import chatml, constrained_generate
        from toolshift.agents.embedded import N_CTX, load_llama

        llm, lock = load_llama(slot="methods")
        budget = sum(f.limit if f.kind == "text" else 8 for f in fields.values()) + 8 * len(fields) + 8
        with lock:
            while True:
                prompt = chatml([{"role": "system", "content": system}, {"role": "user", "content": user}])
                n = len(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
                if n + budget <= N_CTX or len(user) < 200:
                    break
                user = user[: int(len(user) * 0.8)] + " …"
            got = constrained_generate(
                llm, prompt, _gbnf(fields), max_tokens=budget, temperature=self.temperature, seed=seed
            )
        try:
            answer = json.loads(got.text)
        except json.JSONDecodeError:  # only when the token cap cut a field short
            answer = {}
        return answer, got.prompt_tokens, got.completion_tokens

    def _remote(
        self, system: str, user: str, fields: dict[str, Field], seed: int
    ) -> tuple[dict[str, Any], int, int]:
        from toolshift.agents.chat import ToolDef
        from toolshift.agents.config import RunConfig, make_model

        if self._api is None:
            config = RunConfig(
                world="-", model=self.spec, base_url=self.base_url, temperature=self.temperature
            )
            self._api = make_model(self.spec, config, seed=seed)
        props = {
            k: {"type": "string", "enum": list(f.options)} if f.kind == "choice"
            else {"type": "string", "maxLength": f.limit}
            for k, f in fields.items()
        }  # fmt: skip
        tool = ToolDef(
            "answer", "Give your answer.", {"type": "object", "properties": props, "required": list(props)}
        )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        reply = asyncio.run(self._api.complete(messages, [tool]))
        p, c = reply.prompt_tokens or 0, reply.completion_tokens or 0
        if reply.calls and reply.calls[0].arguments is not None:
            return reply.calls[0].arguments, p, c
        try:
            found = json.loads(reply.text or "")
        except json.JSONDecodeError:
            found = {}
        return (found if isinstance(found, dict) else {}), p, c


__all__ = ["Field", "Ledger", "MethodModel", "Spent"]
