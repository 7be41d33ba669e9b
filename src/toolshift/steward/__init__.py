"""Steward: a three-level skill library kept in step with an evolving tool catalog, and the supply it feeds agents."""
