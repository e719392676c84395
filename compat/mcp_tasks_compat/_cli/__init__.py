"""What the ``mcp-tasks-compat`` commands do; :mod:`..__main__` parses the command line and calls in here.

Rules of this layer:

- It sits above the public API, as an application would: task work goes through the public
  :mod:`..client` API, and the SDK-specific plumbing (transports, sessions, the example server)
  through the adapter registry's app facet (``_adapters.get_adapter().app``, typed by
  ``_adapters/base.py``). It may also use the SDK-free modules below the API (``core``,
  ``errors``, ``dialects``, ``_detect``). It never imports ``mcp`` and never compares SDK majors.
- Every failure ends as one line on stderr and an exit code (:func:`.failures.describe_failure`);
  the exit codes are :mod:`.common`'s and docs/cli.md lists them.
- What a command prints is its interface (docs/cli.md and the tests read it): change it on purpose.

One module per command (``call``, ``probe``, ``demo``, ``serve`` for ``example-server``) over the
shared pieces: ``common``, ``failures``, ``connect``, ``status``, ``answers``. This package
re-exports what :mod:`..__main__` and the tests use.
"""

from __future__ import annotations

from .answers import parse_answer
from .call import CallOptions, parse_arguments, run_call
from .common import EXIT_CANCELLED, EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, CliError
from .connect import Target
from .demo import DemoOptions, run_demo
from .failures import describe_failure
from .probe import ProbeOptions, render_probe, run_probe
from .serve import ServeOptions, run_example_server
from .status import StatusLine, StatusRecorder

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_USAGE",
    "CallOptions",
    "CliError",
    "DemoOptions",
    "ProbeOptions",
    "ServeOptions",
    "StatusLine",
    "StatusRecorder",
    "Target",
    "describe_failure",
    "parse_answer",
    "parse_arguments",
    "render_probe",
    "run_call",
    "run_demo",
    "run_example_server",
    "run_probe",
]
