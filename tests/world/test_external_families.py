"""The external families without their packages: listed as unavailable, refused with the extra named."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.world.external import family_status, is_external, load_external


@pytest.fixture
def no_packages(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name in ("bfcl_eval", "agentdojo") else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_extras_are_listed_and_named(no_packages):
    status = {s.family: s for s in family_status()}
    assert not status["bfcl"].available and status["bfcl"].worlds is None
    assert "toolshift[agentdojo]" in status["agentdojo"].note
    for name, extra in (("bfcl:multi_turn_base_0", "bfcl"), ("agentdojo:banking.user_task_0", "agentdojo")):
        with pytest.raises(BadInputError, match=rf"toolshift\[{extra}\]"):
            load_external(name)
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["world", "domains", "--world-only"])
    assert (
        result.exit_code == 0
        and "no (extra bfcl)" in result.output
        and "no (extra agentdojo)" in result.output
    )


def test_external_names():
    assert is_external("bfcl") and is_external("agentdojo:banking.user_task_0") and is_external("bfcl:x")
    assert not is_external("clinic") and not is_external("bfclx:1") and not is_external("path/bfcl.yaml")
    with pytest.raises(BadInputError):
        load_external("bfcl:")
