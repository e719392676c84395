"""Every ```python block of README.md and docs/*.md runs here, or says it is a fragment.

How to mark a block (its fence's info string, and an HTML comment on the line just before it):

    <!-- test: NAME -->
    ```python            A complete example, run by the test that names it: run_doc_block(page,
                         "NAME") here, in tests/kit/test_plugin.py (docs/testing.md's project
                         files), tests/server/, tests/client/ or integrations/ (framework recipes).
                         Servers are started in-process and their tools called; a result the page
                         shows is asserted.

    ```python            No name: a complete example, run as it stands (exec, not as __main__, in
                         a temporary directory) by test_an_unnamed_example_runs.

    ```python fragment   Part of something larger (a tool body, a snippet): compiled only, with
                         top-level await allowed.

    ```python mcp1       Runs only where that SDK major is installed (skipped with the reason on
    ```python mcp2       the other); usually with a name.

So a new block with no marking must run as it stands: a doc example cannot break silently.
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
import types as stdlib_types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import MCP_MAJOR
from tests.doc_blocks import (
    KNOWN_TAGS,
    ROOT,
    PythonBlock,
    compile_block,
    parse_python_blocks,
    python_blocks,
    run_doc_block,
    run_doc_block_async,
)

from mcp_tasks_compat import testing
from mcp_tasks_compat._adapters import get_adapter
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat._testkit import sessions as kit_sessions
from mcp_tasks_compat.client import call_tool
from mcp_tasks_compat.core._model import Task

BLOCKS = python_blocks()
DIALECTS = testing.dialects()
NEWEST_DIALECT = max(DIALECTS)


def _case(block: PythonBlock) -> Any:
    marks = [getattr(pytest.mark, tag) for tag in sorted(block.tags) if tag in ("mcp1", "mcp2")]
    return pytest.param(block, id=block.where, marks=marks)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def is_error(result: Any) -> bool:
    """The result's ``isError`` (``is_error`` on mcp 2.x models)."""
    return bool(result.model_dump(by_alias=True).get("isError"))


# --- the rules ------------------------------------------------------------------------------------


def test_the_pages_have_python_blocks_of_every_kind() -> None:
    assert len(BLOCKS) >= 20
    assert any(block.is_fragment for block in BLOCKS)
    assert any(block.name is not None for block in BLOCKS)
    assert any(block.name is None and not block.is_fragment for block in BLOCKS)
    assert {block.major for block in BLOCKS} >= {None, 1, 2}


def test_every_marking_is_known_and_consistent() -> None:
    unknown = {block.where: sorted(block.tags - KNOWN_TAGS) for block in BLOCKS if block.tags - KNOWN_TAGS}
    assert unknown == {}, f"unknown fence tags (known: {sorted(KNOWN_TAGS)}): {unknown}"
    both = [block.where for block in BLOCKS if {"mcp1", "mcp2"} <= block.tags]
    assert both == [], "a block for both majors carries neither mcp1 nor mcp2"
    named_fragments = [block.where for block in BLOCKS if block.is_fragment and block.name]
    assert named_fragments == [], "a fragment is only compiled: a test name on it would mean nothing"
    seen: dict[tuple[str, str], str] = {}
    for block in BLOCKS:
        if block.name is not None:
            key = (block.page, block.name)
            assert key not in seen, f"{block.where} and {seen[key]} share the name {block.name!r}"
            seen[key] = block.where


def _test_sources() -> str:
    own = {ROOT / "tests" / "doc_blocks.py"}
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "integrations").rglob("*.py")]
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(files) if path not in own)


def test_every_named_block_is_run_by_a_test() -> None:
    sources = _test_sources()
    unclaimed = [
        f"{block.where} ({block.name})"
        for block in BLOCKS
        if block.name is not None and f'"{block.name}"' not in sources
    ]
    assert unclaimed == [], f"blocks marked <!-- test: NAME --> that no test names: {unclaimed}"


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_every_block_compiles(block: PythonBlock) -> None:
    # An unnamed example is run as a module, so it may not await at top level; a fragment or a
    # named block may be the body of an async function (its test supplies the event loop).
    compile_block(block.source, block.where, top_level_await=block.is_fragment or block.name is not None)


UNNAMED = [block for block in BLOCKS if block.name is None and not block.is_fragment]


@pytest.mark.parametrize("block", [_case(block) for block in UNNAMED])
def test_an_unnamed_example_runs(block: PythonBlock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative store URL or file lands here
    exec(compile_block(block.source, block.where), {"__name__": "doc_example"})


def test_the_parser_reads_tags_names_and_skips_other_fences() -> None:
    page = (
        "# A page\n\n"
        "```text\n```python\nnot = python\n```\n\n"
        "<!-- test: first -->\n```python mcp2\nx = 1\n```\n\n"
        "````python fragment\nawait y\n````\n\n"
        "```py\nz = 3\n```\n"
    )
    blocks = parse_python_blocks("page.md", page)
    assert [(b.line, sorted(b.tags), b.name, b.source) for b in blocks] == [
        (9, ["mcp2"], "first", "x = 1\n"),
        (13, ["fragment"], None, "await y\n"),
        (17, [], None, "z = 3\n"),
    ]
    assert [b.major for b in blocks] == [2, None, None]


# --- README.md --------------------------------------------------------------------------------------


@pytest.fixture
def readme_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """README's ``TaskServer``, its ``store="sqlite:///tasks.db"`` in a temporary directory."""
    monkeypatch.chdir(tmp_path)
    app = run_doc_block("README.md", "readme-server")["app"]
    app.tasks.inline_grace_s = 0  # a quick build is a task on 2026-07-28 too: the task path is shown
    return app


@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_readme_server_builds_as_a_task_and_plainly(
    readme_app: Any, dialect: str, tmp_path: Path
) -> None:
    statuses: list[Task] = []
    async with kit_sessions.connect_in_memory(readme_app, dialect=dialect) as session:
        as_task = await call_tool(session, "build", {"target": "all"}, mode="task", on_status=statuses.append)
        plain = await call_tool(session, "build", {"target": "docs"}, mode="plain")
    assert (text(as_task), is_error(as_task)) == ("built all", False)
    assert statuses[-1].status.value == "completed"
    assert statuses[-1].status_message == "compiling all"
    assert (text(plain), is_error(plain)) == ("built docs", False)
    assert (tmp_path / "tasks.db").exists()


@pytest.mark.anyio
async def test_the_readme_client_calls_the_readme_server(
    readme_app: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    async with get_adapter().app.in_memory_streams(readme_app.sdk_server) as (read, write):
        client = await run_doc_block_async("README.md", "readme-client", {"read": read, "write": write})
    assert text(client["result"]) == "built all"
    assert "compiling all" in capsys.readouterr().out  # on_status=print printed the task's status


# --- docs/client.md ---------------------------------------------------------------------------------


def test_the_client_worked_example_prints_what_the_page_shows(capsys: pytest.CaptureFixture[str]) -> None:
    run_doc_block("docs/client.md", "worked-example")  # its own anyio.run, stdio to example-server
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]  # as the page shows them
    # The SDK's newest protocol version (mcp 1.23.0's is 2025-06-18; it speaks 2025-11-25 tasks on it).
    protocol = (
        NEWEST_DIALECT if MCP_MAJOR == 2 else importlib.import_module("mcp.types").LATEST_PROTOCOL_VERSION
    )
    assert lines[0] == f"protocol {protocol}, task dialect {NEWEST_DIALECT}"
    assert lines[1] == "  working"
    assert lines[-3:] == ["  completed step 2/2", "result: hello", "after cancel: cancelled"]


@pytest.mark.anyio
async def test_the_client_answers_elicitation_through_its_callback() -> None:
    prompts: list[str] = []

    def user(prompt: str) -> str:  # the page's input(), answered as a user would
        prompts.append(prompt)
        return "Ada"

    async with get_adapter().app.in_memory_streams(testing.build_task_server()) as (read, write):
        names = {"read": read, "write": write, "input": user}
        block = await run_doc_block_async("docs/client.md", "elicitation-callback", names)
    assert text(block["result"]) == "Ada"
    assert prompts == ["Your name? "]


# --- docs/server.md ---------------------------------------------------------------------------------


async def _build_as_a_task(server: Any, arguments: dict[str, Any]) -> tuple[str, Task]:
    statuses: list[Task] = []
    async with kit_sessions.connect_in_memory(server) as session:
        result = await call_tool(session, "build", arguments, mode="task", on_status=statuses.append)
    assert not is_error(result), result
    return text(result), statuses[-1]


@pytest.mark.mcp1
@pytest.mark.anyio
async def test_the_server_page_v1_lowlevel_server() -> None:
    block = run_doc_block("docs/server.md", "v1-lowlevel-server")
    built, last = await _build_as_a_task(block["server"], {})
    assert (built, last.status.value, last.status_message) == ("built", "completed", "step 3/3")
    assert callable(block["main"])


@pytest.mark.mcp1
@pytest.mark.anyio
async def test_the_server_page_v1_fastmcp() -> None:
    server = run_doc_block("docs/server.md", "v1-fastmcp")["mcp"]
    built, last = await _build_as_a_task(server, {"target": "docs"})
    assert (built, last.status_message) == ("built docs (as a task: True)", "building docs")
    async with kit_sessions.connect_in_memory(server) as session:
        plain = await call_tool(session, "build", {"target": "docs"}, mode="plain")
    assert text(plain) == "built docs (as a task: False)"


@pytest.mark.mcp2
@pytest.mark.anyio
async def test_the_server_page_v2_mcpserver(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="builder")
    block = run_doc_block("docs/server.md", "v2-mcpserver")
    built, last = await _build_as_a_task(block["mcp"], {"target": "docs"})
    # the lifespan's database reached the tool inside the task (else the tool fails), and the
    # middleware saw the call
    assert (built, last.status.value, last.status_message) == ("built docs", "completed", "docs: step 3/3")
    assert "request tools/call" in caplog.messages


@pytest.mark.mcp2
@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_server_page_v2_lowlevel_server(dialect: str) -> None:
    block = run_doc_block("docs/server.md", "v2-lowlevel-server")
    statuses: list[Task] = []
    async with kit_sessions.connect_in_memory(block["server"], dialect=dialect) as session:
        result = await call_tool(session, "build", {}, on_status=statuses.append)
    assert (text(result), is_error(result)) == ("built", False)
    if dialect == "2025-11-25":  # a task whenever asked; on 2026-07-28 a tool this quick is answered plainly
        assert (statuses[-1].status.value, statuses[-1].status_message) == ("completed", "building")
    assert callable(block["main"])


@pytest.mark.mcp2
@pytest.mark.anyio
@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_server_page_asks_first_then_runs_long(dialect: str) -> None:
    import mcp.types as types

    server = run_doc_block("docs/server.md", "ask-first")["server"]
    asked: list[str] = []

    async def elicitation_callback(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    options = {**session_kwargs(dialect=dialect), "elicitation_callback": elicitation_callback}
    async with kit_sessions.connect_in_memory(server, dialect=dialect, session_options=options) as session:
        result = await call_tool(session, "greet_first")
    assert text(result) == "Hello, Ada!"
    assert asked == ["Your name?"]


# --- docs/errors.md ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_errors_page_tells_each_way_a_call_ends() -> None:
    """The page's ``outcome`` against the kit's example server: a result, a tool error, a timeout
    (the task cancelled), and on mcp 2.x a task failed with a JSON-RPC error (1.x ``FastMCP`` makes
    that an ``isError`` result)."""
    block = run_doc_block("docs/errors.md", "errors-outcomes")
    outcome = block["outcome"]
    async with kit_sessions.connect_in_memory(testing.build_task_server(inline_grace_s=0)) as session:
        assert await outcome(session, "slow_echo", {"text": "hi", "seconds": 0, "steps": 1}) == "hi"
        assert (await outcome(session, "fail", {"message": "no disk"})).startswith("tool error: ")
        slow = {"text": "late", "seconds": 30, "steps": 1}
        assert await outcome(session, "slow_echo", slow, timeout=0.5) == "timed out"
        failed = await outcome(session, "rpc_error", {"message": "no disk"})
        if MCP_MAJOR == 2:
            assert failed.startswith("failed: ")
            assert "(code " in failed
        else:
            assert failed.startswith("tool error: ")


# --- docs/testing.md --------------------------------------------------------------------------------
# Its project files (mylib_tools.py, conftest.py, test_mylib.py, test_own_server.py) run as a
# downstream pytest suite in tests/kit/test_plugin.py; its noxfile runs here, against a stand-in for
# nox (not installed in the test environments) that records what the noxfile asks of it.


class _Session:
    posargs: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def install(self, *args: str) -> None:
        self.calls.append(("install", args))

    def run(self, *args: str) -> None:
        self.calls.append(("run", args))


def _stand_in_nox() -> tuple[stdlib_types.ModuleType, dict[str, Any]]:
    registered: dict[str, Any] = {}
    nox = stdlib_types.ModuleType("nox")
    nox.options = stdlib_types.SimpleNamespace(default_venv_backend=None)  # type: ignore[attr-defined]
    nox.Session = _Session  # type: ignore[attr-defined]

    def session(function: Callable[..., None]) -> Callable[..., None]:
        registered[function.__name__] = function
        return function

    def parametrize(name: str, values: list[str]) -> Callable[[Callable[..., None]], Callable[..., None]]:
        def mark(function: Callable[..., None]) -> Callable[..., None]:
            function.parametrized = (name, list(values))  # type: ignore[attr-defined]
            return function

        return mark

    nox.session = session  # type: ignore[attr-defined]
    nox.parametrize = parametrize  # type: ignore[attr-defined]
    return nox, registered


def test_the_testing_page_noxfile_runs_each_sdk_of_the_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    nox, registered = _stand_in_nox()
    monkeypatch.setitem(sys.modules, "nox", nox)
    run_doc_block("docs/testing.md", "noxfile.py")
    assert nox.options.default_venv_backend == "uv"  # type: ignore[attr-defined]
    tests = registered["tests"]
    name, versions = tests.parametrized
    assert (name, versions) == ("mcp", list(testing.nox_sdk_versions("floor-latest")))
    assert {re.match(r"\d+", version).group() for version in versions} >= {"1", "2"}  # type: ignore[union-attr]
    session = _Session()
    tests(session, versions[0])
    assert session.calls[0] == ("install", ("-e", ".", f"mcp=={versions[0]}", "pytest"))
    assert session.calls[-1] == ("run", ("python", "-m", "pytest"))
