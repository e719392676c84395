"""A stdio server that dies in the middle of a call, for the command line's error path.

It relays stdin to a real ``example-server`` child (whose stdout is ours) and, as soon as it has
passed on a ``tools/call``, kills the child and exits: the client sees the connection close while
the call is in flight, at a point fixed by the protocol rather than by a timer.

A script of its own because the testing kit's ``serve`` command cannot do this: its servers
serve until their client leaves, and dying on purpose mid-call is the whole point here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "mcp_tasks_compat", "example-server"],
        stdin=subprocess.PIPE,
        stdout=sys.stdout,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdin is not None
    for line in sys.stdin:
        child.stdin.write(line)
        child.stdin.flush()
        try:
            method = json.loads(line).get("method")
        except ValueError:
            continue
        if method == "tools/call":
            print("example server killed on purpose mid-call", file=sys.stderr, flush=True)
            child.kill()
            child.wait()
            os._exit(1)


if __name__ == "__main__":
    main()
