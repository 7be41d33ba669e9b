"""Reporting shared by every capability: benchmark logs, intervals, tables and plots."""
