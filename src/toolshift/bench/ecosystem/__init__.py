"""Evolving ecosystems: capability-preserving transformations, version sampling, baselines (seed 000)."""
