"""Only ``_adapters/`` may import ``mcp``; only ``_detect`` may look at its version.

The SDK-free layers are what every nox session tests whatever SDK is installed, and what lets
``import mcp_tasks_compat`` succeed (and its errors be caught) on a broken install.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tools import structure_figures

import mcp_tasks_compat

PACKAGE = Path(mcp_tasks_compat.__file__).resolve().parent
SDK_PACKAGES = ("mcp", "mcp_types")

# Modules that must import without loading the SDK (``client`` and others join when they exist).
SDK_FREE = [
    "mcp_tasks_compat",
    "mcp_tasks_compat.core",
    "mcp_tasks_compat.core._model",
    "mcp_tasks_compat.core._lifecycle",
    "mcp_tasks_compat.core._codec_2025",
    "mcp_tasks_compat.core._codec_2026",
    "mcp_tasks_compat.errors",
    "mcp_tasks_compat.dialects",
    "mcp_tasks_compat._detect",
    "mcp_tasks_compat._engine",
    "mcp_tasks_compat._engine.records",
    "mcp_tasks_compat._engine.reader",
    "mcp_tasks_compat._engine.writer",
    "mcp_tasks_compat._engine.engine",
    "mcp_tasks_compat._engine.inputs",
    "mcp_tasks_compat._engine.expiry",
    "mcp_tasks_compat._engine.reruns",
    "mcp_tasks_compat._engine.serving",
    "mcp_tasks_compat._engine.policy",
    "mcp_tasks_compat._engine.stores",
    "mcp_tasks_compat._engine.stores.contract",
    "mcp_tasks_compat._engine.stores.sqlite",
    "mcp_tasks_compat._engine.stores.urls",
    "mcp_tasks_compat._client",
    "mcp_tasks_compat._server",
    "mcp_tasks_compat._server.service_2025",
    "mcp_tasks_compat._examples",
    "mcp_tasks_compat._cli",
    "mcp_tasks_compat._adapters",
    "mcp_tasks_compat.server",
    "mcp_tasks_compat.client",
    "mcp_tasks_compat.__main__",
]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (this one has long since imported ``mcp``)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )


def test_importing_the_public_modules_does_not_load_the_sdk() -> None:
    result = run_python(
        f"""
        import importlib, importlib.util, sys
        for name in {SDK_FREE!r}:
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {SDK_PACKAGES!r})
        print("LOADED", loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout, result.stdout


BLOCKER = f"""
import importlib.abc, sys

class BlockSdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {SDK_PACKAGES!r}:
            raise ImportError(f"blocked by the test: {{name}}")
        return None

sys.meta_path.insert(0, BlockSdk())
for name in [m for m in sys.modules if m.split(".")[0] in {SDK_PACKAGES!r}]:
    del sys.modules[name]
"""


def test_the_blocker_really_blocks() -> None:
    result = run_python(BLOCKER + "import mcp.types\n")
    assert result.returncode != 0
    assert "blocked by the test: mcp" in result.stderr


def test_the_core_imports_and_works_with_the_sdk_blocked() -> None:
    result = run_python(
        BLOCKER
        + """
from datetime import datetime, timezone

import mcp_tasks_compat
from mcp_tasks_compat import errors, dialects
from mcp_tasks_compat.core import _codec_2025 as codec_2025, _codec_2026 as codec_2026
from mcp_tasks_compat.core._lifecycle import TaskEvent, next_status
from mcp_tasks_compat.core._model import Task, TaskStatus
from mcp_tasks_compat._engine import TaskEngine

now = datetime(2026, 7, 28, tzinfo=timezone.utc)
task = Task(task_id="t", status=TaskStatus.WORKING, created_at=now, last_updated_at=now, ttl_ms=None)
assert codec_2025.decode_create_task_result(codec_2025.encode_create_task_result(task)) == task
assert codec_2026.decode_create_task_result(codec_2026.encode_create_task_result(task)) == task
assert next_status(TaskStatus.WORKING, TaskEvent.COMPLETE) is TaskStatus.COMPLETED
try:
    codec_2026.decode_task({})
except errors.PeerProtocolError:
    pass
TaskEngine()

# With no SDK importable, detection refuses loudly (never an AttributeError later).
try:
    mcp_tasks_compat.sdk_info()
except mcp_tasks_compat.UnsupportedSdkError as error:
    print("REFUSED", error.code)
from mcp_tasks_compat.__main__ import main
print("EXIT", main(["info"]))
print("OK")
"""
    )
    assert result.returncode == 0, result.stderr
    assert "REFUSED unsupported-sdk" in result.stdout
    assert "EXIT 2" in result.stdout
    assert "OK" in result.stdout
    assert "mcp-tasks-compat: installed metadata says mcp" in result.stderr  # the CLI's one-line refusal


# --- static checks ------------------------------------------------------------------------------


def python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imported_modules(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_only_adapters_import_the_sdk() -> None:
    offenders = []
    for path in python_files():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("_adapters/") and relative != "_adapters/__init__.py":
            continue
        for name in imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            if name.split(".")[0] in SDK_PACKAGES:
                offenders.append(f"{relative}: {name}")
    assert offenders == []


REGISTRY_IMPORTS = {"__future__", "importlib", "functools", "typing", "mcp_tasks_compat._detect"}


def resolved_imports(path: Path, *, at_run_time_only: bool = False) -> list[str]:
    """Every module ``path`` imports, relative imports resolved.

    ``TYPE_CHECKING`` imports are included unless ``at_run_time_only`` (then every import under an
    ``if`` is left out, which is where this package keeps its type-only imports).
    """
    name = structure_figures.module_name(path, PACKAGE)
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) for inner in ast.walk(node)}
    found: list[str] = []
    for node in ast.walk(tree):
        if at_run_time_only and id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = base[: len(base) - (node.level - 1)] if node.level else []
            found.append(".".join(anchor + ([node.module] if node.module else [])))
    return found


def test_the_registry_imports_no_sdk_and_no_major_at_import_time() -> None:
    """Importing ``_adapters`` loads neither ``mcp`` nor ``v1``/``v2``: they come with ``get_adapter()``."""
    found = resolved_imports(PACKAGE / "_adapters" / "__init__.py", at_run_time_only=True)
    assert set(found) <= REGISTRY_IMPORTS, found


# The layers, lowest first: a module may import its own layer and the layers below it, never above
# (type-only imports included, so no cycle hides behind TYPE_CHECKING). Whatever is not listed is
# the top: the public modules, the command line and the testing kit.
LAYERS: dict[str, int] = {
    "errors": 0,
    "dialects": 0,
    "_version": 0,
    "core": 1,
    "_observe": 1,  # OpenTelemetry hooks: imports only _version (and opentelemetry, lazily)
    "_detect": 2,
    "_engine": 3,
    "_client": 3,
    "_server": 4,  # the server's task protocol, above the engine it drives
    "_adapters": 5,
}
TOP = max(LAYERS.values()) + 1


def layer_of(module: str) -> tuple[int, str]:
    """(rank, the package-level name) of one of the package's modules."""
    first = module.split(".")[1] if module.count(".") else ""
    return LAYERS.get(first, TOP), first


@pytest.mark.parametrize("path", python_files(), ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_each_module_imports_only_its_layer_and_below(path: Path) -> None:
    rank, top = layer_of(structure_figures.module_name(path, PACKAGE))
    upward = []
    for target in resolved_imports(path):
        if not target.startswith(f"{PACKAGE.name}.") or rank == TOP:
            continue
        target_rank, target_top = layer_of(target)
        # Same rank, other package (the engine and the client logic): independent, never each other.
        if target_rank > rank or (target_rank == rank and target_top != top):
            upward.append(target)
    assert upward == [], f"{path.relative_to(PACKAGE)} imports above its layer: {upward}"


def test_the_stores_import_nothing_else_of_the_engine() -> None:
    """``_engine/stores/`` is storage only: the engine uses the stores, never the other way round."""
    engine, stores = f"{PACKAGE.name}._engine", f"{PACKAGE.name}._engine.stores"
    upward = [
        f"{path.relative_to(PACKAGE).as_posix()}: {target}"
        for path in sorted((PACKAGE / "_engine" / "stores").glob("*.py"))
        for target in resolved_imports(path)
        if (target == engine or target.startswith(f"{engine}.")) and not target.startswith(stores)
    ]
    assert upward == []


def imported_names(path: Path) -> list[str]:
    """Every module ``path`` imports and every name it imports from one, relative imports resolved
    (``from ..core import _codec_2025`` is ``mcp_tasks_compat.core._codec_2025``)."""
    name = structure_figures.module_name(path, PACKAGE)
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            anchor = base[: len(base) - (node.level - 1)] if node.level else []
            module = ".".join(anchor + ([node.module] if node.module else []))
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return found


def test_the_engine_reads_no_dialects_codec() -> None:
    """``_engine/`` picks no dialect's codec and writes no wire: what a result means and what goes
    on the wire are each dialect's, given by ``_server/`` (the result rule, the rounds)."""
    codecs = f"{PACKAGE.name}.core._codec_"
    engine_files = sorted((PACKAGE / "_engine").rglob("*.py"))
    assert len(engine_files) > 10  # the walk finds the engine
    reading = [
        f"{path.relative_to(PACKAGE).as_posix()}: {target}"
        for path in engine_files
        for target in imported_names(path)
        if target.startswith(codecs)
    ]
    assert reading == []


def test_the_core_uses_the_standard_library_only() -> None:
    """``core/`` is the part tested the same under every SDK: no anyio, no pydantic, no mcp."""
    third_party = sorted(
        {
            name
            for path in sorted((PACKAGE / "core").glob("*.py"))
            for name in resolved_imports(path)
            if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith(PACKAGE.name)
        }
    )
    assert third_party == []


def test_only_the_registry_compares_sdk_majors() -> None:
    """Everything else asks ``get_adapter()`` for a facet instead of branching on the major."""
    comparing = [
        f"{path.relative_to(PACKAGE).as_posix()}:{line}"
        for path in python_files()
        if path.name != "_detect.py"
        for line in structure_figures.major_comparisons(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert comparing == []


VERSION_TOOLS = ("importlib.metadata", "packaging.version", "packaging.specifiers")
VERSION_ALLOWED = {"_detect.py"}


@pytest.mark.parametrize("path", python_files(), ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_only_detect_looks_at_versions(path: Path) -> None:
    relative = path.relative_to(PACKAGE).as_posix()
    source = path.read_text(encoding="utf-8")
    used = [name for name in imported_modules(ast.parse(source)) if name.startswith(VERSION_TOOLS)]
    used += [tool for tool in ("metadata.version(", "__version__ <", "__version__ >") if tool in source]
    if relative in VERSION_ALLOWED:
        return
    assert used == [], f"{relative} looks at versions; ask _detect.sdk_info() instead"
