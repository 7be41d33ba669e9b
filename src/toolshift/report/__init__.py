"""Reporting over every capability: benchmark logs, the HTML report, the trajectory viewer and results pages."""
