"""The oracle through BFCL's own harness: a BFCL model handler whose "model" plays the possible answer.

`BaseHandler.inference_multi_turn_FC` (BFCL's multi-turn loop: holdout functions, execution through
`execute_multi_turn_func_call`, the inference log) drives an `OracleHandler` whose replies are the entry's
possible-answer calls, one call per step, then a text reply that ends the turn. `BaseHandler.write` writes
BFCL's own result file (`<dir>/<registry name>/multi_turn/BFCL_v4_<category>_result.json`). It measures
BFCL's harness and produces real BFCL result files for the converter (`toolshift traces convert bfcl`).

The possible answer's call strings are parsed with `ast` (`bfcl.parse_call`) and handed over as JSON
arguments, as a function-calling model's are; BFCL's `convert_to_function_call` writes the strings its
executor evaluates.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from toolshift.world.external import bfcl

REGISTRY_NAME = "toolshift-oracle-FC"


def _handler_class() -> type:
    from bfcl_eval.model_handler.base_handler import BaseHandler
    from bfcl_eval.model_handler.utils import convert_to_function_call

    class OracleHandler(BaseHandler):  # type: ignore[misc, valid-type]
        """Answers each step with the next possible-answer call of the current turn, then with text."""

        def __init__(self) -> None:
            super().__init__("toolshift-oracle", 0.0, REGISTRY_NAME, True)

        def decode_execute(self, result: Any, has_tool_call_tag: bool = False) -> list[str]:
            return convert_to_function_call(result)

        def _pre_query_processing_FC(self, inference_data: dict, test_entry: dict) -> dict:
            e = bfcl.entry(test_entry["id"])
            inference_data["steps"] = [[bfcl.parse_call(c, e) for c in turn] for turn in e.ground_truth]
            inference_data["turn"] = -1
            inference_data["message"] = []
            return inference_data

        def _compile_tools(self, inference_data: dict, test_entry: dict) -> dict:
            inference_data["tools"] = [f["name"] for f in test_entry.get("function", [])]
            return inference_data

        def add_first_turn_message_FC(self, inference_data: dict, first_turn_message: list[dict]) -> dict:
            return self._add_next_turn_user_message_FC(inference_data, first_turn_message)

        def _add_next_turn_user_message_FC(self, inference_data: dict, user_message: list[dict]) -> dict:
            inference_data["message"].extend(user_message)
            inference_data["turn"] += 1
            inference_data["step"] = 0
            return inference_data

        def _query_FC(self, inference_data: dict) -> tuple[Any, float]:
            started = time.perf_counter()
            calls = inference_data["steps"][inference_data["turn"]]
            k = inference_data["step"]
            inference_data["step"] += 1
            if k < len(calls):
                name, args = calls[k]
                reply: Any = [{name: json.dumps(args)}]
            else:
                reply = "Your request has been completed."
            return reply, time.perf_counter() - started

        def _parse_query_response_FC(self, api_response: Any) -> dict:
            return {"model_responses": api_response, "input_token": 0, "output_token": 0}

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

    return OracleHandler


def run_oracle(entry_ids: list[str], result_dir: Path) -> dict[str, Any]:
    """Run the oracle on these entries through BFCL's harness and write BFCL's result files.

    Returns `{"entries": n, "seconds": wall time in the harness, "files": [result files]}`.
    """
    import contextlib
    import io

    from bfcl_eval.utils import populate_test_cases_with_predefined_functions

    handler = _handler_class()()
    written: set[Path] = set()
    seconds = 0.0
    for entry_id in entry_ids:
        e = bfcl.entry(entry_id)
        test_entry = populate_test_cases_with_predefined_functions(
            [{**e.test_entry(), "missed_function": dict(e.missed_function)}]
        )[0]
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # BFCL prints every step
            result, metadata = handler.inference(test_entry, include_input_log=False, exclude_state_log=False)
        seconds += time.perf_counter() - started
        _forget_instances(f"{handler.model_name_underline_replaced}_{e.id}_")
        handler.write({"id": e.id, "result": result, **metadata}, result_dir=Path(result_dir))
        written.add(
            Path(result_dir)
            / REGISTRY_NAME
            / "multi_turn"
            / f"{bfcl.VERSION_PREFIX}_{e.category}_result.json"
        )
    return {"entries": len(entry_ids), "seconds": seconds, "files": sorted(str(p) for p in written)}


def _forget_instances(prefix: str) -> None:
    """Drop the instances BFCL's executor keeps in its module globals, so a rerun starts from the scenario."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    for key in [k for k in vars(multi_turn_utils) if k.startswith(prefix)]:
        vars(multi_turn_utils).pop(key, None)
