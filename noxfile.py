"""Lint, type checks and the test suite against every SDK version we support.

mcp 1.x and 2.x both install the import package ``mcp``, so they can never share an environment:
each SDK version gets its own virtual environment (built with uv), and the suite runs once in each.

    python -m nox                            # the default list below: lint, typecheck, docs ... package
    python -m nox -l                         # every session
    python -m nox -s "tests(mcp='2.3.0')"    # one SDK version; arguments after -- go to pytest
"""

from __future__ import annotations

import glob
import json
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import nox

nox.needs_version = ">=2024.4"
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
# What plain `nox` runs. Sessions added later (benchmarks, interop with other SDKs...) are opt-in
# unless they are added here; `bench` must stay out of the default list.
nox.options.sessions = ["lint", "typecheck", "api", "docs", "tests", "conformance", "package"]

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "compat" / "mcp_tasks_compat"
TOOLS = ROOT / "tools"  # repository tools (the docs generator), type-checked with the package
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")

# The floor (first release with the tasks API), the latest 1.x, the first 2.x and the latest 2.x.
MCP_VERSIONS = ["1.23.0", "1.30.0", "2.0.0", "2.3.0"]
# pyright checks each major against the newest release of that major.
TYPECHECK_VERSIONS = ["1.30.0", "2.3.0"]
LINT_TARGETS = ["compat", "tests", "tools", "examples", "integrations", "noxfile.py"]
NEWEST_OF_EACH_MAJOR = ["1.30.0", "2.3.0"]
"""The releases the long and fault sessions (fuzz, soak, chaos) and the chaos fast cases run on."""


def dependency_group(name: str) -> list[str]:
    """A ``[dependency-groups]`` entry of pyproject.toml (``include-group`` expanded).

    Read here rather than with ``uv pip install --group`` so any uv and nox version works.
    """
    requirements: list[str] = []
    for item in PYPROJECT["dependency-groups"][name]:
        if isinstance(item, str):
            requirements.append(item)
        else:
            requirements.extend(dependency_group(item["include-group"]))
    return requirements


def install_with_sdk(session: nox.Session, mcp: str, *groups: str) -> None:
    """The project from this checkout (editable), exactly ``mcp==<version>``, and dependency groups."""
    requirements = [req for group in groups for req in dependency_group(group)]
    session.install("-e", ".", f"mcp=={mcp}", *requirements)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint rules and formatting."""
    session.install(*dependency_group("lint"))
    session.run("ruff", "check", *LINT_TARGETS)
    session.run("ruff", "format", "--check", *LINT_TARGETS)


@nox.session
@nox.parametrize("mcp", TYPECHECK_VERSIONS)
def typecheck(session: nox.Session, mcp: str) -> None:
    """pyright strict on the package and tools/, with only the adapter of the installed major.

    The mcp 1.x adapter cannot resolve against mcp 2.x and the reverse, so each run leaves out the
    other major's folder (``_adapters/v1/`` or ``_adapters/v2/``). The files are passed explicitly
    (a config's include paths are relative to the config file, which lives in the session's
    temporary folder); the settings are pyproject's ``[tool.pyright]``.
    """
    install_with_sdk(session, mcp, "typecheck")
    other = PACKAGE / "_adapters" / ("v2" if mcp.startswith("1.") else "v1")
    files = sorted(
        path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py") if other not in path.parents
    )
    files += sorted(path.relative_to(ROOT).as_posix() for path in TOOLS.rglob("*.py"))
    settings = {
        key: value for key, value in PYPROJECT["tool"]["pyright"].items() if key not in ("include", "exclude")
    }
    config_path = Path(session.create_tmp()) / "pyrightconfig.json"
    config_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    python = Path(session.bin) / ("python.exe" if os.name == "nt" else "python")
    session.log(f"checking {len(files)} files (leaving out {other.relative_to(ROOT).as_posix()}/)")
    session.run(
        "pyright", "--project", str(config_path), "--pythonpath", str(python), *files, *session.posargs
    )


# The reference site (part of the default run): mkdocs.yml's guide (docs/*.md) and its API pages
# (docs/reference/, one per public module, read from the docstrings by mkdocstrings), built with
# warnings as errors into site/ (git-ignored); then tools/check_reference.py checks that every name
# in a public module's __all__ has its anchor in the built HTML.
DOCS_SDK_VERSION = "2.3.0"
SITE = ROOT / "site"


@nox.session
def api(session: nox.Session) -> None:
    """The public API against the last release's snapshot (api/<version>.json): fails on a break
    CHANGELOG.md does not announce. ``nox -s api -- --update`` writes this release's snapshot."""
    session.install(*dependency_group("api"))
    session.run("python", "-m", "tools.api_check", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site (``mkdocs build --strict``) into site/ and check every public name is in it."""
    install_with_sdk(session, DOCS_SDK_VERSION, "docs")
    session.run("mkdocs", "build", "--strict", "--clean", "--site-dir", str(SITE), *session.posargs)
    session.run("python", "-m", "tools.check_reference", str(SITE))


# Cross-major pairs: every `tests` session also builds ONE peer environment (the project and the
# other major's counterpart release) and names its python in MCP_TASKS_COMPAT_PEER_PYTHON, so
# tests/interop/test_cross_major.py runs this session's client against a server on the other major
# (stdio and streamable HTTP). The pairing makes the four sessions together run 1.x -> 1.x,
# 1.x -> 2.x, 2.x -> 1.x and 2.x -> 2.x, on the floors (1.23.0 / 2.0.0) and the newest releases.
PEER_OF = {"1.23.0": "2.0.0", "1.30.0": "2.3.0", "2.0.0": "1.23.0", "2.3.0": "1.30.0"}
PEER_ENV = "MCP_TASKS_COMPAT_PEER_PYTHON"


def session_python(session: nox.Session) -> str:
    return str(Path(session.bin) / ("python.exe" if os.name == "nt" else "python"))


def peer_python(session: nox.Session, mcp: str) -> str:
    """A second virtual environment (uv) with this checkout (editable), ``mcp==<mcp>`` and the test group.

    It lives in the session's tmp folder, so ``nox -r`` reuses it; ``--no-install`` skips the
    install when it already exists.
    """
    folder = Path(session.create_tmp()).resolve() / f"peer-mcp{mcp}"
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run = session.run_install if python.exists() else session.run
    base = session_python(session)
    run("uv", "venv", "--quiet", "--allow-existing", "--python", base, str(folder), external=True)
    requirements = ["-e", str(ROOT), f"mcp=={mcp}", *dependency_group("test")]
    run("uv", "pip", "install", "--quiet", "--python", str(python), *requirements, external=True)
    return str(python)


# The FastMCP clients without tasks (tests/interop/test_plain_handoff_peers.py, the plain hand-off):
# FastMCP pins its mcp major (3.x: 1.x, 4.x: 2.x), so each runs in its own environment, made from
# tests/interop/requirements-fastmcp<N>.txt and named to the tests in these variables. Only fastmcp
# is installed there: the peer script imports nothing of this repository.
FASTMCP_PEERS = {"3": "MCP_TASKS_COMPAT_FASTMCP3_PYTHON", "4": "MCP_TASKS_COMPAT_FASTMCP4_PYTHON"}


def fastmcp_peer_pythons(session: nox.Session) -> dict[str, str]:
    """The FastMCP peers' environments (uv, in the session's tmp folder; reused by ``nox -r``)."""
    pythons: dict[str, str] = {}
    for major, variable in FASTMCP_PEERS.items():
        folder = Path(session.create_tmp()).resolve() / f"fastmcp{major}"
        python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        run = session.run_install if python.exists() else session.run
        base = session_python(session)
        run("uv", "venv", "--quiet", "--allow-existing", "--python", base, str(folder), external=True)
        requirements = str(ROOT / "tests" / "interop" / f"requirements-fastmcp{major}.txt")
        run("uv", "pip", "install", "--quiet", "--python", str(python), "-r", requirements, external=True)
        pythons[variable] = str(python)
    return pythons


def ensure_redis_server(session: nox.Session) -> None:
    """The Redis store's tests run against a real redis-server: install Debian's package if it is missing.

    Only as root with apt-get (CI containers); elsewhere those tests skip and say how to install it.
    """
    if shutil.which("redis-server"):
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        session.run("apt-get", "update", "-q", external=True)
        session.run("apt-get", "install", "-y", "-q", "redis-server", external=True)
    else:
        session.log("redis-server is not installed (apt-get install redis-server): the Redis tests will skip")


def ensure_postgresql(session: nox.Session) -> None:
    """The PostgreSQL store's tests start a throwaway cluster (``initdb`` + ``pg_ctl``, run as the
    ``postgres`` system user when root): install Debian's ``postgresql`` package if it is missing.

    Only as root with apt-get (CI containers); elsewhere those tests skip and say how to install it.
    """
    if shutil.which("pg_config") and glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        session.run("apt-get", "update", "-q", external=True)
        session.run("apt-get", "install", "-y", "-q", "postgresql", external=True)
    else:
        session.log("PostgreSQL is not installed (apt-get install postgresql): its tests will skip")


FAKETIME_LIBRARIES = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
)
"""Where Debian's ``faketime`` package (or a local build) puts the library tests/chaos preloads."""


def ensure_faketime(session: nox.Session) -> None:
    """The chaos scenarios' clock skew runs a replica under libfaketime: install Debian's package
    if it is missing. Only as root with apt-get; elsewhere the skew cases skip and say so."""
    if any(glob.glob(pattern) for pattern in FAKETIME_LIBRARIES):
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        session.run("apt-get", "update", "-q", external=True)
        session.run("apt-get", "install", "-y", "-q", "faketime", external=True)
    else:
        session.log("libfaketime is not installed (apt-get install faketime): the clock-skew cases will skip")


# The Python axis: the floor mcp runs on the floor Python (3.10) and the newest mcp on the newest
# Python (3.13); the other two SDK versions run on the interpreter that runs nox (3.11 on the CI
# image). The interpreters are found on this machine (PATH, pyenv, uv's managed ones), never
# downloaded; when one is missing, that SDK version runs on nox's own interpreter and the session
# says so. tools/support_matrix.py lists this table and pyproject's classifiers name these versions
# and DEFAULT_PYTHON. Keeping the axis inside `tests` keeps CI at four suite runs.
PYTHON_AXIS = {"3.10": "1.23.0", "3.13": "2.3.0"}
DEFAULT_PYTHON = "3.11"


def find_interpreter(version: str) -> str | None:
    """An interpreter of ``version`` that runs (a pyenv shim for an inactive version does not)."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(str(p) for p in pyenv_root.glob(f"versions/{version}.*/bin/python{version}"))
    uv_root = Path(
        os.environ.get("UV_PYTHON_INSTALL_DIR", Path.home() / ".local" / "share" / "uv" / "python")
    )
    candidates += sorted(str(p) for p in uv_root.glob(f"cpython-{version}.*/bin/python{version}"))
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    for candidate in candidates:
        if not candidate:
            continue
        try:
            found = subprocess.run([candidate, "-c", probe], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode == 0 and found.stdout.strip() == version:
            return candidate
    return None


def _test_matrix() -> list[nox.param]:
    """One param per SDK version: (interpreter or None = nox's own, mcp, the Python asked for or "")."""
    python_of = {mcp: version for version, mcp in PYTHON_AXIS.items()}
    params: list[nox.param] = []
    for mcp in MCP_VERSIONS:
        version = python_of.get(mcp, "")
        interpreter = find_interpreter(version) if version else None
        params.append(nox.param(interpreter, mcp, version, id=f"mcp='{mcp}'"))
    return params


@nox.session
@nox.parametrize(("python", "mcp", "python_axis"), _test_matrix())
def tests(session: nox.Session, mcp: str, python_axis: str) -> None:
    """The test suite against one SDK version, cross-major pairs included; prints what it tests first."""
    if python_axis and session.python is None:
        session.warn(
            f"no Python {python_axis} on this machine (looked on PATH, in pyenv's and uv's folders; "
            f"`uv python install {python_axis}` needs network access): mcp {mcp} runs on "
            f"{platform.python_version()} instead, and the Python {python_axis} leg is not run"
        )
    run_suite(session, mcp)


def run_suite(session: nox.Session, mcp: str) -> None:
    install_with_sdk(session, mcp, "test")
    ensure_redis_server(session)
    ensure_postgresql(session)
    ensure_faketime(session)
    peer = peer_python(session, PEER_OF[mcp])
    session.run("python", "-m", "mcp_tasks_compat", "info")
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    env = {"HYPOTHESIS_PROFILE": profile, PEER_ENV: peer, **fastmcp_peer_pythons(session)}
    # Most tests wait on processes and sockets: two workers per pair of cores cut the wall time by
    # about a quarter on the 2-core CI machine (PYTEST_WORKERS=0 runs in one process).
    workers = os.environ.get("PYTEST_WORKERS", str(min(4, os.cpu_count() or 1)))
    parallel = ["-n", workers] if workers not in ("0", "1") else []
    # The chaos scenarios' fast cases (about a minute of real replicas) run on the newest 1.x and
    # 2.x, where `nox -s chaos` plays them in full; the floors run everything else.
    floors = [] if mcp in NEWEST_OF_EACH_MAJOR else ["--ignore", "tests/chaos/test_chaos.py"]
    session.run("python", "-m", "pytest", *parallel, *floors, *session.posargs, env=env)


# The generated part of docs/interop.md (opt-in): every client x server of the newest 1.x and 2.x.
@nox.session(name="interop_docs")
def interop_docs(session: nox.Session) -> None:
    """Run the cross-major matrix (mcp 1.30.0 and 2.3.0, each as client and server) into docs/interop.md."""
    install_with_sdk(session, "2.3.0", "test")
    peer = peer_python(session, "1.30.0")
    pythons = ["--python", peer, "--python", session_python(session)]
    session.run("python", "-m", "tests.interop.crossmajor", "docs", *pythons, "--write", *session.posargs)


# Benchmarks: opt-in (`nox -s bench`, not in nox.options.sessions). One environment per SDK major,
# each with that major's peer pinned in benchmarks/requirements-mcp<major>.txt (bench-only, never a
# runtime dependency); after each run, every run JSON present is merged into the outputs.
BENCH_MAJORS = ["1", "2"]


@nox.session
@nox.parametrize("major", BENCH_MAJORS)
def bench(session: nox.Session, major: str) -> None:
    """Overhead, latency, throughput, capacity (next to the peers), task stores and task runs on
    workers; writes docs/benchmarks.md.

    Arguments after ``--`` go to ``python -m benchmarks run`` (e.g. ``--only capacity``). The stores
    section's Redis rows and the workers section need redis-server (installed here as root, as for
    the tests; else skipped, with a note).
    """
    session.install("-e", ".", "-r", f"benchmarks/requirements-mcp{major}.txt")
    ensure_redis_server(session)
    out = ROOT / "benchmarks" / "results" / f"bench-mcp{major}.json"
    session.run("python", "-m", "benchmarks", "run", "--profile", "full", "--out", str(out), *session.posargs)
    runs = sorted(str(path) for path in out.parent.glob("bench-mcp*.json"))
    session.run("python", "-m", "benchmarks", "report", *runs, "--docs", str(ROOT / "docs" / "benchmarks.md"))


# Agent frameworks (opt-in: `nox -s integrations`): docs/integrations.md's recipes against the
# frameworks from PyPI (no model: each framework's MCP tool objects are called directly), checked on
# the server's side (integrations/render_server.py --records). Each framework runs on the newest mcp
# of each major its pins admit, so one leg per mcp release, with the frameworks that release fits:
# google-adk 2.13 and openai-agents 0.24 take mcp 1.x and 2.x; pydantic-ai-slim 2.68 mcp 1.x and
# (through fastmcp 4) 2.x >= 2.3; langchain-mcp-adapters 0.3.2 mcp < 2; strands-agents 1.62 mcp < 2.2.
INTEGRATION_TESTS = {
    "google-adk==2.13.0": "integrations/test_google_adk.py",
    "openai-agents==0.24.0": "integrations/test_openai_agents.py",
    "pydantic-ai-slim[mcp]==2.68.0": "integrations/test_pydantic_ai.py",
    "langchain-mcp-adapters==0.3.2": "integrations/test_langchain_mcp_adapters.py",
    "strands-agents==1.62.0": "integrations/test_strands_agents.py",
}
INTEGRATION_LEGS = {
    "1.30.0": list(INTEGRATION_TESTS),
    "2.3.0": ["google-adk==2.13.0", "openai-agents==0.24.0", "pydantic-ai-slim[mcp]==2.68.0"],
    "2.1.1": ["strands-agents==1.62.0"],
}

JOURNAL_RECIPE_FRAMEWORKS = {"langchain-mcp-adapters==0.3.2", "strands-agents==1.62.0"}
"""The frameworks of integrations/test_journal_recipes.py (the journal across an agent's restart)."""


@nox.session
@nox.parametrize("mcp", list(INTEGRATION_LEGS))
def integrations(session: nox.Session, mcp: str) -> None:
    """integrations/: the framework recipes on one mcp release (the frameworks whose pins admit it)."""
    frameworks = INTEGRATION_LEGS[mcp]
    install_with_sdk(session, mcp, "test")
    session.install(*frameworks, f"mcp=={mcp}")
    tests = [INTEGRATION_TESTS[framework] for framework in frameworks]
    if set(frameworks) >= JOURNAL_RECIPE_FRAMEWORKS:  # the journal recipes (docs/integrations.md)
        tests.append("integrations/test_journal_recipes.py")
    session.run("python", "-m", "pytest", *tests, "-p", "no:cacheprovider", "-rxXs", *session.posargs)


# Interoperability (opt-in: `tests` already runs tests/interop in every SDK session). This session
# runs only tests/interop, for working on the peers; the TypeScript packages come from
# tests/interop/ts/package-lock.json via `npm ci`, run by tests/interop/peers.py when needed, and
# the FastMCP peers' environments from tests/interop/requirements-fastmcp*.txt (as in `tests`).
@nox.session
@nox.parametrize("mcp", MCP_VERSIONS)
def interop(session: nox.Session, mcp: str) -> None:
    """tests/interop (the TypeScript peers; see docs/interop.md) against one SDK version."""
    install_with_sdk(session, mcp, "test")
    env = fastmcp_peer_pythons(session)
    session.run("python", "-m", "pytest", "tests/interop", *session.posargs, env=env)


# The official MCP conformance suite (@modelcontextprotocol/conformance) against tests/conformance/
# server.py: the suite and the Node 22 it needs come from tests/conformance/package-lock.json
# (`npm ci`, nothing global); the scenarios, the table and the verdict are tests/conformance/run.py's.
CONFORMANCE_DIR = ROOT / "tests" / "conformance"


def ensure_npm(session: nox.Session) -> str:
    """npm (any Node it runs on) fetches the pinned suite and Node 22: install Debian's if it is missing.

    Only as root with apt-get (CI containers); elsewhere the session stops and says what to install.
    """
    if (
        shutil.which("npm") is None
        and shutil.which("apt-get")
        and hasattr(os, "geteuid")
        and os.geteuid() == 0
    ):
        session.run("apt-get", "update", "-q", external=True)
        session.run("apt-get", "install", "-y", "-q", "nodejs", "npm", external=True)
    npm = shutil.which("npm")
    if npm is None:
        session.error(
            "the conformance session needs npm (e.g. apt-get install npm); it installs its own Node 22"
        )
    return npm


@nox.session
def conformance(session: nox.Session) -> None:
    """The suite's ten Tasks scenarios and its generic 2026-07-28 server scenarios, on mcp 2.3.0.

    Results (the suite's JSON) go to tests/conformance/results/; fails on any failed check.
    Arguments after ``--`` go to run.py (e.g. ``--scenario tasks-lifecycle``).
    """
    install_with_sdk(session, "2.3.0", "test")
    npm = ensure_npm(session)
    with session.chdir(CONFORMANCE_DIR):
        session.run(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", external=True)
    session.run("python", str(CONFORMANCE_DIR / "run.py"), *session.posargs)


# The release as a user installs it (part of the default run). `uv build` builds the sdist with
# pyproject's build backend (hatchling), then the wheel FROM that sdist, so a file the sdist drops
# is missing from the wheel too; twine and tools/check_dist.py check both (metadata against
# pyproject.toml, files against the package folder). Then the wheel, never this checkout, goes into
# a fresh environment per mcp major, with its extras, and runs from an empty folder outside the
# checkout: `info`, the demo in each dialect that major speaks, and the testing kit's smoke test.
PACKAGE_SDK_VERSIONS = ["1.30.0", "2.3.0"]
PACKAGE_EXTRAS = "http,redis,postgres"
DEMO_DIALECTS = {"1": ["2025-11-25"], "2": ["2025-11-25", "2026-07-28"]}
"""The task dialects each mcp major speaks (docs/dialects.md): the demo runs once in each."""


@nox.session
def package(session: nox.Session) -> None:
    """Build the sdist and the wheel, check them, and run the installed wheel on mcp 1.30.0 and 2.3.0."""
    session.install(*dependency_group("package"))
    tmp = Path(session.create_tmp()).resolve()
    dist = tmp / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("uv", "build", "--out-dir", str(dist), str(ROOT), external=True)
    built = sorted(str(path) for pattern in ("*.tar.gz", "*.whl") for path in dist.glob(pattern))
    session.run("twine", "check", "--strict", *built)
    session.run("python", "-m", "tools.check_dist", str(dist))
    (wheel,) = dist.glob("*.whl")
    for mcp in PACKAGE_SDK_VERSIONS:
        run_installed_wheel(session, wheel, mcp, tmp)


def run_installed_wheel(session: nox.Session, wheel: Path, mcp: str, tmp: Path) -> None:
    """A new environment holding only the wheel (with extras), ``mcp==<mcp>`` and pytest; run from outside.

    The commands run in a temporary folder outside the checkout (so no pyproject.toml or conftest.py
    of ours is found either), with ``python -I``: the working folder, PYTHONPATH and the user's
    site-packages stay off ``sys.path``. The smoke test fails if the library came from compat/.
    """
    environment = tmp / f"wheel-mcp{mcp}"
    shutil.rmtree(environment, ignore_errors=True)
    session.run("uv", "venv", "--quiet", "--python", session_python(session), str(environment), external=True)
    scripts = environment / ("Scripts" if os.name == "nt" else "bin")
    python = str(scripts / ("python.exe" if os.name == "nt" else "python"))
    requirements = [f"{wheel}[{PACKAGE_EXTRAS}]", f"mcp=={mcp}", "pytest>=8"]
    session.run("uv", "pip", "install", "--quiet", "--python", python, *requirements, external=True)
    with tempfile.TemporaryDirectory(prefix=f"wheel-mcp{mcp}-") as workdir, session.chdir(workdir):
        shutil.copyfile(TOOLS / "wheel_smoke.py", Path(workdir) / "test_wheel_smoke.py")
        session.run(python, "-I", "-m", "mcp_tasks_compat", "info", external=True)
        command = str(scripts / "mcp-tasks-compat")  # the console script the wheel installs
        for dialect in DEMO_DIALECTS[mcp.split(".")[0]]:
            demo = ["demo", "--dialect", dialect, "--seconds", "1", "--steps", "2"]
            session.run(command, *demo, external=True)
        session.run(
            python, "-I", "-m", "pytest", "test_wheel_smoke.py", "-q", "-p", "no:cacheprovider",
            env={"MCP_TASKS_COMPAT_SOURCE_PACKAGE": str(PACKAGE)}, external=True,
        )  # fmt: skip


# Hostile input and long runs (opt-in, not in nox.options.sessions). A small slice of tests/fuzz
# runs in every `tests` session; these sessions run the long versions on the newest 1.x and 2.x.
HARDENING_VERSIONS = NEWEST_OF_EACH_MAJOR


@nox.session
@nox.parametrize("mcp", HARDENING_VERSIONS)
def fuzz(session: nox.Session, mcp: str) -> None:
    """Hypothesis-driven hostile JSON-RPC at our servers, every dialect, stdio and HTTP (docs/reliability.md).

    ``FUZZ_EXAMPLES`` (default 200) cases per transport and dialect, each stopped after
    ``FUZZ_SECONDS`` (default 120); prints tried / unexpected per run.
    """
    install_with_sdk(session, mcp, "test")
    env = {
        "FUZZ_EXAMPLES": os.environ.get("FUZZ_EXAMPLES", "200"),
        "FUZZ_SECONDS": os.environ.get("FUZZ_SECONDS", "120"),
    }
    session.run(
        "python", "-m", "pytest", "tests/fuzz", "-q", "-s", "-p", "no:randomly",
        "-W", "ignore::hypothesis.errors.HypothesisWarning", *session.posargs, env=env,
    )  # fmt: skip


@nox.session
@nox.parametrize("mcp", HARDENING_VERSIONS)
def soak(session: nox.Session, mcp: str) -> None:
    """N clients x M tasks per wave over HTTP, with cancels, input requests and TTL expiry; prints figures.

    Arguments after ``--`` go to ``python -m tests.soak.soak`` (``--clients``, ``--tasks``, ``--waves``).
    """
    install_with_sdk(session, mcp, "test")
    session.run("python", "-m", "tests.soak.soak", *session.posargs)


@nox.session
@nox.parametrize("mcp", HARDENING_VERSIONS)
def chaos(session: nox.Session, mcp: str) -> None:
    """Jepsen-style faults on real replicas, a real redis-server and a SQLite file; prints the table.

    Pause (SIGSTOP past the lease), partition (a TCP relay to Redis cut and healed), clock skew
    (+-30 s, libfaketime), kill -9 during a claim, a Redis outage longer than the lease; each
    counts overlapping runs, stale outcomes, lost and stuck tasks (docs/reliability.md, "Chaos").
    Exits non-zero when a guarantee is broken. Arguments after ``--`` go to ``python -m
    tests.chaos`` (``--only pause``, ``--store sqlite``, ``--tempo fast``, ``--markdown``).
    """
    install_with_sdk(session, mcp, "test")
    ensure_redis_server(session)
    ensure_faketime(session)
    session.run("python", "-m", "tests.chaos", *session.posargs)
