"""The embedded agent's growing prompt, its forced text and its stop rule, on the real model and the clinic world."""

from __future__ import annotations

import asyncio
import json

import pytest

from toolshift.agents.chat import ToolDef
from toolshift.agents.copying import DONE_REPLY, action_grammar, request_done, tool_choice, write_asked
from toolshift.agents.demo import demo_tasks
from toolshift.agents.embedded import EmbeddedModel
from toolshift.agents.forcing import Forcer, patterns
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.users import END_TOOL, ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.traces.spans import spans_of
from toolshift.world import World


def _clinic_tools() -> list[ToolDef]:
    world = World.load("clinic")
    try:
        return [ToolDef(t.name, t.description, t.input_schema, t.effect == "read") for t in world.tools]
    finally:
        world.close()


def _episode(task, prompts: str, seed: int = 0):
    model = EmbeddedModel(seed=seed, prompts=prompts, slot=f"test-{prompts}")
    episode = asyncio.run(
        run_episode(task, model, ScriptedUser(task.public_request, task.instruction), world_opener("clinic"),
                    episode_id=f"{prompts}-{task.id}", limits=EpisodeLimits(max_turns=6))
    )  # fmt: skip
    return model, episode


def _not_extended(model: EmbeddedModel) -> list[int]:
    """The turns whose prompt is not the previous turn's prompt and output tokens, then more."""
    return [
        k
        for k, (before, after) in enumerate(zip(model.decodes, model.decodes[1:], strict=False), start=1)
        if after.evaluated[: len(before.evaluated)] != before.evaluated
        or len(after.evaluated) - len(after.tokens) <= len(before.evaluated)
    ]


@pytest.mark.slow
def test_the_prompt_only_grows_and_every_later_turn_is_served_from_the_cache():
    """Each later turn's prompt extends the previous prompt and the tokens the model decoded, exactly; the
    old builder (which rewrote the model's JSON and appended the request to the newest result) does not."""
    task = demo_tasks()[2]  # pay an invoice: a reply, a call, the result, the confirmation
    model, episode = _episode(task, "grow")
    assert len(model.decodes) >= 2, [m.content for m in episode.messages]
    assert _not_extended(model) == []
    for before, after in zip(model.decodes, model.decodes[1:], strict=False):
        assert after.cached_prompt_tokens == len(before.evaluated)  # all of it, from the KV cache
    assistant = [m for m in episode.messages if m.role == "assistant"]
    decoded = [m for m in assistant if m.usage.prompt_tokens]
    assert len(decoded) == len(model.decodes)
    for m, d in zip(decoded, model.decodes, strict=True):
        assert m.usage.cached_prompt_tokens == d.cached_prompt_tokens
        assert 0 <= m.usage.cached_prompt_tokens < m.usage.prompt_tokens
    # The stop rule's confirmation is the only output its grammar admits: given without decoding.
    told = [m for m in assistant if not m.usage.prompt_tokens]
    assert all(m.content == DONE_REPLY and m.usage.cached_prompt_tokens == 0 for m in told)
    recorded = json.loads(episode.model_dump_json())
    assert all("cached_prompt_tokens" in m["usage"] for m in recorded["messages"] if m["role"] == "assistant")

    old, _ = _episode(task, "rebuild")
    assert len(old.decodes) >= 3 and _not_extended(old) != []  # the check can fail


def _stand(messages, tools):
    model = EmbeddedModel()
    grammar, _ = model.grammar(messages, tools)
    return grammar


def test_after_a_write_went_through_the_agent_says_done_and_then_only_ends():
    tools = [*_clinic_tools(), END_TOOL]
    call = {"id": "c1", "type": "function",
            "function": {"name": "pay_invoice", "arguments": '{"invoice_id":"INV-00004"}'}}  # fmt: skip
    messages = [
        {"role": "system", "content": "You are a clinic's agent.\n\n# Policy\nBe kind."},
        {"role": "user", "content": "I'd like to pay my open invoice INV-00004."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "pay_invoice", "content": '{"invoice_id": "INV-00004", "status": "paid"}'},
    ]  # fmt: skip
    assert request_done(messages, tools) == "just_written"
    grammar = _stand(messages, tools)
    assert grammar.fixed_replies == (DONE_REPLY,) and grammar.tools == ()
    repeat = [*messages, {"role": "assistant", "content": DONE_REPLY},
              {"role": "user", "content": "My invoice id is INV-00004."}]  # fmt: skip
    assert request_done(repeat, tools) == "told"
    grammar = _stand(repeat, tools)
    assert grammar.tools == ("end_conversation",) and not grammar.can_reply
    anew = [*repeat[:-1], {"role": "user", "content": "Please also pay invoice INV-00007."}]
    assert request_done(anew, tools) == "open"
    assert "pay_invoice" in _stand(anew, tools).tools
    failed = [*messages[:-1], {**messages[-1], "content": '{"code": "invoice_not_open", "message": "no"}'}]
    assert request_done(failed, tools) == "open"  # a refused write is not a request done


def test_a_write_the_customer_did_not_name_is_not_offered():
    assert write_asked("update_patient", "Please change the email on my file.")
    assert not write_asked("create_doctor", "Please change the email on my file. ana@new.example")
    assert write_asked("pay_reissue_payslip", "Can you reissue my payslip?", "pay_")
    assert not write_asked("pay_terminate_employee", "Can you pay me?", "pay_")
    tools = [*_clinic_tools(), END_TOOL]
    messages = [{"role": "user", "content": "Change my email to ana@new.example. My name is Ana Abbott."}]
    offered = _stand(messages, tools).tools
    assert "create_doctor" not in offered and "create_patient" not in offered
    assert EmbeddedModel(stop_when_done=False).grammar(messages, tools)[0].tools != offered


def test_a_write_is_asked_by_its_verb_not_by_the_record_it_writes():
    said = "Can you help me check in attendee, please? My registration number is REG-00429."
    assert write_asked("evt_check_in_attendee", said, "evt_")
    assert not write_asked("evt_update_registration", said, "evt_")  # "registration" names the record only
    assert write_asked("ap_create_payment_batch", "Hello, I'd like to record a new payment batch.", "ap_")
    assert write_asked("ap_create_vendor_invoice", "Hi, I need a new vendor invoice set up.", "ap_")
    assert not write_asked("create_patient", "My new email is ana@new.example.")  # new what? not a patient
    assert not write_asked("create_doctor", "Change my email to ana@new.example.")
    # Renamed catalogs (bench versions): another verb for the act, a generic verb put in front.
    assert write_asked("ben_authorize_life_event", "Hi, I need to approve a life event.", "ben_")
    assert write_asked("ap_register_vendor_invoice", "Hi, I need a new vendor invoice set up.", "ap_")
    assert write_asked(
        "clm_perform_terminate_contract", "I must terminate a contract.", "clm_", ["contract_id"]
    )
    assert not write_asked(
        "clm_perform_update_contract", "I must terminate a contract.", "clm_", ["contract_id"]
    )


def test_the_prompt_lists_only_tools_the_agent_may_call_each_by_its_first_clause():
    from toolshift.agents.embedded import load_llama

    tools = [*_clinic_tools(), END_TOOL]
    llm, _ = load_llama(slot="test-grow")
    messages = [{"role": "system", "content": "# Policy\nBe kind."},
                {"role": "user", "content": "Please change the email on my file."}]  # fmt: skip
    model = EmbeddedModel()
    shown = [t.name for t in model._follow(messages, tools, llm)]
    assert "update_patient" in shown and "create_patient" not in shown
    system = model.transcript.system
    assert "- get_patient(patient_id): Get one patient by its patient_id\n" in system
    assert "create_patient" not in system
    later = [*messages, {"role": "assistant", "content": "What is your email?"},
             {"role": "user", "content": "My new email is ana@new.example."}]  # fmt: skip
    assert [t.name for t in model._follow(later, tools, llm)] == shown  # no write it may not call is added
    old = EmbeddedModel(prompts="rebuild")._system(messages, [t for t in tools if t.name == "get_patient"])
    assert "Get one patient by its patient_id. A registered patient" in old  # the builder before, unchanged


def _admitted(choice, values: dict[str, str]) -> str:
    args = ",".join(f"{json.dumps(k)}:{v}" for k, v in values.items())
    return '{"tool":' + json.dumps(choice.tool) + ',"arguments":{' + args + "}}"


def test_forced_text_is_always_what_the_output_goes_on_with():
    """Along outputs the grammar admits, the forced text is a prefix of what follows, and the output is
    complete only at its end; between two tools or two values nothing is forced."""
    tools = _clinic_tools()
    messages = [
        {"role": "user", "content": "Cancel appointment APT-00003 or APT-00004 for Ana Abbott, please."}
    ]
    spans = spans_of(messages)
    choices = [c for t in tools if (c := tool_choice(t, spans)) is not None]
    grammar = action_grammar(choices, can_reply=True, reply_chars=40)
    outputs = ['{"reply":"I will look into it."}']
    for c in choices:
        required = [a for a in c.args if a.required]
        if all(a.literals and not a.many for a in required) and not c.needs_one:
            for lit in required[0].literals if required else ["-"]:
                values = {a.name: (lit if a is required[0] else a.literals[-1]) for a in required}
                outputs.append(_admitted(c, values))
    assert len(outputs) > 5
    forced_chars = 0
    for out in outputs:
        forcer = Forcer(patterns(grammar))
        assert forcer.forced() == '{"'  # a call or a reply: the model chooses
        for i in range(len(out)):
            ahead = forcer.forced()
            assert out[i:].startswith(ahead), (out, i, ahead)
            assert not forcer.done()
            forced_chars += len(ahead) > 0
            forcer.advance(out[i])
        assert forcer.done(), out
    assert forced_chars > len(outputs) * 10  # most characters of a call are forced
    one = Forcer(patterns(action_grammar([], can_reply=True, fixed_replies=(DONE_REPLY,))))
    assert one.forced() == json.dumps({"reply": DONE_REPLY}, separators=(",", ":"))


@pytest.mark.slow
def test_no_collateral_write_on_the_demo_tasks():
    for task in demo_tasks():
        for seed in range(2):
            _, episode = _episode(task, "grow", seed)
            assert episode.outcome.info["collateral_changes"] == 0, (task.id, seed, episode.outcome.info)


def test_with_nothing_to_act_on_the_agent_asks_for_a_field_the_tools_need():
    tools = [*_clinic_tools(), END_TOOL]
    messages = [{"role": "user", "content": "I need to cancel my appointment."}]
    grammar = _stand(messages, tools)
    assert grammar.tools == () and "What is your appointment id?" in grammar.fixed_replies
    forcer = Forcer(patterns(grammar))
    assert forcer.forced() == '{"reply":"What is your '  # the model chooses only the field
    forcer.advance('{"reply":"What is your appoin')
    assert forcer.forced() == 'tment id?"}'
    free = EmbeddedModel(ask="free").grammar(messages, tools)[0]
    assert free.fixed_replies == () and free.can_reply and free.question


@pytest.mark.slow
def test_a_prompt_outgrowing_the_context_is_rebuilt_without_the_oldest_turns_and_grows_again():
    """Reads of long records, turn after turn, in a 900-token context: the transcript is rebuilt (dropping
    the oldest turns) instead of failing, and grows from the rebuilt prompt again."""
    tools = [t for t in _clinic_tools() if t.read_only]
    model = EmbeddedModel(seed=0, n_ctx=900, slot="test-small", stop_when_done=False)
    messages = [{"role": "system", "content": "You are a clinic's agent.\n\n# Policy\nLook things up."},
                {"role": "user", "content": "Please look up appointments APT-00003, APT-00004 and APT-00005."}]  # fmt: skip
    for turn in range(6):
        reply = asyncio.run(model.complete(messages, tools))
        if reply.calls:
            call = reply.calls[0]
            fn = {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}
            messages.append({"role": "assistant", "content": None,
                             "tool_calls": [{"id": call.id, "type": "function", "function": fn}]})  # fmt: skip
            record = {"appointment_id": f"APT-0000{turn}", "notes": "x" * 300, "status": "scheduled"}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": json.dumps(record)}
            )
        else:
            messages.append({"role": "assistant", "content": reply.text})
            messages.append({"role": "user", "content": "Please go on with APT-00004."})
    assert model.transcript is not None and model.transcript.rebuilds >= 1
    assert all(len(d.evaluated) <= 900 for d in model.decodes)
    assert _not_extended(model) != []  # the rebuild is the one place the prompt does not extend
    last = model.decodes[-1]
    assert last.cached_prompt_tokens > 0


def test_forced_text_is_admitted_in_one_batch_of_many_tokens():
    """`_force` moves the grammar along each token it admits: the whole forced text of a fixed reply goes in
    one batch (before D261 each token was probed against the state before the first, so only one passed)."""
    from llama_cpp import llama_cpp as C

    from toolshift.agents.decoding import _force, _grammar_filter
    from toolshift.agents.embedded import load_llama

    llm, lock = load_llama(slot="test-force")
    grammar = action_grammar([], can_reply=True, fixed_replies=(DONE_REPLY,))
    text = Forcer(patterns(grammar)).forced()
    with lock:
        sampler = C.llama_sampler_init_grammar(llm._model.vocab, grammar.text.encode(), b"root")
        try:
            ahead = _force(llm, sampler, text, limit=1000)
            assert llm.detokenize(ahead).decode() == text
            assert len(ahead) > 5
            import numpy as np

            eog = np.asarray([C.llama_vocab_eos(llm._model.vocab)], dtype=np.int32)
            assert np.isfinite(_grammar_filter(sampler, eog, np.zeros(1, dtype=np.float32)))[0]  # complete
            assert len(_force(llm, sampler, text, limit=1000)) == 0  # nothing more is admitted
        finally:
            C.llama_sampler_free(sampler)


SEARCH = ToolDef(
    "search_tools",
    "Find the company's tools for a need.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    True,
)


def _call(name: str, arguments: dict, k: int) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"c{k}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}  # fmt: skip


@pytest.mark.slow
def test_tools_a_search_exposed_are_listed_after_its_result_and_called_not_searched_again():
    """The standard setting: only `search_tools` is listed at first. Tools its result exposes are listed after
    that result (the prompt still only grows), and the next call is one of them — before D235 the growing
    prompt never listed them, so the model could only search again (999 of 1,109 calls on 42 tasks)."""
    model = EmbeddedModel(seed=0, slot="test-search")
    messages: list[dict] = [
        {"role": "system", "content": "# Policy\nThe clinic's service desk."},
        {"role": "user", "content": "Please look up appointment APT-0003 for me."},
        _call("search_tools", {"query": "look up"}, 0),
        {"role": "tool", "tool_call_id": "c0", "name": "search_tools", "content": '{"tools": []}'},
    ]
    first = asyncio.run(model.complete(messages, [SEARCH]))
    assert [c.name for c in first.calls] == [
        "search_tools"
    ]  # after a read, a call; the search is all there is
    exposed = [
        t for t in _clinic_tools() if t.name in ("get_appointment", "list_appointments", "get_patient")
    ]
    messages += [
        _call("search_tools", first.calls[0].arguments, 1),
        {"role": "tool", "tool_call_id": "c1", "name": "search_tools",
         "content": json.dumps({"tools": [{"name": t.name} for t in exposed]})},
    ]  # fmt: skip
    second = asyncio.run(model.complete(messages, [SEARCH, *exposed]))
    assert model.transcript is not None and model.transcript.rebuilds == 0  # the same prompt, grown
    result = model.transcript.chat[-2]["content"]  # the search's result, before the model's own call
    assert result.startswith("[result of search_tools]") and "More tools:" in result
    assert {t.name for t in exposed} <= {t.name for t in model.transcript.shown}
    assert [c.name for c in second.calls] != ["search_tools"]
    assert {c.name for c in second.calls} <= {t.name for t in exposed}
