"""τ²-bench's airline and retail domains as toolshift worlds, read from the shared data, checked against τ²-bench.

Each world is a domain spec in `specs/` (`tau2-airline`, `tau2-retail`) whose
state comes from a registered data source reading τ-bench's and τ²-bench's database files, and
whose tools are registered Python implementations written from τ²-bench's documented behaviour
(names, parameters, results, error messages). `tasks` imports τ²-bench's tasks as toolshift tasks.
"""
