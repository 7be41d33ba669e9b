"""The spec language: domain YAML, its schema checks, and the safe interpreter that runs its actions and checks."""
