"""longtools: a small library with one long MCP tool, ``render(frames)``, served and called as a
task where the peer offers one, on mcp 1.x and 2.x with the same code."""

from .client import render_remote
from .server import build_app

__all__ = ["build_app", "render_remote"]
