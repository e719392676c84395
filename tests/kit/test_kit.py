"""The testing kit's helpers: versions for nox, tool sets, task servers and sessions on either major."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import pytest
from packaging.version import Version

from mcp_tasks_compat._testkit.matrix import SDK_VERSIONS, SDK_VERSIONS_DATE
from mcp_tasks_compat._testkit.processes import child_environment
from mcp_tasks_compat._testkit.sessions import connect_in_memory, connect_stdio
from mcp_tasks_compat._testkit.toolsets import echo
from mcp_tasks_compat.client import call_tool, negotiate, start_tool
from mcp_tasks_compat.errors import ServerUnreachableError, SessionSetupError, UnsupportedOptInError
from mcp_tasks_compat.server import current_call
from mcp_tasks_compat.testing import (
    HttpServerProcess,
    ToolSet,
    build_task_server,
    dialects,
    load_toolset,
    nox_sdk_versions,
    server_command,
)

from .toolsets import EXPECTED_DIALECTS, TOOLS, text_of

ROOT = Path(__file__).resolve().parents[2]
TOOLSETS = f"{__package__}.toolsets"
BOUND = 60.0


def _noxfile_constant(name: str) -> Any:
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"noxfile.py has no {name}")


# --- versions -------------------------------------------------------------------------------------


def test_sdk_versions_are_the_noxfile_matrix() -> None:
    assert list(SDK_VERSIONS) == _noxfile_constant("MCP_VERSIONS")
    peers: dict[str, str] = _noxfile_constant("PEER_OF")
    assert set(peers) == set(SDK_VERSIONS)
    for version, peer in peers.items():
        assert peer in SDK_VERSIONS
        assert Version(peer).major != Version(version).major, "a peer is the other major"
        assert peers[peer] == version, "the pairing is symmetric, so each direction runs once"


def test_nox_sdk_versions_select_by_major_and_floor() -> None:
    assert nox_sdk_versions() == list(SDK_VERSIONS)
    assert tuple(sorted(SDK_VERSIONS, key=Version)) == SDK_VERSIONS
    newest = {Version(v).major: v for v in sorted(SDK_VERSIONS, key=Version)}
    assert nox_sdk_versions(floors=False) == [newest[1], newest[2]]
    assert nox_sdk_versions(majors=[2]) == [v for v in SDK_VERSIONS if v.startswith("2.")]
    assert nox_sdk_versions(majors=[1], floors=False) == [newest[1]]
    assert nox_sdk_versions(majors=[3]) == []
    assert nox_sdk_versions("floor-latest") == nox_sdk_versions()
    assert nox_sdk_versions("latest") == nox_sdk_versions(floors=False)
    with pytest.raises(ValueError, match="policy must be 'floor-latest' or 'latest'"):
        nox_sdk_versions("everything")  # type: ignore[arg-type]


def test_the_classifiers_name_the_tested_pythons() -> None:
    import re

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    classified = set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject))
    tested = {_noxfile_constant("DEFAULT_PYTHON"), *_noxfile_constant("PYTHON_AXIS")}
    assert classified == tested
    assert set(_noxfile_constant("PYTHON_AXIS").values()) <= set(SDK_VERSIONS)


def test_the_version_list_is_dated() -> None:
    assert date.fromisoformat(SDK_VERSIONS_DATE) <= date.today()


def test_dialects_are_what_the_installed_mcp_speaks() -> None:
    assert dialects() == EXPECTED_DIALECTS


# --- tool sets ------------------------------------------------------------------------------------


def test_a_tool_set_refuses_support_for_missing_tools_and_bad_values() -> None:
    with pytest.raises(ValueError, match=r"does not have: \['ghost'\]"):
        ToolSet(tools={"echo": echo}, support={"ghost": "optional"})
    with pytest.raises(ValueError, match="must be one of"):
        ToolSet(tools={"echo": echo}, support={"echo": "sometimes"})  # type: ignore[dict-item]


def test_load_toolset_by_name_or_factory() -> None:
    assert load_toolset(f"{TOOLSETS}:TOOLS") is TOOLS
    assert load_toolset(f"{TOOLSETS}:make_tools") is TOOLS
    with pytest.raises(ValueError, match=r"package\.module:ATTRIBUTE"):
        load_toolset(TOOLSETS)
    with pytest.raises(TypeError, match=r"not a mcp_tasks_compat\.testing\.ToolSet"):
        load_toolset(f"{TOOLSETS}:NOT_A_TOOLSET")
    with pytest.raises(AttributeError):
        load_toolset(f"{TOOLSETS}:MISSING")


def test_server_command_lines() -> None:
    assert server_command() == [
        sys.executable,
        "-m",
        "mcp_tasks_compat.testing",
        "serve",
        "--transport",
        "stdio",
    ]
    assert server_command("pkg.mod:TOOLS", transport="http", port=8123, python="/venv/bin/python") == [
        "/venv/bin/python",
        "-m",
        "mcp_tasks_compat.testing",
        "serve",
        "pkg.mod:TOOLS",
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
    ]


def test_child_environment_puts_extra_paths_first_and_leaves_out_the_interpreter(tmp_path: Path) -> None:
    paths = child_environment([tmp_path])["PYTHONPATH"].split(os.pathsep)
    assert paths[0] == str(tmp_path.resolve())  # kept even where it lies inside the venv (nox's TMPDIR)
    prefix = Path(sys.prefix).resolve()
    inside = [p for p in paths[1:] if prefix == Path(p).resolve() or prefix in Path(p).resolve().parents]
    assert inside == [], f"sys.path: {sys.path}; PYTHONPATH: {os.environ.get('PYTHONPATH')}"
    site_packages = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    assert str(Path(site_packages).resolve()) not in paths


# --- imports --------------------------------------------------------------------------------------

BLOCK = """
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"blocked by the test: {{name}}", name=name)
        return None

sys.meta_path.insert(0, Block())
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_plugin_module_loads_no_sdk() -> None:
    done = _python(
        """
        import sys
        import mcp_tasks_compat.testing as kit
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types")))
        print(hasattr(kit, "mcp_tasks_session"))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]


def test_the_helpers_import_without_pytest_or_mcp() -> None:
    """A noxfile's environment has neither: nox_sdk_versions still works, the fixtures are simply absent."""
    done = _python(
        BLOCK.format(blocked=("mcp", "mcp_types", "pytest", "_pytest"))
        + textwrap.dedent(
            """
            from mcp_tasks_compat.testing import nox_sdk_versions
            import mcp_tasks_compat.testing as kit
            print(nox_sdk_versions(), hasattr(kit, "mcp_tasks_session"))
            """
        )
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{list(SDK_VERSIONS)} False"


# --- servers and sessions -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", dialects())
async def test_connect_in_memory_pins_each_dialect(dialect: str) -> None:
    server = build_task_server(TOOLS)
    async with connect_in_memory(server, dialect=dialect) as session:  # type: ignore[arg-type]
        negotiated = await negotiate(session)
        assert negotiated.dialect == dialect
        with anyio.fail_after(BOUND):
            assert text_of(await call_tool(session, "shout", {"text": "hi"})) == "HI (task)"
            assert text_of(await call_tool(session, "whisper", {"text": "HI"})) == "hi"


@pytest.mark.anyio
async def test_connect_in_memory_says_what_it_accepts() -> None:
    with pytest.raises(TypeError, match=r"connect_in_memory on mcp [12]\.x takes a .* not dict"):
        async with connect_in_memory({"not": "a server"}):
            pass


@pytest.mark.anyio
@pytest.mark.mcp1
async def test_connect_in_memory_serves_a_1x_low_level_server() -> None:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from mcp_tasks_compat.server import ServerTasks

    server: Any = Server("low-level")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name="shout", inputSchema={"type": "object"})]

    @server.call_tool()
    async def call(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        return [types.TextContent(type="text", text=f"{name} ({'task' if current_call().task else 'plain'})")]

    ServerTasks(tools={"shout": "optional"}).install(server)
    seen: list[str] = []
    async with connect_in_memory(server) as session:
        with anyio.fail_after(BOUND):
            result = await call_tool(session, "shout", {}, on_status=lambda t: seen.append(t.status.value))
    assert text_of(result) == "shout (task)"
    assert seen[-1] == "completed"


@pytest.mark.anyio
async def test_current_task_is_live_inside_the_tools_cancel_handler() -> None:
    started, handled = anyio.Event(), anyio.Event()
    seen: list[str | None] = []

    async def hang() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            task = current_call().task
            seen.append(task.status.value if task is not None else None)
            handled.set()
        raise AssertionError("unreachable")

    server = build_task_server(ToolSet(tools={"hang": hang}, support={"hang": "required"}))
    async with connect_in_memory(server) as session:
        with anyio.fail_after(BOUND):
            run = await start_tool(session, "hang")
            await started.wait()
            await run.cancel()
            await handled.wait()  # the handler runs in the server's task group, after the ack
    assert seen == ["cancelled"]


@pytest.mark.anyio
@pytest.mark.mcp2
async def test_a_dialect_the_server_does_not_serve_is_a_setup_error() -> None:
    server = build_task_server(TOOLS, dialects=["2025-11-25"])
    with pytest.raises(SessionSetupError, match="asked for the 2026-07-28 task dialect"):
        async with connect_in_memory(server, dialect="2026-07-28"):
            pass


@pytest.mark.anyio
@pytest.mark.mcp1
async def test_2026_on_mcp1_is_the_librarys_refusal() -> None:
    with pytest.raises(UnsupportedOptInError, match="pip install 'mcp>=2,<3'"):
        async with connect_in_memory(build_task_server(), dialect="2026-07-28"):
            pass


@pytest.mark.anyio
async def test_a_server_that_dies_at_once_is_unreachable_with_its_stderr() -> None:
    """As ``client.connect_stdio`` says it (one error type for a server that cannot be reached),
    with the server's last stderr lines."""
    command = [sys.executable, "-c", "import sys; print('no server here', file=sys.stderr)"]
    with pytest.raises(ServerUnreachableError, match="no server here") as raised:
        async with connect_stdio(command):
            pass
    assert "none of your requests was sent" in raised.value.message


def test_an_http_server_that_exits_early_is_reported_with_its_stderr() -> None:
    command = server_command(f"{TOOLSETS}:NOT_A_TOOLSET", transport="http")
    env = {**os.environ, **child_environment()}
    with pytest.raises(SessionSetupError, match=r"not a mcp_tasks_compat\.testing\.ToolSet"):  # noqa: SIM117
        with HttpServerProcess(command, env=env, start_timeout=BOUND):
            pass
