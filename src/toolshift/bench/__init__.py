"""The ecosystem benchmark: domain registry, tool dependency graphs, validated task synthesis, builds."""
