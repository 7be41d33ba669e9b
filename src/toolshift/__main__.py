"""Run the CLI as `python -m toolshift`."""

from toolshift.cli import main

main()
