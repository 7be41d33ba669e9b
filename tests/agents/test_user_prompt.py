"""The embedded user simulator keeps every fact and rule of its instruction, or fails loudly (issue 10)."""

from __future__ import annotations

import asyncio

import pytest

from toolshift.agents.embedded import EmbeddedModel
from toolshift.agents.users import END_CONVERSATION, END_TOOL, LLMUser, UserSimulatorError
from toolshift.models import UserInstruction

RULES = [  # the benchmark build's rules, verbatim
    "Open with your one-line request only; give a fact when the agent asks for it or clearly needs it.",
    "Only state facts listed in this manual; if asked for anything else, say you do not know it.",
    "Never mention tools, functions, databases or how the agent should do its work.",
    "If the agent proposes something different from what you want, decline and restate what you want.",
    "When everything you asked for is done, thank the agent and end the conversation.",
]


def _instruction(**facts: str) -> UserInstruction:
    return UserInstruction(
        intent="You want to change salary for the employee with work email ada.ito81@example.com.",
        motivation="You deal with payroll matters. You are clearing your backlog before going on leave.",
        facts=facts,
        rules=RULES,
    )


def test_the_user_prompt_keeps_every_fact_and_rule():
    instruction = _instruction(
        **{"employee work email": "ada.ito81@example.com", "new annual salary": "29059.94"}
    )
    user = LLMUser(EmbeddedModel(role="user"), "Hi, I need to change salary — can you help?", instruction)
    chat = EmbeddedModel(role="user").prompt([*user.messages, {"role": "user", "content": "Which employee?"}],
                                             [END_TOOL])  # fmt: skip
    system = chat[0]["content"]
    for name, value in instruction.facts.items():
        assert f"- {name}: {value}" in system
    for rule in RULES:
        assert rule in system
    assert f"call {END_CONVERSATION}" in system  # the end-of-conversation rule, the prompt's last line
    assert chat[-1] == {"role": "user", "content": "Which employee?"}


@pytest.mark.slow
def test_facts_that_cannot_fit_fail_the_turn_loudly():
    """Instructions longer than the context: the simulator says so instead of dropping a fact."""
    facts = {f"fact {i}": " ".join(["value"] * 40) for i in range(60)}  # about 2,600 tokens of facts
    user = LLMUser(EmbeddedModel(role="user", n_ctx=2048), "Hello.", _instruction(**facts), attempts=1)
    with pytest.raises(UserSimulatorError, match="cannot keep the user's instructions") as err:
        asyncio.run(user.respond("How can I help?"))
    assert "tokens" in str(err.value)
