"""Grammar-constrained decoding with llama.cpp: a GBNF grammar checked on the top tokens, and a prior over heads.

llama-cpp-python's sampler chain runs the grammar over the whole 49k-token vocabulary at every step; here
the grammar filters only the top-k tokens (the whole vocabulary only when none of them is allowed), which
keeps constrained decoding of a small model about as fast as the model. The KV cache is reused across a
conversation's turns.
"""

from __future__ import annotations

import math
from typing import Any

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
    sampler: Any, logits: Any, top_k: int, temperature: float, rng: Any, prior: HeadPrior | None = None
) -> int:
    """Sample among the top-k tokens the grammar allows; only if it allows none of them, check the whole vocabulary.

    llama-cpp-python's sampler chain runs the grammar over all 49k tokens at every step, which makes
    constrained decoding of this small model an order of magnitude slower than the model itself. While
    a `prior` is active, its heads' next tokens are candidates too and their logits get its bias.
    """
    import numpy as np

    top = np.argpartition(-logits, top_k)[:top_k].astype(np.int32)
    if prior is not None:
        top = np.unique(np.concatenate([top, np.asarray(prior.next_tokens(), dtype=np.int32)]))
    allowed = _grammar_filter(sampler, top, logits[top])
    ok = np.isfinite(allowed)
    if not ok.any():
        top = np.arange(len(logits), dtype=np.int32)
        allowed = _grammar_filter(sampler, top, logits)
        ok = np.isfinite(allowed)
    ids, values = top[ok], allowed[ok]
    if prior is not None:
        values = values + np.asarray([prior.bias(int(i)) for i in ids], dtype=np.float32)
    if temperature <= 0:
        return int(ids[np.argmax(values)])
    weights = np.exp((values - values.max()) / temperature)
    return int(rng.choice(ids, p=weights / weights.sum()))


class HeadPrior:
    """A prior over the heads an output may begin with (`{"tool":"NAME"`), as a bias on each token while the
    output is still inside a head: log Σ w(heads still possible after the token) − log Σ w(heads possible now).

    Multiplying the model's distribution by it gives the model's choice of head weighed by the prior, and
    leaves every other token (a reply, the arguments) as the model decodes it."""

    def __init__(self, llm: Any, heads: dict[str, float]) -> None:
        self.llm = llm
        self.heads = heads
        self.text = ""
        self._pieces: dict[int, str] = {}

    @property
    def active(self) -> bool:
        return any(h.startswith(self.text) and len(self.text) < len(h) for h in self.heads)

    def _mass(self, text: str) -> float | None:
        weights = [w for h, w in self.heads.items() if h.startswith(text) or text.startswith(h)]
        if not weights:
            return None
        top = max(weights)
        return top + math.log(sum(math.exp(w - top) for w in weights))

    def next_tokens(self) -> list[int]:
        out = []
        for head in self.heads:
            if head.startswith(self.text) and len(self.text) < len(head):
                rest = head[len(self.text) :].encode("utf-8")
                out.append(self.llm.tokenize(rest, add_bos=False, special=False)[0])
        return out

    def bias(self, token: int) -> float:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.llm.detokenize([token]).decode("utf-8", "replace")
        now, after = self._mass(self.text), self._mass(self.text + piece)
        return 0.0 if now is None or after is None else after - now

    def accept(self, token: int) -> None:
        self.text += self._pieces.get(token) or self.llm.detokenize([token]).decode("utf-8", "replace")


def constrained_generate(
    llm: Any,
    prompt: str,
    grammar: str,
    *,
    max_tokens: int,
    temperature: float,
    seed: int,
    top_k: int = 40,
    heads: dict[str, float] | None = None,
) -> tuple[str, int, int]:
    """Decode `prompt` under the GBNF `grammar` (root rule `root`): (text, prompt tokens, completion tokens).

    The longest prefix already in the model's KV cache is reused, so a conversation's next turn only
    evaluates what is new. `heads`: a prior over how the output begins (`HeadPrior`). The caller holds
    the model's lock.
    """
    import numpy as np
    from llama_cpp import llama_cpp as C

    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    prefix = 0
    for cached, token in zip(llm._input_ids, tokens, strict=False):
        if cached != token:
            break
        prefix += 1
    llm.n_tokens = min(prefix, len(tokens) - 1)
    llm.eval(tokens[llm.n_tokens :])
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    sampler = C.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("llama.cpp refused the action grammar")
    rng = np.random.default_rng(seed)
    prior = HeadPrior(llm, heads) if heads else None
    out: list[int] = []
    try:
        for _ in range(max_tokens):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).copy()
            active = prior if prior is not None and prior.active else None
            token = _pick_token(sampler, logits, top_k, temperature, rng, active)
            if C.llama_vocab_is_eog(vocab, token):
                break
            if active is not None:
                active.accept(token)
            C.llama_sampler_accept(sampler, token)
            out.append(token)
            llm.eval([token])
    finally:
        C.llama_sampler_free(sampler)
    return llm.detokenize(out).decode("utf-8", "replace"), len(tokens), len(out)


def chatml(messages: list[dict[str, str]]) -> str:
    """SmolLM2's chat template (ChatML), ending where the assistant's turn begins."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"
