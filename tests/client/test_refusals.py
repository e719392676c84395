"""Every refusal, with its exact message, raised before anything reaches the server."""

from __future__ import annotations

import importlib.metadata

import anyio
import pytest

from mcp_tasks_compat import UnsupportedOptInError
from mcp_tasks_compat._client_api import session_kwargs
from mcp_tasks_compat.client import call_tool, negotiate, resume, start_tool

from .harness import DIALECT_OF, KINDS, Knobs, open_harness, text_of

pytestmark = pytest.mark.anyio

INSTALLED = f"mcp {importlib.metadata.version('mcp')}"

NO_TASKS_REASON = {
    "sdk-2025": "the server's initialize capabilities do not offer tasks for tools/call",
    "2026": "the server did not declare io.modelcontextprotocol/tasks in server/discover",
    "2025": (
        "server/discover was refused (-32601: Method not found), so the connection uses the "
        "2025-11-25 handshake; its initialize capabilities do not offer tasks for tools/call"
    ),
}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.mcp1
def test_session_kwargs_refuses_every_2x_opt_in_at_once_on_1x() -> None:
    with pytest.raises(UnsupportedOptInError) as caught:
        session_kwargs(dialect="2026-07-28", extensions={}, result_claims={}, notification_bindings=[])
    assert caught.value.message == (
        f"cannot honour 4 opt-in(s) with {INSTALLED}:\n"
        "  - dialect='2026-07-28': needs mcp>=2,<3 (the Tasks extension); fix: pip install 'mcp>=2,<3'\n"
        "  - extensions=: needs mcp>=2,<3 (ClientSession extension seams); fix: pip install 'mcp>=2,<3'\n"
        "  - result_claims=: needs mcp>=2,<3 (ClientSession extension seams); fix: pip install 'mcp>=2,<3'\n"
        "  - notification_bindings=: needs mcp>=2,<3 (ClientSession extension seams); "
        "fix: pip install 'mcp>=2,<3'"
    )
    assert [item.asked for item in caught.value.refused] == [
        "dialect='2026-07-28'",
        "extensions=",
        "result_claims=",
        "notification_bindings=",
    ]


@pytest.mark.mcp1
def test_session_kwargs_on_1x_only_wraps_the_message_handler() -> None:
    kwargs = session_kwargs(dialect="2025-11-25")
    assert set(kwargs) == {"message_handler"}


def test_session_kwargs_rejects_an_unknown_dialect() -> None:
    with pytest.raises(ValueError, match="dialect must be one of"):
        session_kwargs(dialect="2024-01-01")  # type: ignore[arg-type]


def _no_tasks_refusal(asked: str, reason: str) -> str:
    return (
        f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
        f"  - {asked}: needs a connection whose server offers tasks ({reason}); "
        "fix: use mode='auto' (runs it as a plain call here) or connect to a task-capable server"
    )


async def test_mode_task_is_refused_when_the_server_offers_no_tasks(kind: str) -> None:
    async with open_harness(kind, Knobs(tasks=False)) as harness, harness.session() as session:
        with pytest.raises(UnsupportedOptInError) as caught:
            await call_tool(session, "gated", {"label": "x"}, mode="task")
        assert caught.value.message == _no_tasks_refusal(
            "mode='task' for tool 'gated'", NO_TASKS_REASON[kind]
        )
        with pytest.raises(UnsupportedOptInError) as started:
            await start_tool(session, "gated", {"label": "x"})
        assert started.value.message == caught.value.message
        assert harness.script.created == []


async def test_resume_is_refused_when_the_server_offers_no_tasks(kind: str) -> None:
    async with open_harness(kind, Knobs(tasks=False)) as harness, harness.session() as session:
        with pytest.raises(UnsupportedOptInError) as caught:
            await resume(session, "task-1")
        assert caught.value.message == (
            f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
            f"  - resume('task-1'): needs a connection whose server offers tasks ({NO_TASKS_REASON[kind]}); "
            "fix: resume on a connection to the server that created the task"
        )


async def test_mode_task_is_refused_for_a_tool_the_server_runs_plain_only(kind: str) -> None:
    if DIALECT_OF[kind] == "2026-07-28":
        pytest.skip("2026-07-28 declares no per-tool task support: the server decides per call")
    async with open_harness(kind) as harness, harness.session() as session:
        with pytest.raises(UnsupportedOptInError) as caught:
            await call_tool(session, "echo", {"text": "x"}, mode="task")
        assert caught.value.message == (
            f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
            "  - mode='task' for tool 'echo': needs a tool whose tools/list entry declares "
            "execution.taskSupport 'optional' or 'required' (the server declares 'forbidden'); "
            "fix: use mode='auto' or mode='plain' for this tool"
        )
        assert harness.script.created == []
        assert text_of(await call_tool(session, "echo", {"text": "x"}, mode="plain")) == "x"


async def test_an_unknown_mode_is_a_value_error(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with pytest.raises(ValueError, match="mode must be 'auto', 'task' or 'plain', not 'sometimes'"):
            await call_tool(session, "echo", {"text": "x"}, mode="sometimes")  # type: ignore[arg-type]


async def test_bad_durations_are_value_errors(kind: str) -> None:
    async with open_harness(kind) as harness, harness.session() as session:
        with pytest.raises(ValueError, match="timeout must be positive"):
            await call_tool(session, "echo", {"text": "x"}, timeout=0)
        with pytest.raises(ValueError, match="ttl must be positive"):
            await call_tool(session, "echo", {"text": "x"}, ttl=-1)


async def test_a_session_that_is_not_a_client_session_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"expected an mcp\.client\.session\.ClientSession, got object"):
        await negotiate(object())


NO_KWARGS = (
    f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
    "  - a task call on a ClientSession built without the library's session settings: needs a session "
    "built as mcp_tasks_compat.client.TaskClientSession(read, write), which registers the Tasks "
    "extension and its result claim (without it the SDK rejects a task answer only after the server has "
    "created the task); fix: build the session as TaskClientSession(read, write, ...) (your own "
    "extensions=, result_claims=, notification_bindings= and message_handler= are composed with the "
    "library's); for a session that mcp.Client builds, pass mcp.Client(..., "
    "extensions=[TaskClientSession.extension()]) (see docs/integrations.md); "
    "mode='auto' runs such calls plainly"
)


@pytest.mark.mcp2
async def test_a_2x_session_without_session_kwargs_refuses_only_mode_task(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="mcp_tasks_compat.client")
    async with open_harness(kind) as harness, harness.session(kwargs={}) as session:
        with pytest.raises(UnsupportedOptInError) as caught:
            await call_tool(session, "gated", {"label": "x"}, mode="task")
        assert caught.value.message == NO_KWARGS
        with pytest.raises(UnsupportedOptInError) as started:
            await start_tool(session, "gated", {"label": "x"})
        assert started.value.message == NO_KWARGS
        assert harness.script.created == []
        # auto runs a task-capable tool plainly there (as mcp 1.x does), and says why at INFO.
        harness.script.release.set()
        with anyio.fail_after(5):
            assert text_of(await call_tool(session, "gated", {"label": "a"})) == "done a"
        assert harness.script.created == []
        assert any(
            message.startswith(
                "tool 'gated' runs as a plain call: a task call on a ClientSession built "
                "without the library's session settings"
            )
            for message in caplog.messages
        )
        assert text_of(await call_tool(session, "echo", {"text": "ok"}, mode="plain")) == "ok"


@pytest.mark.mcp2
async def test_a_2x_session_advertising_tasks_without_a_claim_is_refused_even_for_plain_calls() -> None:
    async with open_harness("2026") as harness:
        async with harness.session(kwargs={"extensions": {"io.modelcontextprotocol/tasks": {}}}) as session:
            with pytest.raises(UnsupportedOptInError) as caught:
                await call_tool(session, "gated", {"label": "x"}, mode="plain")
        assert caught.value.message == (
            f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
            "  - tools/call on a ClientSession that declares io.modelcontextprotocol/tasks without a result "
            "claim for 'task': needs a session whose Tasks extension comes from "
            "mcp_tasks_compat.client.TaskClientSession; fix: drop your own io.modelcontextprotocol/tasks "
            "entry and build the session as TaskClientSession(read, write)"
        )
        assert harness.script.created == []  # the bare SDK would have left an orphan task here


@pytest.mark.mcp2
def test_session_kwargs_refuses_a_second_claim_on_task() -> None:
    from typing import Literal

    import mcp_types
    from mcp.client.extension import ResultClaim

    class Handle(mcp_types.Result):
        result_type: Literal["task"] = "task"

    async def resolve(handle: Handle, context: object) -> mcp_types.CallToolResult:
        raise AssertionError("never called")

    claim = ResultClaim(result_type="task", model=Handle, resolve=resolve)
    with pytest.raises(ValueError, match="result_claims already claims resultType 'task'"):
        session_kwargs(extensions={"io.example/mine": {}}, result_claims={"io.example/mine": [claim]})


@pytest.mark.mcp1
async def test_1x_mode_task_against_plain_tool_still_sends_nothing() -> None:
    async with open_harness("sdk-2025") as harness, harness.session() as session:
        negotiated = await negotiate(session)
        assert negotiated.tool_task_support is not None
        with anyio.fail_after(5), pytest.raises(UnsupportedOptInError):
            await start_tool(session, "echo", {"text": "x"})
        assert harness.script.created == []


@pytest.fixture
def without_raw_request_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the installed 2.x release lost the private seam the 2025-11-25 dialect needs."""
    from mcp_tasks_compat import _detect
    from mcp_tasks_compat._adapters.v2 import client, handshake, session_config, tool_calls

    real = _detect.sdk_info()
    crippled = _detect.evaluate(real.mcp_version, frozenset(real.features) - {"v2.raw_request"})
    for module in (_detect, client, handshake, session_config, tool_calls):
        monkeypatch.setattr(module, "sdk_info", lambda: crippled)


@pytest.mark.mcp2
@pytest.mark.usefixtures("without_raw_request_seam")
async def test_without_the_raw_request_seam_2025_tasks_are_refused_or_plain(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(UnsupportedOptInError) as caught:
        session_kwargs(dialect="2025-11-25")
    assert caught.value.message == (
        f"cannot honour 1 opt-in(s) with {INSTALLED}:\n"
        "  - dialect='2025-11-25' on the client: needs mcp 1.x, or a 2.x release that still has the "
        "private seam v2.raw_request; fix: pip install 'mcp>=1.23,<2' (or report the 2.x release that "
        "removed the seam)"
    )
    caplog.set_level("WARNING", logger="mcp_tasks_compat.client")
    kwargs = session_kwargs()
    assert any("lacks the private seam v2.raw_request" in message for message in caplog.messages)
    async with open_harness("2025") as harness, harness.session(kwargs=kwargs) as session:
        negotiated = await negotiate(session)
        assert negotiated.dialect is None
        assert negotiated.server_offers_tasks
        reason = (
            "server/discover was refused (-32601: Method not found), so the connection uses the "
            f"2025-11-25 handshake; {INSTALLED} lacks the private seam v2.raw_request that 2025-11-25 "
            "tasks need on mcp 2.x"
        )
        assert negotiated.reason == reason
        with pytest.raises(UnsupportedOptInError) as refused:
            await call_tool(session, "gated", {"label": "x"}, mode="task")
        assert refused.value.message == _no_tasks_refusal("mode='task' for tool 'gated'", reason)
        harness.script.release.set()
        assert text_of(await call_tool(session, "gated", {"label": "x"})) == "done x"
        assert harness.script.created == []
