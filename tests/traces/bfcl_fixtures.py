"""Writes tests/traces/data/bfcl/: two scripted "models" on the same BFCL entries, run by BFCL's own harness.

`BaseHandler.inference_multi_turn_FC` (BFCL's multi-turn loop: decoding, execution, the inference log with
state_info) drives a handler whose replies are scripted below, and `BaseHandler.write` writes the result
files, so every field but the replies is BFCL's own. The replies copy in form the failures real runs hold:

- `ls<|channel|>commentary` as a function name: gpt-oss's Harmony channel token leaking into tool names
  (vLLM PR #35906; `cat<|channel|>commentary`, `send_message<|end|><|start|>assistant<|channel|>analysis`
  in gpt-oss's published BFCL runs, github.com/bbrowning/bfcl-vllm-results, docs/results/bfcl-published-runs.md);
- `{"a": true}<|call|>` as argument text: the same leak into the arguments, which are then not JSON;
- arguments JSON-encoded twice (a JSON string, not an object): BFCL's `convert_to_function_call` fails;
- `[]`: a step with no calls (BFCL logs "Empty response from the model" and ends the turn);
- a text reply: BFCL's FC decoding fails on it and ends the turn, as for every FC model's text;
- an entry whose inference raised: `{"id", "result": "Error during inference: …", "traceback"}`, the record
  `bfcl_eval._llm_response_generation.multi_threaded_inference` writes (that module imports every model SDK,
  so the same try/except is repeated here).

Run `PYTHONPATH=src python tests/traces/bfcl_fixtures.py` to rewrite the files; a test regenerates them and
compares (latencies aside).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "bfcl"
ENTRIES = ("multi_turn_base_1", "multi_turn_base_4")
TEXT = "I have done what you asked."


def _gold(entry_id: str) -> list[list[Any]]:
    """The possible answer as scripted steps: one call per step, then a text reply, per turn."""
    from toolshift.world.external import bfcl

    e = bfcl.entry(entry_id)
    return [
        [[{n: json.dumps(a)}] for n, a in (bfcl.parse_call(c, e) for c in turn)] + [TEXT]
        for turn in e.ground_truth
    ]


def scripts() -> dict[str, dict[str, list[list[Any]] | None]]:
    """model → entry → turns of step replies (None: the inference raises)."""
    a1, a4 = _gold("multi_turn_base_1"), _gold("multi_turn_base_4")
    a4_leak = [[[{"ls<|channel|>commentary": '{"a": true}'}], *a4[0]], *a4[1:]]
    b1 = [
        [[{"ls": '{"a": true}<|call|>'}]],  # not JSON: BFCL cannot decode the step and ends the turn
        [[{"pwd": "{}"}], *a1[1]],
        [[]],  # an empty step: BFCL ends the turn
        a1[3],
    ]
    b4 = [[[{"ls": json.dumps(json.dumps({"a": True}))}]], *a4[1:]]  # a JSON string, not an object
    return {
        "fixture-a-FC": {"multi_turn_base_1": a1, "multi_turn_base_4": a4_leak},
        "fixture-b-FC": {"multi_turn_base_1": b1, "multi_turn_base_4": b4, "multi_turn_base_5": None},
    }


def _handler_class() -> type:
    from bfcl_eval.model_handler.base_handler import BaseHandler
    from bfcl_eval.model_handler.utils import convert_to_function_call

    class ScriptedHandler(BaseHandler):  # type: ignore[misc, valid-type]
        def __init__(self, registry_name: str, script: dict[str, list[list[Any]] | None]) -> None:
            super().__init__(registry_name, 0.0, registry_name, True)
            self.script = script

        def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> list[str]:
            return convert_to_function_call(result)

        def _pre_query_processing_FC(self, inference_data: dict, test_entry: dict) -> dict:
            turns = self.script[test_entry["id"]]
            if turns is None:
                raise TimeoutError("Request timed out.")
            inference_data.update(turns=turns, turn=-1, message=[])
            return inference_data

        def _compile_tools(self, inference_data: dict, test_entry: dict) -> dict:
            inference_data["tools"] = [f["name"] for f in test_entry.get("function", [])]
            return inference_data

        def add_first_turn_message_FC(self, inference_data: dict, first_turn_message: list[dict]) -> dict:
            return self._add_next_turn_user_message_FC(inference_data, first_turn_message)

        def _add_next_turn_user_message_FC(self, inference_data: dict, user_message: list[dict]) -> dict:
            inference_data["message"].extend(user_message)
            inference_data.update(turn=inference_data["turn"] + 1, step=0)
            return inference_data

        def _query_FC(self, inference_data: dict) -> tuple[Any, float]:
            steps = inference_data["turns"][inference_data["turn"]]
            k = inference_data["step"]
            inference_data["step"] += 1
            return (steps[k] if k < len(steps) else TEXT), 0.001

        def _parse_query_response_FC(self, api_response: Any) -> dict:
            return {"model_responses": api_response, "input_token": 10, "output_token": 5}

        def _add_assistant_message_FC(self, inference_data: dict, model_response_data: dict) -> dict:
            inference_data["message"].append(
                {"role": "assistant", "content": model_response_data["model_responses"]}
            )
            return inference_data

        def _add_execution_results_FC(
            self, inference_data: dict, execution_results: list[str], model_response_data: dict
        ) -> dict:
            inference_data["message"] += [{"role": "tool", "content": r} for r in execution_results]
            return inference_data

    return ScriptedHandler


def write_fixtures(out: Path) -> list[Path]:
    """Run every scripted model through BFCL's harness into `out/<model>/multi_turn/`; the files written."""
    from bfcl_eval.utils import populate_test_cases_with_predefined_functions

    from toolshift.world.external import bfcl
    from toolshift.world.external.bfcl_harness import _forget_instances

    written = set()
    for model, script in scripts().items():
        shutil.rmtree(out / model, ignore_errors=True)  # BaseHandler.write appends
        handler = _handler_class()(model, script)
        for entry_id in script:
            e = bfcl.entry(entry_id)
            case = populate_test_cases_with_predefined_functions(
                [{**e.test_entry(), "missed_function": dict(e.missed_function)}]
            )[0]
            try:  # as bfcl_eval._llm_response_generation.multi_threaded_inference
                with contextlib.redirect_stdout(io.StringIO()):
                    result, metadata = handler.inference(
                        case, include_input_log=False, exclude_state_log=False
                    )
            except Exception as exc:
                result = f"Error during inference: {exc}"
                metadata = {"traceback": "".join(traceback.format_exception_only(exc))}
            _forget_instances(f"{handler.model_name_underline_replaced}_{e.id}_")
            handler.write({"id": e.id, "result": result, **metadata}, result_dir=out)
            written.add(out / model / "multi_turn" / f"BFCL_v4_{e.category}_result.json")
    return sorted(written)


def without_latency(path: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "latency"}
        for line in path.read_text().splitlines()
    ]


if __name__ == "__main__":
    started = time.perf_counter()
    for path in write_fixtures(DATA if len(sys.argv) < 2 else Path(sys.argv[1])):
        print(path, path.stat().st_size)
    print(f"{time.perf_counter() - started:.1f} s")
