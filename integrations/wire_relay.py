"""``python wire_relay.py DIR``: ``render_server.py`` over stdio, every request the client sends logged.

A framework starts this instead of the server: it starts the server as its child (with
``RENDER_SERVER_RECORDS=DIR``, so the tools record their runs in ``DIR/tools.jsonl``), relays
stdin and stdout line by line, and appends each client request's method to ``DIR/wire.jsonl``:
the server's reads (``tasks/get``...) and cancels, counted on the wire. Standard library only, so
it starts quickly in front of the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

SERVER = Path(__file__).with_name("render_server.py")
RECORDS_ENV = "RENDER_SERVER_RECORDS"


def _pump(source: IO[bytes], sink: IO[bytes], log: Path | None) -> None:
    """Copy newline-delimited JSON-RPC from ``source`` to ``sink``, logging each request's method."""
    for line in iter(source.readline, b""):
        if log is not None:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" in message:
                entry = {"method": message["method"], "id": message.get("id"), "at": time.time()}
                with open(log, "a", encoding="utf-8") as out:
                    out.write(json.dumps(entry) + "\n")
        sink.write(line)
        sink.flush()
    sink.close()


def relay(records: Path) -> int:
    """Run the real server as a child, logging the client's requests on the way in."""
    records.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, RECORDS_ENV: str(records)}
    child = subprocess.Popen(
        [sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert child.stdin is not None
    assert child.stdout is not None
    inbound = threading.Thread(
        target=_pump, args=(sys.stdin.buffer, child.stdin, records / "wire.jsonl"), daemon=True
    )
    inbound.start()
    _pump(child.stdout, sys.stdout.buffer, None)
    return child.wait()


if __name__ == "__main__":
    sys.exit(relay(Path(sys.argv[1])))
