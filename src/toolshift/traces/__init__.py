"""Trajectories: one episode format, compatible with τ²-bench, and converters for published runs."""
