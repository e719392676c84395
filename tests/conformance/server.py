"""The fixture server the official MCP conformance suite (``@modelcontextprotocol/conformance``) tests.

Every tool, prompt and resource the suite's ten Tasks scenarios and its generic 2026-07-28 server
scenarios name in their descriptions, built only on the public API (``ServerTasks`` and the 2.x
SDK's ``MCPServer``), served over streamable HTTP on 127.0.0.1. Run by ``nox -s conformance``
(through ``tests/conformance/run.py``); by hand::

    python tests/conformance/server.py [--port N]     # prints "listening on <url>" on stderr

Needs mcp 2.x: the 2026-07-28 protocol and the Tasks extension exist only there.
"""

from __future__ import annotations

import argparse
import base64
import socket
import sys
from typing import Annotated, Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from pydantic import Field

from mcp_tasks_compat import __version__
from mcp_tasks_compat.server import ServerTasks, elicit

__all__ = ["build_server", "main"]

# The suite's Tasks scenarios call these with a client that declares the extension. Only
# slow_compute is "optional" (tasks-capability-negotiation calls it without the extension and
# expects a plain result); the others must create a task whenever they are called that way, also
# once task-optional calls may answer inline after a short grace, so they are "required".
TASK_SUPPORT: dict[str, Any] = {
    "slow_compute": "optional",
    "failing_job": "required",  # tasks-required-task-error: -32021 without the extension
    "protocol_error_job": "required",
    "confirm_delete": "required",
    "multi_input": "required",
    "test_tool_with_task": "required",  # tasks-mrtr-composition says taskSupport=required
}

# A 1x1 red PNG and a tiny silent WAV, the suite's "minimal" image and audio.
RED_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SILENT_WAV = base64.b64encode(
    b"RIFF" + (36 + 2).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    + b"data" + (2).to_bytes(4, "little") + b"\x00\x00"
).decode()  # fmt: skip

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
MISSING_CAPABILITY = -32021  # SEP-2575 MissingRequiredClientCapabilityError

# json-schema-2020-12's published fixture: 2020-12 keywords the SDK must pass through untouched.
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _elicit_request(message: str, schema: dict[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema),
    )


def _sampling_request(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens),
    )


def _answer(ctx: Context, key: str) -> Any:
    """The client's answer to the input request ``key`` of an earlier round, or ``None``."""
    responses = ctx.input_responses or {}
    return responses.get(key)


def _accepted_content(answer: Any) -> dict[str, Any] | None:
    if isinstance(answer, types.ElicitResult) and answer.action == "accept":
        return dict(answer.content or {})
    return None


def _sampled_text(answer: Any) -> str:
    content = getattr(answer, "content", None)
    return str(getattr(content, "text", content))


def build_server(plain_handoff_s: float | None = None) -> MCPServer[Any]:
    """The fixture server: ``ServerTasks`` composed into an ``MCPServer`` (its public keywords only);
    ``plain_handoff_s``: the plain hand-off on (docs/any-host.md), to show it changes no check."""
    tasks = ServerTasks(tools=TASK_SUPPORT, plain_handoff_s=plain_handoff_s)
    hint = CacheHint(ttl_ms=0, scope="private")
    cache_hints: Any = {
        method: hint
        for method in (
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "resources/read",
        )
    }
    mcp = MCPServer(
        "mcp-tasks-compat-conformance",
        version=__version__,
        **tasks.mcpserver_kwargs(cache_hints=cache_hints, tools=[json_schema_tool()]),
    )
    _add_task_fixtures(mcp)
    _add_tool_fixtures(mcp)
    _add_input_required_fixtures(mcp)
    _add_prompt_and_resource_fixtures(mcp)
    return mcp


def _add_task_fixtures(mcp: MCPServer[Any]) -> None:
    """The Tasks scenarios' fixtures (tasks-lifecycle, -dispatch-and-envelope, -mrtr-input, ...)."""

    @mcp.tool(description="Sync-only: says hello.")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @mcp.tool(description="Task-supporting: sleeps `seconds` seconds, then answers.")
    async def slow_compute(seconds: float = 0, label: str = "") -> str:
        await anyio.sleep(seconds)
        return f"computed {label or 'result'} after {seconds:g} s"

    @mcp.tool(description="Task-supporting (required): reports a tool execution error after ~1 s.")
    async def failing_job() -> types.CallToolResult:
        await anyio.sleep(1)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="failing_job failed, as it always does")],
            is_error=True,
        )

    @mcp.tool(description="Task-supporting: fails with a JSON-RPC (protocol) error.")
    async def protocol_error_job() -> str:
        raise MCPError(code=types.INTERNAL_ERROR, message="protocol_error_job: internal failure")

    @mcp.tool(description="Task-supporting: asks the client to confirm, then deletes (pretends to).")
    async def confirm_delete(filename: str) -> str:
        schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
        answer = await elicit(f"Delete {filename}?", schema)
        if (_accepted_content(answer) or {}).get("confirm"):
            return f"deleted {filename}"
        return f"kept {filename}"

    @mcp.tool(description="Task-supporting: asks two questions at once.")
    async def multi_input() -> str:
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
            "required": ["name", "confirm"],
        }
        answers: dict[int, Any] = {}

        async def ask(index: int) -> None:
            answers[index] = await elicit(f"Question {index}: your name?", schema)

        async with anyio.create_task_group() as group:
            group.start_soon(ask, 1)
            group.start_soon(ask, 2)
        names = [str((_accepted_content(answers[i]) or {}).get("name")) for i in (1, 2)]
        return f"got {', '.join(names)}"

    @mcp.tool(description="Task (required): asks for user_name first (input_required), then runs as a task.")
    async def test_tool_with_task(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        content = _accepted_content(_answer(ctx, "user_name"))
        if content is None:
            return types.InputRequiredResult(
                input_requests={"user_name": _elicit_request("What is your name?", NAME_SCHEMA)}
            )
        await anyio.sleep(0.5)
        return _text(f"Hello, {content.get('name')}! (gathered user_name, then ran as a task)")


def _add_tool_fixtures(mcp: MCPServer[Any]) -> None:
    """The generic tools/* scenarios' fixtures, and the stateless (SEP-2575) diagnostics."""

    @mcp.tool(description="Returns simple text.")
    def test_simple_text() -> types.CallToolResult:
        return _text("This is a simple text response for testing.")

    @mcp.tool(description="Returns an image.")
    def test_image_content() -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png")]
        )

    @mcp.tool(description="Returns audio.")
    def test_audio_content() -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.AudioContent(type="audio", data=SILENT_WAV, mime_type="audio/wav")]
        )

    @mcp.tool(description="Returns an embedded resource.")
    def test_embedded_resource() -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)])

    @mcp.tool(description="Returns text, an image and an embedded resource.")
    def test_multiple_content_types() -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test":"data","value":123}',
        )
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="Multiple content types test:"),
                types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png"),
                types.EmbeddedResource(type="resource", resource=resource),
            ]
        )

    @mcp.tool(description="Reports progress 0, 50, 100 of 100.")
    async def test_tool_with_progress(ctx: Context) -> str:
        for progress in (0, 50, 100):
            await ctx.report_progress(progress, 100)
            if progress < 100:
                await anyio.sleep(0.05)
        return "Tool with progress executed successfully"

    @mcp.tool(description="Always fails.")
    def test_error_handling() -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @mcp.tool(description="Carries its region in the Mcp-Param-Region header (SEP-2243).")
    def test_custom_header(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    ) -> str:
        return f"region {region}"

    @mcp.tool(description="Needs the client's sampling capability (SEP-2575 diagnostic).")
    async def test_missing_capability(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise MCPError(
                code=MISSING_CAPABILITY,
                message="Missing required client capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        answer = _answer(ctx, "sample")
        if answer is None:
            return types.InputRequiredResult(input_requests={"sample": _sampling_request("Say hi", 20)})
        return _text(f"sampled: {_sampled_text(answer)}")

    @mcp.tool(description="Asks for input on its response stream the 2026-07-28 way (input_required).")
    async def test_streaming_elicitation(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        content = _accepted_content(_answer(ctx, "stream_question"))
        if content is None:
            return types.InputRequiredResult(
                input_requests={"stream_question": _elicit_request("What is your name?", NAME_SCHEMA)}
            )
        return _text(f"Hello, {content.get('name')}!")

    @mcp.tool(description="Logs at info level (sent only when the request asks for a log level).")
    async def test_logging_tool(ctx: Context) -> str:
        # server-stateless checks nothing is logged unless the request asks for a log level
        await ctx.info("test_logging_tool ran")  # pyright: ignore[reportDeprecated]
        return "logged"

    @mcp.tool(description="Adds a tool, so tools/list changes.")
    async def test_trigger_tool_change(ctx: Context) -> str:
        names = {tool.name for tool in await mcp.list_tools()}
        if "test_dynamic_tool" not in names:
            mcp.add_tool(lambda: "dynamic", name="test_dynamic_tool", description="Added at run time.")
        else:
            mcp.remove_tool("test_dynamic_tool")
        await ctx.notify_tools_changed()
        return "tools changed"

    @mcp.tool(description="Adds a prompt, so prompts/list changes.")
    async def test_trigger_prompt_change(ctx: Context) -> str:
        names = {prompt.name for prompt in await mcp.list_prompts()}
        if "test_dynamic_prompt" in names:
            mcp.remove_prompt("test_dynamic_prompt")
        else:
            mcp.prompt(name="test_dynamic_prompt", description="Added at run time.")(lambda: "dynamic")
        await ctx.notify_prompts_changed()
        return "prompts changed"


def json_schema_tool() -> Tool:
    """``json_schema_2020_12_tool``: a tool whose published input schema is the 2020-12 fixture.

    Built as a ``Tool`` and handed to ``MCPServer(tools=...)``, since a function signature cannot
    spell ``$defs``, ``allOf`` or ``if``/``then``; the scenario only lists it.
    """

    def json_schema_2020_12_tool() -> str:
        return "received"

    tool = Tool.from_function(json_schema_2020_12_tool, description="Tool with JSON Schema 2020-12 features")
    return tool.model_copy(update={"parameters": SCHEMA_2020_12})


def _add_input_required_fixtures(mcp: MCPServer[Any]) -> None:
    """The input-required-result-* scenarios' fixtures (SEP-2322, the SDK's own multi-round-trip flow)."""

    @mcp.tool(description="Round 1 asks for user_name; round 2 greets.")
    async def test_input_required_result_elicitation(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        content = _accepted_content(_answer(ctx, "user_name"))
        if content is None or not isinstance(content.get("name"), str):
            return types.InputRequiredResult(
                input_requests={"user_name": _elicit_request("What is your name?", NAME_SCHEMA)}
            )
        return _text(f"Hello, {content['name']}!")

    @mcp.tool(description="Round 1 asks the client's model; round 2 answers with its text.")
    async def test_input_required_result_sampling(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        answer = _answer(ctx, "capital_question")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={"capital_question": _sampling_request("What is the capital of France?", 100)}
            )
        return _text(f"The model said: {_sampled_text(answer)}")

    @mcp.tool(description="Round 1 asks for the client's roots; round 2 lists them.")
    async def test_input_required_result_list_roots(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        answer = _answer(ctx, "client_roots")
        if not isinstance(answer, types.ListRootsResult):
            return types.InputRequiredResult(input_requests={"client_roots": types.ListRootsRequest()})
        return _text("roots: " + ", ".join(str(root.uri) for root in answer.roots))

    @mcp.tool(description="Round 1 carries requestState; round 2 checks it came back.")
    async def test_input_required_result_request_state(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        answer = _answer(ctx, "confirm")
        if answer is None or ctx.request_state != "round-1":
            schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
            return types.InputRequiredResult(
                input_requests={"confirm": _elicit_request("Please confirm", schema)}, request_state="round-1"
            )
        return _text("state-ok: the requestState came back intact")

    @mcp.tool(description="Round 1 asks three questions at once; round 2 uses every answer.")
    async def test_input_required_result_multiple_inputs(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        keys = ("user_name", "greeting", "client_roots")
        if any(_answer(ctx, key) is None for key in keys) or ctx.request_state != "asked-all":
            return types.InputRequiredResult(
                input_requests={
                    "user_name": _elicit_request("What is your name?", NAME_SCHEMA),
                    "greeting": _sampling_request("Generate a greeting", 50),
                    "client_roots": types.ListRootsRequest(),
                },
                request_state="asked-all",
            )
        name = (_accepted_content(_answer(ctx, "user_name")) or {}).get("name")
        return _text(f"name {name}, greeting {_sampled_text(_answer(ctx, 'greeting'))}, roots received")

    @mcp.tool(description="Three rounds: a name, then a colour, then the answer.")
    async def test_input_required_result_multi_round(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        state = ctx.request_state
        if state == "round-2" and (colour := _accepted_content(_answer(ctx, "step2"))) is not None:
            return _text(f"favourite colour {colour.get('color')}: done after three rounds")
        if state == "round-1" and _accepted_content(_answer(ctx, "step1")) is not None:
            schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
            return types.InputRequiredResult(
                input_requests={"step2": _elicit_request("Step 2: What is your favorite color?", schema)},
                request_state="round-2",
            )
        return types.InputRequiredResult(
            input_requests={"step1": _elicit_request("Step 1: What is your name?", NAME_SCHEMA)},
            request_state="round-1",
        )

    @mcp.tool(description="requestState is sealed by the SDK; a tampered one is refused before this runs.")
    async def test_input_required_result_tampered_state(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        if ctx.request_state == "sealed-round-1" and _answer(ctx, "confirm") is not None:
            return _text("state verified")
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return types.InputRequiredResult(
            input_requests={"confirm": _elicit_request("Please confirm", schema)},
            request_state="sealed-round-1",
        )

    @mcp.tool(description="Asks only for what the client declared it can answer.")
    async def test_input_required_result_capabilities(
        ctx: Context,
    ) -> types.CallToolResult | types.InputRequiredResult:
        if ctx.input_responses:
            return _text("answered: " + ", ".join(sorted(ctx.input_responses)))
        capabilities = ctx.client_capabilities
        requests: dict[str, Any] = {}
        if capabilities is not None and capabilities.elicitation is not None:
            requests["user_name"] = _elicit_request("What is your name?", NAME_SCHEMA)
        if capabilities is not None and capabilities.sampling is not None:
            requests["greeting"] = _sampling_request("Generate a greeting", 50)
        if capabilities is not None and capabilities.roots is not None:
            requests["client_roots"] = types.ListRootsRequest()
        if not requests:
            return _text("the client declared no capability to ask through")
        return types.InputRequiredResult(input_requests=requests)

    @mcp.prompt(name="test_input_required_result_prompt", description="Asks for context before rendering.")
    async def input_required_prompt(ctx: Context) -> list[Any] | types.InputRequiredResult:
        content = _accepted_content(_answer(ctx, "user_context"))
        if content is None:
            schema = {
                "type": "object",
                "properties": {"context": {"type": "string"}},
                "required": ["context"],
            }
            return types.InputRequiredResult(
                input_requests={
                    "user_context": _elicit_request("What context should the prompt use?", schema)
                }
            )
        return [f"Use this context: {content.get('context')}"]


def _add_prompt_and_resource_fixtures(mcp: MCPServer[Any]) -> None:
    """The prompts/*, resources/* and completion scenarios' fixtures."""

    @mcp.prompt(name="test_simple_prompt", description="A simple prompt without arguments.")
    def simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @mcp.prompt(name="test_prompt_with_arguments", description="A prompt with two required arguments.")
    def prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @mcp.prompt(name="test_prompt_with_embedded_resource", description="A prompt embedding a resource.")
    def prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        resource = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(content=types.EmbeddedResource(type="resource", resource=resource)),
            UserMessage(content="Please process the embedded resource above."),
        ]

    @mcp.prompt(name="test_prompt_with_image", description="A prompt with an image.")
    def prompt_with_image() -> list[UserMessage]:
        return [
            UserMessage(content=types.ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png")),
            UserMessage(content="Please analyze the image above."),
        ]

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        words = ["paris", "park", "party"]
        values = [word for word in words if word.startswith(str(argument.value))]
        return types.Completion(values=values, total=len(values), has_more=False)

    @mcp.resource(
        "test://static-text",
        name="static-text",
        description="A static text resource.",
        mime_type="text/plain",
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @mcp.resource(
        "test://static-binary",
        name="static-binary",
        description="A static binary resource.",
        mime_type="image/png",
    )
    def static_binary() -> bytes:
        return base64.b64decode(RED_PIXEL_PNG)

    @mcp.resource(
        "test://template/{id}/data",
        name="template-data",
        description="A resource template with an id.",
        mime_type="application/json",
    )
    def template_data(id: str) -> str:
        return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'

    @mcp.resource(
        "test://watched-resource",
        name="watched-resource",
        description="A resource to subscribe to.",
        mime_type="text/plain",
    )
    def watched_resource() -> str:
        return "watched"


async def serve(host: str, port: int, plain_handoff_s: float | None = None) -> None:
    """Serve the fixture server over streamable HTTP; print the URL once it accepts connections."""
    mcp = build_server(plain_handoff_s)
    app = mcp.streamable_http_app(host=host)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    bound_port = listener.getsockname()[1]
    listener.listen(128)  # from here connections wait in the backlog until uvicorn (and our lifespan) is up
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"listening on http://{host}:{bound_port}/mcp", file=sys.stderr, flush=True)
    await server.serve(sockets=[listener])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--plain-handoff-s", type=float, default=None, help="the plain hand-off on")
    args = parser.parse_args(argv)
    anyio.run(serve, args.host, args.port, args.plain_handoff_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
