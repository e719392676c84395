"""Cross-major pairs in the test suite: every scenario of :mod:`.crossmajor`, one test per cell.

This interpreter is the client. ``MCP_TASKS_COMPAT_PEER_PYTHON`` names the python of another
virtual environment (normally the other major; nox's ``tests`` session builds one) to serve from.
The rows: this client against a server on this interpreter (always) and against a server on the
peer (skipped, with the reason, when no peer is named), over stdio and streamable HTTP, and on
2.x <-> 2.x in both dialects. The other direction is the peer's own session: nox pairs 1.23.0 with
2.0.0 and 1.30.0 with 2.3.0, so the four sessions together run 1.x -> 1.x, 1.x -> 2.x, 2.x -> 1.x
and 2.x -> 2.x. A cell that does not apply (:mod:`.crossmajor` says why and what it checked
instead) is reported as a skip.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

import pytest

from .crossmajor import SCENARIOS, Row, mcp_version_of, row_dialects, run_matrix

PEER_ENV = "MCP_TASKS_COMPAT_PEER_PYTHON"
TRANSPORTS = ("stdio", "http")

THIS_PYTHON = sys.executable
THIS_MCP = importlib.metadata.version("mcp")
PEER_PYTHON = os.environ.get(PEER_ENV) or None


def _peer_mcp() -> str | None:
    if PEER_PYTHON is None:
        return None
    try:
        return mcp_version_of(PEER_PYTHON)
    except Exception as error:  # a named peer that does not run is a broken setup, not a skip
        raise RuntimeError(f"{PEER_ENV}={PEER_PYTHON}: cannot read its mcp version: {error}") from error


PEER_MCP = _peer_mcp()


def _keys(client: str, server: str) -> list[str]:
    return [
        Row(client, server, transport, dialect).key
        for transport in TRANSPORTS
        for dialect in row_dialects(client, server)
    ]


LOCAL_KEYS = _keys(THIS_MCP, THIS_MCP)
PEER_KEYS = [] if PEER_MCP is None else _keys(THIS_MCP, PEER_MCP)


@pytest.fixture(scope="module")
def matrix() -> dict[str, Row]:
    """Every row, run once for the module (the rows run concurrently)."""
    servers = [THIS_PYTHON] if PEER_PYTHON is None else [THIS_PYTHON, PEER_PYTHON]
    return {row.key: row for row in run_matrix(servers, TRANSPORTS)}


def _check(matrix: dict[str, Row], key: str, scenario: str) -> None:
    assert key in matrix, f"row {key!r} did not run; rows: {sorted(matrix)}"
    cell = matrix[key].cells[scenario]
    if cell.outcome == "n/a":
        pytest.skip(f"not applicable: {cell.detail}")
    assert cell.outcome == "pass", f"{key}, {scenario}: {cell.detail}"


SCENARIO_IDS = [scenario.id for scenario in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIO_IDS)
@pytest.mark.parametrize("key", LOCAL_KEYS)
def test_same_major(matrix: dict[str, Row], key: str, scenario: str) -> None:
    _check(matrix, key, scenario)


if PEER_KEYS:

    @pytest.mark.parametrize("scenario", SCENARIO_IDS)
    @pytest.mark.parametrize("key", PEER_KEYS)
    def test_cross_major(matrix: dict[str, Row], key: str, scenario: str) -> None:
        _check(matrix, key, scenario)

else:

    def test_cross_major() -> None:
        pytest.skip(
            f"no peer environment: set {PEER_ENV} to the python of a virtual environment with the other "
            "mcp major and this project installed (nox's tests session does)"
        )
