"""toolshift inside the frameworks researchers already use: inspect_ai tasks and the verifiers bridge."""
