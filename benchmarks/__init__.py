"""Benchmarks for mcp-tasks-compat: overhead, latency, throughput and capacity, next to the peers.

Not part of the library. Run the whole thing with ``nox -s bench``; run one major by hand with
``python -m benchmarks run --profile full`` in an environment that has the project installed (and,
for the peer rows, ``fastmcp`` 4 + ``fastmcp-tasks`` on mcp 2.x or ``fastmcp[tasks]`` 3 on mcp 1.x).
"""
