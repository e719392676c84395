"""``python -m benchmarks.worker_apps ours|fastmcp4 --port N [--store URL]``: serve over streamable HTTP.

ours: the ``TaskServer`` of :mod:`.ours_app` on ``--store`` (its runs queued for workers).
fastmcp4: :mod:`.fastmcp4_app`, Docket from the ``FASTMCP_DOCKET_*`` environment.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from contextlib import suppress

QUIET = ("mcp", "httpx", "fastmcp", "docket", "uvicorn", "FastMCP", "sse_starlette", "mcp_tasks_compat")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker_apps")
    parser.add_argument("kind", choices=("ours", "fastmcp4"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", default=None, help="ours: the task store URL (a shared one)")
    args = parser.parse_args(argv)
    for name in QUIET:  # per-request INFO logs would be what is measured
        logging.getLogger(name).setLevel(logging.WARNING)
    with suppress(KeyboardInterrupt):
        if args.kind == "ours":
            if args.store:
                os.environ["BENCH_WORKERS_STORE"] = args.store
            from benchmarks.worker_apps.ours_app import app

            app.run("streamable-http", host="127.0.0.1", port=args.port)
        else:
            os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
            os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
            import uvicorn

            from benchmarks.worker_apps.fastmcp4_app import mcp

            uvicorn.run(
                mcp.http_app(),
                host="127.0.0.1",
                port=args.port,
                log_level="warning",
                access_log=False,
                timeout_graceful_shutdown=2,
            )
    sys.exit(0)


if __name__ == "__main__":
    main()
