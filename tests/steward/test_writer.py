"""`--model` distillation: the embedded model writes each skill's instructions and its tokens are counted."""

from __future__ import annotations

import importlib.util

import pytest

from toolshift.steward.library import Library
from toolshift.steward.maintain import Maintainer
from toolshift.steward.skillmd import render
from toolshift.steward.writer import ModelWriter, prompt

from .test_distill_supply import CALLS, FACTS, _catalog, _episode


def test_the_prompt_names_each_step_and_where_its_arguments_come_from(tmp_path):
    lib = Library.create(tmp_path / "lib.sqlite")
    Maintainer(lib).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    (plan,) = lib.skills("planning")
    text = prompt(plan, _catalog(1))
    assert "Step 1: sqm_search_sites (supplier_code from the user's supplier site code)" in text
    assert "Step 3: sqm_reject_lot" in text and "for each" in text
    assert "Tool sqm_reject_lot: sqm reject lot." in text
    lib.close()


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="the embedded model needs llama-cpp-python"
)
def test_the_embedded_model_writes_every_added_skill_and_its_tokens_are_counted(tmp_path):
    from toolshift.agents.config import RunConfig, make_model

    model = make_model("embedded", RunConfig(world="steward", model="embedded"), seed=0)
    writer = ModelWriter(model, _catalog(1))
    lib = Library.create(tmp_path / "lib.sqlite")
    work = Maintainer(lib, reviser=writer).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)])
    written = lib.skills()
    assert writer.calls == len(written) == work.by_op["add"] > 0
    assert all(s.body.get("instructions") and s.body.get("written_by") for s in written)
    assert work.tokens > 0  # prompt + completion tokens of every call, in the version's work row
    assert [w.tokens for w in lib.work()] == [work.tokens]
    (plan,) = lib.skills("planning")
    assert plan.body["instructions"] in render(plan)
    # model-free maintenance spends no tokens
    other = Library.create(tmp_path / "free.sqlite")
    assert Maintainer(other).initialise(_catalog(1), [_episode("e1", FACTS, CALLS)]).tokens == 0
    lib.close()
    other.close()
