"""The model proposer against llama-cpp-python's own OpenAI-compatible server on the embedded SmolLM2, and
the outside deadline against an endpoint that accepts and never answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from peers import llama_server as start_llama_server
from toolshift.evolve.archive import Mutation, ProgramRecord
from toolshift.evolve.engine import Engine
from toolshift.evolve.model_proposer import proposer_messages
from toolshift.evolve.solver import SolverConfig
from toolshift.evolve.store import EvolveConfig, RunStore

from .builders import program_of


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with start_llama_server(
        tmp_path_factory.mktemp("llama-server"), "--model_alias", "smollm2", "--n_ctx", "8192"
    ) as url:
        yield url


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A TCP server that accepts connections and never sends a byte (an evaluation that hangs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def _seeded_run(tmp_path, cancel, **config) -> tuple[RunStore, EvolveConfig]:
    cfg = EvolveConfig(generations=1, solver=SolverConfig(model="noisy-oracle:0.7", attempts=2), **config)
    store = RunStore(tmp_path / "run")
    store.create(cfg, [cancel])
    return store, cfg


def test_the_prompt_holds_the_seeds_instructions_the_program_and_the_inspirations(cancel):
    parent = ProgramRecord(id="p", root="p", domain="clinic", program=program_of(cancel), status="evaluated",
                           mutation=Mutation(proposer="seed"), task=cancel, completion=1.0, feasible=True,
                           feedback="all 10 attempts succeeded.")  # fmt: skip
    system, user = proposer_messages(parent, [parent])
    assert "EVOLVE-BLOCK-START" in system["content"] and "True, False and None" in system["content"]
    assert "<<<<<<< SEARCH" in system["content"] and "simulated user" in system["content"]
    assert program_of(cancel) in user["content"]
    assert (
        "cancel_appointment(appointment_id)" in user["content"]
        and "more tools of this world" in user["content"]
    )
    assert "Inspiration 1" in user["content"] and "completion rate 1.00" in user["content"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_model_proposal_through_a_real_server_is_kept_with_its_cost(tmp_path, cancel, llama_server):
    """Prompt evaluation of ~1,700 tokens takes this server minutes on a loaded 2-core machine: the deadline
    is generous (a limit, not a speed check)."""
    store, cfg = _seeded_run(
        tmp_path, cancel, proposer="openai:smollm2", base_url=llama_server, max_tokens=48, model_timeout=900.0
    )
    records = Engine(store, cfg).run()
    child = records[-1]
    assert child.step == 0 and child.mutation.proposer == "model:openai:smollm2"
    proposal = store.proposal(0)
    assert proposal is not None
    assert (
        proposal.cost.calls == 1
        and proposal.cost.prompt_tokens > 1200
        and 0 < proposal.cost.completion_tokens <= 48
    )
    if child.status == "rejected":
        # a 135M model rarely writes a valid diff; the reason and its response are kept
        assert child.stage in ("propose", "parse", "verify", "duplicate") and child.reason
        assert child.stage != "propose" or child.mutation.diff


def test_a_model_call_that_never_answers_is_abandoned_at_the_deadline(
    tmp_path, cancel, silent_endpoint, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    store, cfg = _seeded_run(
        tmp_path, cancel, proposer="openai:silent", base_url=silent_endpoint, model_timeout=2.0
    )
    child = Engine(store, cfg).run()[-1]
    assert child.status == "rejected" and child.stage == "propose"
    assert child.reason == "openai:silent gave no answer within 2 s (abandoned)"
