"""Command line: ``mcp-tasks-compat`` / ``python -m mcp_tasks_compat``.

``info``, ``demo``, ``example-server``, ``call``, ``resume`` and ``probe``; docs/cli.md lists every option and
exit code. Parsing lives here; what each command does lives in the :mod:`._cli` package.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from ._cli.common import quiet_sdk_logs
from ._engine import DEFAULT_LEASE_S
from ._engine.limits import DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER
from ._worker import DEFAULT_CONCURRENCY as DEFAULT_WORKER_CONCURRENCY
from ._worker import DEFAULT_GRACE_S as DEFAULT_WORKER_GRACE_S
from .dialects import ALL_DIALECTS
from .errors import CompatError

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_USAGE = 2

_EPILOG = (
    "exit codes: 0 success, 1 tool error or failed task, 2 usage error or refusal, 3 cancelled or timed out"
)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


LEASE_BOUNDS_S = (0.5, 86_400.0)
"""A lease shorter than half a second would renew in a busy loop; one longer than a day leaves a dead
replica's tasks ``working`` for that long (and an infinite one cannot be written as a deadline)."""


def _lease_seconds(text: str) -> float:
    value = _positive_float(text)
    low, high = LEASE_BOUNDS_S
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g} seconds: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535: {text!r}")
    return value


OptionsT = TypeVar("OptionsT")


def options_from(kind: Callable[..., OptionsT], args: argparse.Namespace) -> OptionsT:
    """A command's options dataclass from its parsed arguments, field by field of the same name
    (each option's flag is spelled like its field)."""
    return kind(**{field.name: getattr(args, field.name) for field in dataclasses.fields(kind)})  # type: ignore[arg-type]


def _cmd_info(args: argparse.Namespace) -> int:
    from ._detect import sdk_info

    info = sdk_info()
    print(info.dumps() if args.json else info.render())
    return EXIT_OK


def _cmd_example_server(args: argparse.Namespace) -> int:
    from ._cli import ServeOptions, run_example_server

    options = options_from(ServeOptions, args)
    return run_example_server(options)


def _cmd_worker(args: argparse.Namespace) -> int:
    from ._cli.worker import WorkerOptions, run_worker

    if (args.target is None) == (not args.example):
        print("mcp-tasks-compat: worker takes MODULE:ATTR or --example (one of them)", file=sys.stderr)
        return EXIT_USAGE
    if args.example and args.store is None:
        print("mcp-tasks-compat: worker --example needs --store URL (the servers' store)", file=sys.stderr)
        return EXIT_USAGE
    if args.verbose:
        import logging

        logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
        logging.getLogger("mcp_tasks_compat.worker").setLevel(logging.INFO)
        logging.getLogger("mcp_tasks_compat.engine").setLevel(logging.INFO)  # re-runs it claims
    options = options_from(WorkerOptions, args)
    return run_worker(options)


def _cmd_tasks(args: argparse.Namespace) -> int:
    from ._cli.tasks import TasksOptions, run_tasks

    task_id = getattr(args, "task_id", None)
    return run_tasks(TasksOptions(action=args.action, store=args.store, task_id=task_id, as_json=args.json))


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._cli import DemoOptions, run_demo

    return run_demo(
        DemoOptions(dialect=args.dialect, seconds=args.seconds, steps=args.steps, verbose=args.verbose)
    )


def _cmd_call(args: argparse.Namespace) -> int:
    from ._cli import CallOptions, parse_answer, parse_arguments, run_call
    from ._cli.common import CliError

    if (args.tool is None) == (args.resume is None):
        raise CliError("give a TOOL to call, or --resume TASK_ID to follow a task (one of them)")
    options = CallOptions(
        target=_target(args),
        tool=args.tool or "",
        resume=args.resume,
        arguments=parse_arguments(args.args_json),
        mode=args.mode,
        timeout=args.timeout,
        cancel_after=args.cancel_after,
        as_json=args.json,
        connect_timeout=args.connect_timeout,
        verbose=args.verbose,
        answer=parse_answer(args.answer),
        journal=_journal(args.journal),
    )
    return run_call(options)


def _journal(location: str | None) -> Any:
    """``--journal PATH``: the client journal, opened (and created) now."""
    if location is None:
        return None
    from ._journal import TaskJournal

    return TaskJournal(location)


def _cmd_resume(args: argparse.Namespace) -> int:
    from ._cli.connect import parse_env, parse_headers
    from ._cli.resume import ResumeOptions, run_resume

    given = args.url is not None or bool(args.server_command)
    options = ResumeOptions(
        journal=args.journal,
        target=_target(args) if given else None,
        headers=parse_headers(args.header, args.bearer_env),
        env=parse_env(args.env),
        timeout=args.timeout,
        as_json=args.json,
        connect_timeout=args.connect_timeout,
        verbose=args.verbose,
    )
    return run_resume(options)


def _cmd_probe(args: argparse.Namespace) -> int:
    from ._cli import ProbeOptions, run_probe

    options = ProbeOptions(
        target=_target(args),
        as_json=args.json,
        connect_timeout=args.connect_timeout,
        verbose=args.verbose,
    )
    return run_probe(options)


def _target(args: argparse.Namespace) -> Any:
    from ._cli import Target

    return Target.of(
        args.url, args.server_command, env=args.env, headers=args.header, bearer_env=args.bearer_env
    )


def _add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="a streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="send this HTTP header to --url (repeatable); never printed back",
    )
    parser.add_argument(
        "--bearer-env",
        metavar="VAR",
        help="send 'Authorization: Bearer $VAR' to --url, the token read from the environment "
        "variable VAR (so it is not on the command line)",
    )
    parser.add_argument(
        "--connect-timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="seconds to open and negotiate the connection (default: 30)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="set K=V in the server command's environment (repeatable); it inherits this one's otherwise",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show SDK logs and the server's stderr")


AddParser = Callable[..., argparse.ArgumentParser]
"""``add_parser`` of the command subparsers: each ``_add_*`` below adds one command."""


def _add_info(add_parser: AddParser) -> None:
    info = add_parser("info", help="what the installed mcp SDK supports")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(handler=_cmd_info)


def _add_demo(add_parser: AddParser) -> None:
    demo = add_parser(
        "demo",
        help="run a long tool as a task against an in-process example server, cancel another run, "
        "then one that asks a question",
        epilog=_EPILOG,
    )
    demo.add_argument(
        "--dialect",
        choices=ALL_DIALECTS,
        default=None,
        help="task dialect to use (default: the newest this install speaks; mcp 1.x speaks only 2025-11-25)",
    )
    demo.add_argument(
        "--seconds", type=_positive_float, default=3.0, help="length of the first run (default: 3)"
    )
    demo.add_argument("--steps", type=int, default=6, help="status messages of the first run (default: 6)")
    demo.add_argument("-v", "--verbose", action="store_true", help="show SDK logs")
    demo.set_defaults(handler=_cmd_demo)


def _add_example_server(add_parser: AddParser) -> None:
    serve = add_parser("example-server", help="serve the example tools (slow_echo, fail, must_task, ask)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP host (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=_port, default=8000, help="HTTP port; 0 picks a free one (default: 8000)"
    )
    serve.add_argument(
        "--store",
        default="memory:",
        metavar="URL",
        help="where tasks live: memory: (default), sqlite:///tasks.db, redis://host/0, postgresql://host/db",
    )
    serve.add_argument(
        "--lease-s",
        type=_lease_seconds,
        default=DEFAULT_LEASE_S,
        metavar="SECONDS",
        help=f"how long a run's claim on a shared store holds without renewal (default: {DEFAULT_LEASE_S:g})",
    )
    serve.add_argument(
        "--unauthenticated-2025-scope",
        choices=("session", "task_id"),
        default="session",
        help="who may read an unauthenticated 2025-11-25 task by its id: the session that made it "
        "(default), or any session that knows the id (task_id: read back after a reconnect or a restart)",
    )
    serve.add_argument(
        "--max-active-tasks",
        type=_positive_int,
        default=DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER,
        metavar="N",
        help="active tasks per owner (principal, session or server) before new ones are refused; "
        "unauthenticated 2026-07-28 callers share one owner, so for them it is server-wide "
        f"(default: {DEFAULT_MAX_ACTIVE_TASKS_PER_OWNER})",
    )
    serve.add_argument(
        "--run-on",
        choices=("here", "workers"),
        default="here",
        help="where task runs happen: in this server (default), or queued in the --store (sqlite:, "
        "redis: or postgresql:) for `mcp-tasks-compat worker --example` processes",
    )
    serve.add_argument(
        "--max-queued",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --run-on workers: tasks waiting for a worker before new ones are refused "
        "(default: no bound)",
    )
    serve.add_argument(
        "--plain-handoff-s",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="a plain tools/call (a client without tasks) of a task-capable tool waits this long, then "
        "answers with the task it goes on as; lists task_status/task_result/task_cancel/task_answer "
        "(default: off; docs/any-host.md)",
    )
    serve.add_argument(
        "--reruns",
        type=int,
        default=0,
        metavar="N",
        help="start a run of slow_echo (safe to run again) lost to a crash again, up to N times "
        "(needs a durable --store; default: 0, docs/reliability.md)",
    )
    serve.add_argument(
        "--metrics-port",
        type=_positive_int,
        default=None,
        metavar="N",
        help="serve the task metrics in Prometheus text form on http://<host>:N/metrics (needs "
        "opentelemetry-sdk and opentelemetry-exporter-prometheus; see docs/observability.md)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="show the SDK's server logs")
    serve.set_defaults(handler=_cmd_example_server)


def _add_worker(add_parser: AddParser) -> None:
    worker = add_parser(
        "worker",
        help="run a server's queued task runs (run_on='workers') from its store, without an MCP listener",
        epilog=_EPILOG,
    )
    worker.add_argument(
        "target",
        nargs="?",
        metavar="MODULE:ATTR",
        help="the TaskServer your server serves (module or path/to/server.py, ATTR default: app)",
    )
    worker.add_argument("--example", action="store_true", help="run the example tools (of example-server)")
    worker.add_argument(
        "--store", metavar="URL", help="the servers' store: sqlite:///t.db, redis://h/0, postgresql://h/db"
    )
    worker.add_argument(
        "--concurrency",
        type=_positive_int,
        default=DEFAULT_WORKER_CONCURRENCY,
        metavar="N",
        help=f"runs at once (default: {DEFAULT_WORKER_CONCURRENCY})",
    )
    worker.add_argument(
        "--grace-s",
        type=_lease_seconds,
        default=DEFAULT_WORKER_GRACE_S,
        metavar="SECONDS",
        help="on SIGTERM, how long the runs may finish before the rest go back to the queue "
        f"(default: {DEFAULT_WORKER_GRACE_S:g})",
    )
    worker.add_argument(
        "--lease-s",
        type=_lease_seconds,
        default=DEFAULT_LEASE_S,
        metavar="SECONDS",
        help=f"--example: the lease of a run's claim (as example-server's; default: {DEFAULT_LEASE_S:g})",
    )
    worker.add_argument(
        "--metrics-port",
        type=_positive_int,
        default=None,
        metavar="N",
        help="serve this worker's metrics in Prometheus text form on http://<metrics-host>:N/metrics "
        "(needs opentelemetry-sdk and opentelemetry-exporter-prometheus; see docs/observability.md)",
    )
    worker.add_argument(
        "--metrics-host", default="127.0.0.1", help="where --metrics-port listens (default: 127.0.0.1)"
    )
    worker.add_argument("-v", "--verbose", action="store_true", help="log each claim and stop")
    worker.set_defaults(handler=_cmd_worker)


def _add_tasks(add_parser: AddParser) -> None:
    tasks = add_parser(
        "tasks",
        help="see and stop the tasks in a server's store (sqlite:, redis:, postgresql:) without a session",
        epilog=_EPILOG,
    )
    actions = tasks.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, help_text, takes_id in (
        ("list", "every task: id, status, tool, owner, age, TTL left", False),
        ("show", "one task in full", True),
        ("cancel", "cancel a task; the replica running it stops the work", True),
        ("purge", "delete every ended (completed, failed, cancelled) task", False),
    ):
        command = actions.add_parser(action, help=help_text)
        if takes_id:
            command.add_argument("task_id", metavar="ID", help="the task's id")
        command.add_argument(
            "--store", required=True, metavar="URL", help="sqlite:///tasks.db, redis://h/0, postgresql://h/db"
        )
        command.add_argument("--json", action="store_true", help="print one JSON document")
        command.set_defaults(handler=_cmd_tasks)


def _add_call(add_parser: AddParser) -> None:
    call = add_parser(
        "call",
        help="call a tool, as a task where the server offers one",
        usage=(
            "mcp-tasks-compat call TOOL [ARGS_JSON] [--answer JSON] [options] "
            "(--url URL | -- COMMAND ARGS...), or call --resume TASK_ID (--url URL | -- COMMAND ARGS...)"
        ),
        epilog=_EPILOG,
    )
    call.add_argument("tool", metavar="TOOL", nargs="?", help="the tool's name (not with --resume)")
    call.add_argument("args_json", metavar="ARGS_JSON", nargs="?", help="the arguments, a JSON object")
    call.add_argument(
        "--mode",
        choices=("auto", "task", "plain"),
        default="auto",
        help="auto: a task where the server offers one (default); task: refuse if not; plain: never a task",
    )
    call.add_argument(
        "--timeout", type=_positive_float, metavar="S", help="give up (and cancel) after S seconds"
    )
    call.add_argument(
        "--cancel-after", type=_positive_float, metavar="S", help="cancel the task after S seconds"
    )
    call.add_argument("--json", action="store_true", help="print one JSON object instead of status lines")
    call.add_argument(
        "--resume",
        metavar="TASK_ID",
        help="follow an existing task (e.g. after the connection was lost) instead of calling a tool",
    )
    call.add_argument(
        "--answer",
        metavar="JSON",
        help='answer the tool\'s questions (elicitation) with this form content, e.g. \'{"answer": "Ada"}\'; '
        "without it they are asked on the terminal, or refused (exit 2) when stdin is not one",
    )
    call.add_argument(
        "--journal",
        metavar="PATH",
        help="record the call's task in this client journal (a SQLite file) until its outcome is read; "
        "'resume --journal PATH' follows what a killed call left",
    )
    _add_target(call)
    call.set_defaults(handler=_cmd_call)


def _add_resume(add_parser: AddParser) -> None:
    resume = add_parser(
        "resume",
        help="follow every pending task of a client journal to its end, as call would",
        usage="mcp-tasks-compat resume --journal PATH [--json] [--timeout S] [-H 'NAME: VALUE']... "
        "[--bearer-env VAR] [--env K=V]... [(--url URL | -- COMMAND ARGS...)]",
        epilog=_EPILOG,
    )
    resume.add_argument(
        "--journal", required=True, metavar="PATH", help="the client journal (call --journal)"
    )
    resume.add_argument("--json", action="store_true", help="print one JSON object per task, as call --json")
    resume.add_argument(
        "--timeout",
        type=_positive_float,
        metavar="S",
        help="give up on a task (and cancel it) after S seconds",
    )
    _add_target(resume)
    resume.set_defaults(handler=_cmd_resume)


def _add_probe(add_parser: AddParser) -> None:
    probe = add_parser(
        "probe",
        help="what a server offers: protocol, task dialects, each tool's task support",
        usage="mcp-tasks-compat probe [--json] [options] (--url URL | -- COMMAND ARGS...)",
        epilog=_EPILOG,
    )
    probe.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_target(probe)
    probe.set_defaults(handler=_cmd_probe)


def build_parser() -> argparse.ArgumentParser:
    parser = _RedactingParser(
        prog="mcp-tasks-compat",
        description="Run long MCP tool calls as tasks on mcp 1.x and 2.x, in both task dialects.",
        epilog=_EPILOG,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_info(commands.add_parser)
    _add_demo(commands.add_parser)
    _add_example_server(commands.add_parser)
    _add_call(commands.add_parser)
    _add_resume(commands.add_parser)
    _add_probe(commands.add_parser)
    _add_tasks(commands.add_parser)
    _add_worker(commands.add_parser)
    return parser


_HEADER_OPTIONS = ("-H", "--header")


class _RedactingParser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors never print an ``-H/--header`` value back (it may be a
    credential): every word given with or after one, up to the next option, is shown as ``***``."""

    hidden: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:
        for secret in sorted(self.hidden, key=len, reverse=True):
            message = message.replace(secret, "***")
        super().error(message)

    @classmethod
    def hide_headers_of(cls, argv: Sequence[str]) -> None:
        """Remember the words of ``argv`` that are (or may be) header values."""
        hidden: list[str] = []
        inside = False
        for item in argv:
            glued = next((item[len(o) :].lstrip("=") for o in _HEADER_OPTIONS if item.startswith(o)), None)
            if item in _HEADER_OPTIONS:
                inside = True
                continue
            if inside and item.startswith("-"):
                inside = False
            if glued:
                hidden.append(glued)
                inside = True
            elif inside:
                hidden.append(item)
        cls.hidden = tuple(
            part for value in hidden for part in (value, *value.replace(":", " ").split()) if len(part) >= 3
        )


def _split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``... -- COMMAND ARGS...``: everything after the first ``--`` is the server command."""
    items = list(argv)
    if "--" not in items:
        return items, []
    index = items.index("--")
    return items[:index], items[index + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    own, server_command = _split_command(sys.argv[1:] if argv is None else argv)
    _RedactingParser.hide_headers_of(own)
    args = parser.parse_args(own)
    if server_command and args.command not in ("call", "probe", "resume"):
        parser.error(f"{args.command} takes no server command after '--'")
    args.server_command = server_command
    if args.command in ("call", "probe", "resume", "demo", "example-server"):
        quiet_sdk_logs(args.verbose)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("mcp-tasks-compat: interrupted", file=sys.stderr)
        return 3
    except CompatError as exc:  # e.g. no usable mcp for info
        print(f"mcp-tasks-compat: {' '.join(exc.message.split())}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # bad ARGS_JSON, a bad target...: one line, never a traceback
        from ._cli import describe_failure

        code, message = describe_failure(exc)
        print(f"mcp-tasks-compat: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
