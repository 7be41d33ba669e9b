"""Grammar-constrained decoding with llama.cpp: a GBNF grammar checked on the top tokens, and a prior over heads.

llama-cpp-python's sampler chain runs the grammar over the whole 49k-token vocabulary at every step; here
the grammar filters only the top-k tokens (the whole vocabulary only when none of them is allowed), which
keeps constrained decoding of a small model about as fast as the model. The KV cache is reused across a
conversation's turns.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolshift.agents.forcing import Forcer

_TOKEN_DATA = None


def _token_dtype() -> Any:
    import numpy as np

    global _TOKEN_DATA
    if _TOKEN_DATA is None:
        _TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
    return _TOKEN_DATA


def _grammar_filter(sampler: Any, ids: Any, logits: Any) -> Any:
    """The logits of `ids` with the tokens the grammar forbids here set to -inf (llama.cpp does the check)."""
    import ctypes

    import numpy as np
    from llama_cpp import llama_cpp as C

    buf = np.empty(len(ids), dtype=_token_dtype())
    buf["id"], buf["logit"], buf["p"] = ids, logits, 0.0
    arr = C.llama_token_data_array(
        data=buf.ctypes.data_as(C.llama_token_data_p), size=len(ids), selected=-1, sorted=False
    )
    C.llama_sampler_apply(sampler, ctypes.byref(arr))
    return buf["logit"]


def _pick_token(
    sampler: Any, logits: Any, top_k: int, temperature: float, rng: Any, priors: Sequence[Prior] = (),
    text: Text | None = None,
) -> int:  # fmt: skip
    """Sample among the top-k tokens the grammar allows; only if it allows none of them, check the whole vocabulary.

    llama-cpp-python's sampler chain runs the grammar over all 49k tokens at every step, which makes
    constrained decoding of this small model an order of magnitude slower than the model itself. Active
    `priors` add the tokens they favour to the candidates, and their bias to the logits.
    """
    import numpy as np

    top = np.argpartition(-logits, top_k)[:top_k].astype(np.int32)
    extra = [t for p in priors for t in p.next_tokens(text)] if text is not None else []
    if extra:
        top = np.unique(np.concatenate([top, np.asarray(extra, dtype=np.int32)]))
    allowed = _grammar_filter(sampler, top, logits[top])
    ok = np.isfinite(allowed)
    if not ok.any():
        top = np.arange(len(logits), dtype=np.int32)
        allowed = _grammar_filter(sampler, top, logits)
        ok = np.isfinite(allowed)
    ids, values = top[ok], allowed[ok]
    if priors and text is not None:
        values = values + np.asarray(
            [sum(p.bias(text, text.piece(int(i))) for p in priors) for i in ids], dtype=np.float32
        )
    if temperature <= 0:
        return int(ids[np.argmax(values)])
    weights = np.exp((values - values.max()) / temperature)
    return int(rng.choice(ids, p=weights / weights.sum()))


class Text:
    """The output decoded so far, and each token's text (cached)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.value = ""
        self._pieces: dict[int, str] = {}

    def piece(self, token: int) -> str:
        found = self._pieces.get(token)
        if found is None:
            found = self._pieces[token] = self.llm.detokenize([token]).decode("utf-8", "replace")
        return found

    def first_token(self, text: str) -> int:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)[0]

    def accept(self, token: int) -> None:
        self.value += self.piece(token)


class Prior(Protocol):
    """A bias on the model's next token, from what the output says so far."""

    def active(self, text: Text) -> bool: ...

    def next_tokens(self, text: Text) -> list[int]: ...

    def bias(self, text: Text, piece: str) -> float: ...


def _lse(weights: list[float]) -> float | None:
    if not weights:
        return None
    top = max(weights)
    return top + math.log(sum(math.exp(w - top) for w in weights))


class HeadPrior:
    """A prior over the heads an output may begin with (`{"tool":"NAME"`), as a bias on each token while the
    output is still inside a head: log Σ w(heads still possible after the token) − log Σ w(heads possible now).

    Multiplying the model's distribution by it gives the model's choice of head weighed by the prior, and
    leaves every other token (a reply, the arguments) as the model decodes it."""

    def __init__(self, heads: dict[str, float]) -> None:
        self.heads = heads

    def active(self, text: Text) -> bool:
        return any(h.startswith(text.value) and len(text.value) < len(h) for h in self.heads)

    def _mass(self, text: str) -> float | None:
        return _lse([w for h, w in self.heads.items() if h.startswith(text) or text.startswith(h)])

    def next_tokens(self, text: Text) -> list[int]:
        done = text.value
        return [
            text.first_token(h[len(done) :]) for h in self.heads if h.startswith(done) and len(done) < len(h)
        ]

    def bias(self, text: Text, piece: str) -> float:
        now, after = self._mass(text.value), self._mass(text.value + piece)
        return 0.0 if now is None or after is None else after - now


class CopyPrior:
    """Inside a free-text value (`"note":"…`), a bias toward tokens that go on copying one of the user's spans.

    Free text stays free (the grammar admits any text); the model, which tends to paraphrase, is nudged to
    copy what the user dictated when its text so far is the beginning of one of their spans."""

    def __init__(self, spans: dict[str, list[str]], weight: float = 3.0) -> None:
        self.weight = weight
        self.spans = spans
        names = "|".join(re.escape(json.dumps(n)) for n in spans)
        self._open = re.compile(rf"(?:{names}):\"([^\"\\]*)$") if spans else None

    def _value(self, text: Text) -> tuple[str, list[str]] | None:
        if self._open is None:
            return None
        m = self._open.search(text.value)
        if m is None:
            return None
        name = json.loads(text.value[m.start() : m.start() + m.group(0).index(":")])
        return m.group(1), self.spans.get(name, [])

    def active(self, text: Text) -> bool:
        found = self._value(text)
        return found is not None and any(s.startswith(found[0]) for s in found[1])

    def next_tokens(self, text: Text) -> list[int]:
        found = self._value(text)
        if found is None:
            return []
        partial, spans = found
        return [text.first_token(s[len(partial) :] + '"') for s in spans if s.startswith(partial)]

    def bias(self, text: Text, piece: str) -> float:
        found = self._value(text)
        if found is None:
            return 0.0
        partial, spans = found
        after = partial + piece
        for span in spans:
            if span.startswith(partial) and (span.startswith(after) or after.startswith(span + '"')):
                return self.weight
        return 0.0


@dataclass
class Generated:
    """One constrained decode: the text, the tokens it used and how many came from the KV cache."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    """Prompt tokens already in the model's KV cache (not evaluated again)."""
    tokens: list[int] = field(default_factory=list)
    """The output's tokens as decoded (sampled or forced), without the end-of-turn token."""
    forced_tokens: int = 0
    """Output tokens the grammar forced, evaluated in batches rather than sampled one by one."""
    evaluated: list[int] = field(default_factory=list)
    """Everything the KV cache holds after the decode: the prompt and the output tokens."""


def _force(llm: Any, sampler: Any, text: str, limit: int) -> list[int]:
    """The tokens of `text` the llama.cpp grammar accepts, in order, up to the first it does not (at most `limit`).

    Each accepted token is fed to the grammar before the next is probed (the grammar's state moves with the
    text), so the caller must not accept them again. Probing every token against the state before the first
    (as this did until D261) admitted only the first token or two, and forced text went one token a batch.
    """
    import numpy as np
    from llama_cpp import llama_cpp as C

    out: list[int] = []
    for token in llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)[:limit]:
        probe = np.asarray([token], dtype=np.int32)
        if not np.isfinite(_grammar_filter(sampler, probe, np.zeros(1, dtype=np.float32)))[0]:
            break
        C.llama_sampler_accept(sampler, token)
        out.append(token)
    return out


def constrained_generate(
    llm: Any,
    prompt: str | list[int],
    grammar: str,
    *,
    max_tokens: int,
    temperature: float,
    seed: int,
    top_k: int = 40,
    priors: Sequence[Prior] = (),
    forcer: Forcer | None = None,
) -> Generated:
    """Decode `prompt` (text, or its tokens) under the GBNF `grammar` (root rule `root`).

    The longest prefix already in the model's KV cache is reused, so a conversation's next turn only
    evaluates what is new. `priors` bias the model's tokens (`HeadPrior`, `CopyPrior`). `forcer`: the
    grammar's own alternatives (`toolshift.agents.forcing`); text every open alternative continues with
    is evaluated in one batch instead of sampled token by token, and decoding stops as soon as the output
    is complete. The caller holds the model's lock.
    """
    import numpy as np
    from llama_cpp import llama_cpp as C

    if isinstance(prompt, str):
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    else:
        tokens = list(prompt)
    prefix = 0
    for cached, token in zip(llm._input_ids, tokens, strict=False):
        if cached != token:
            break
        prefix += 1
    llm.n_tokens = min(prefix, len(tokens) - 1)
    cached_tokens = llm.n_tokens
    llm.eval(tokens[llm.n_tokens :])
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    sampler = C.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("llama.cpp refused the action grammar")
    rng = np.random.default_rng(seed)
    text = Text(llm)
    out: list[int] = []
    forced_count = 0
    try:
        while len(out) < max_tokens:
            if forcer is not None:
                if forcer.done():
                    break
                ahead = _force(llm, sampler, forcer.forced(), max_tokens - len(out))
                if ahead:
                    for token in ahead:
                        text.accept(token)
                    forcer.advance(llm.detokenize(ahead).decode("utf-8", "replace"))
                    out += ahead
                    forced_count += len(ahead)
                    llm.eval(ahead)
                    continue
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).copy()
            active = [p for p in priors if p.active(text)]
            token = _pick_token(sampler, logits, top_k, temperature, rng, active, text)
            if C.llama_vocab_is_eog(vocab, token):
                break
            text.accept(token)
            C.llama_sampler_accept(sampler, token)
            if forcer is not None:
                forcer.advance(text.piece(token))
            out.append(token)
            llm.eval([token])
    finally:
        C.llama_sampler_free(sampler)
    return Generated(
        text=llm.detokenize(out).decode("utf-8", "replace"),
        prompt_tokens=len(tokens),
        completion_tokens=len(out),
        cached_prompt_tokens=cached_tokens,
        tokens=out,
        forced_tokens=forced_count,
        evaluated=[*tokens, *out],
    )


def chatml(messages: list[dict[str, str]]) -> str:
    """SmolLM2's chat template (ChatML), ending where the assistant's turn begins."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"
