"""The one place that knows which ``mcp`` is installed and what it can do.

Detection is lazy (first use, never at ``import mcp_tasks_compat``) and cached.  It reads the
distribution version (importlib.metadata + packaging, pre-releases included), then probes exactly
the seams each adapter needs, and cross-checks the two: a 2.x version whose modules look like 1.x
(or the reverse) is refused rather than guessed at.

Every other module asks :func:`sdk_info` or :func:`refuse_unsupported`; nothing else compares
versions.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from .dialects import DIALECT_2025_11_25, DIALECT_2026_07_28, Dialect
from .errors import UnsupportedOptIn, UnsupportedOptInError, UnsupportedSdkError

__all__ = [
    "FEATURES",
    "OPT_INS",
    "SUPPORTED_RANGE",
    "SUPPORTED_SPEC",
    "Feature",
    "OptIn",
    "SdkInfo",
    "evaluate",
    "probe_features",
    "refuse_unsupported",
    "release_major",
    "sdk_info",
]

SUPPORTED_SPEC: Final = ">=1.23.0,<3"
"""mcp 1.23.0 is the first release with the experimental tasks API; 3.x is not known yet.

Kept equal to the ``mcp`` requirement in pyproject.toml (a test checks). Messages quote this text
because ``str(SpecifierSet)`` reorders it to ``<3,>=1.23.0``.
"""
SUPPORTED_RANGE: Final = SpecifierSet(SUPPORTED_SPEC, prereleases=True)

FIX_ANY: Final = "pip install 'mcp>=1.23,<3'"
FIX_V2: Final = "pip install 'mcp>=2,<3'"

Side = Literal["client", "server"]


@dataclass(frozen=True)
class Feature:
    """One seam an adapter relies on: ``module`` must import and ``attribute`` (dotted) must exist."""

    name: str
    major: int
    module: str
    attribute: str
    private: bool = False


FEATURES: Final[tuple[Feature, ...]] = (
    # mcp 1.x: the experimental tasks types and the server/client objects the adapters use.
    Feature("v1.task_types", 1, "mcp.types", "CreateTaskResult"),
    Feature("v1.tool_execution", 1, "mcp.types", "ToolExecution"),
    Feature("v1.client_experimental", 1, "mcp.client.experimental.tasks", "ExperimentalClientFeatures"),
    Feature("v1.lowlevel_server", 1, "mcp.server.lowlevel.server", "Server"),
    Feature("v1.fastmcp", 1, "mcp.server.fastmcp", "FastMCP"),
    # mcp 2.x: the public extension seams ...
    Feature("v2.client_extension", 2, "mcp.client.extension", "ResultClaim"),
    Feature("v2.client_discover", 2, "mcp.client.session", "ClientSession.discover"),
    Feature("v2.server_extension", 2, "mcp.server.extension", "Extension.intercept_tool_call"),
    Feature("v2.method_binding", 2, "mcp.server.extension", "MethodBinding"),
    Feature("v2.mcpserver", 2, "mcp.server.mcpserver", "MCPServer"),
    Feature("v2.name_param", 2, "mcp_types", "Request.name_param"),
    # Multi-round-trip input (SEP-2322): a tools/call answered input_required is answered through
    # the session's callback table (call_tool's input_responses= / request_state= came with it).
    Feature("v2.input_rounds", 2, "mcp.client.session", "ClientSession.dispatch_input_request"),
    # ... and the narrow private seams the 2025-11-25 dialect needs on 2.x (see docs/architecture.md).
    Feature("v2.raw_request", 2, "mcp.shared.dispatcher", "Dispatcher.send_raw_request", private=True),
    Feature(
        "v2.server_middleware",
        2,
        "mcp.server.runner",
        "ServerRunner._compose_server_middleware",
        private=True,
    ),
    # Task push (2026-07-28 notifications/tasks on subscriptions/listen): the request and ack
    # types. Absent, both sides poll; the server serves it through v2.server_middleware.
    Feature("v2.listen", 2, "mcp_types", "SubscriptionsAcknowledgedNotification", private=True),
)


@dataclass(frozen=True)
class OptIn:
    """An opt-in that only some installs can honour; ``needs`` are feature names."""

    name: str
    side: Side | Literal["both"]
    needs: tuple[str, ...]
    supported_by: str
    fix: str


OPT_INS: Final[tuple[OptIn, ...]] = (
    OptIn(
        "dialect='2026-07-28'", "both", ("v2.client_extension",), "mcp>=2,<3 (the Tasks extension)", FIX_V2
    ),
    OptIn(
        "extensions=", "client", ("v2.client_extension",), "mcp>=2,<3 (ClientSession extension seams)", FIX_V2
    ),
    OptIn(
        "result_claims=",
        "client",
        ("v2.client_extension",),
        "mcp>=2,<3 (ClientSession extension seams)",
        FIX_V2,
    ),
    OptIn(
        "notification_bindings=",
        "client",
        ("v2.client_extension",),
        "mcp>=2,<3 (ClientSession extension seams)",
        FIX_V2,
    ),
    OptIn("MCPServer", "server", ("v2.mcpserver",), "mcp>=2,<3", FIX_V2),
    OptIn(
        "TaskClientSession.extension()",
        "client",
        ("v2.client_extension",),
        "mcp>=2,<3 (mcp.Client and its ClientExtension seam)",
        FIX_V2,
    ),
)


@dataclass(frozen=True)
class SdkInfo:
    """What the installed ``mcp`` is and what this library can do with it (:func:`sdk_info`'s answer).

    Example::

        info = sdk_info()
        if "2026-07-28" not in info.client_dialects:  # mcp 1.x: 2025-11-25 only
            print(f"mcp {info.mcp_version} (major {info.major}): no Tasks extension here")
        print(info.render())  # what ``python -m mcp_tasks_compat info`` prints
    """

    mcp_version: str
    major: int
    client_dialects: tuple[Dialect, ...]
    server_dialects: tuple[Dialect, ...]
    opt_ins: tuple[str, ...]
    features: tuple[str, ...]
    python: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["client_dialects"] = list(self.client_dialects)
        data["server_dialects"] = list(self.server_dialects)
        data["opt_ins"] = list(self.opt_ins)
        data["features"] = list(self.features)
        return data

    def render(self) -> str:
        """Human-readable report, as ``python -m mcp_tasks_compat info`` prints it."""
        from ._version import __version__

        rows = [
            ("mcp-tasks-compat", __version__),
            ("mcp", f"{self.mcp_version} (major {self.major})"),
            ("python", self.python),
            ("client dialects", ", ".join(self.client_dialects) or "none"),
            ("server dialects", ", ".join(self.server_dialects) or "none"),
            ("opt-ins available", ", ".join(self.opt_ins) or "none"),
            ("seams found", ", ".join(self.features) or "none"),
        ]
        width = max(len(key) for key, _ in rows)
        return "\n".join(f"{key:<{width}}  {value}" for key, value in rows)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=True)


def _has_attribute(root: object, dotted: str) -> bool:
    current = root
    for part in dotted.split("."):
        if not hasattr(current, part):
            return False
        current = getattr(current, part)
    return True


def probe_features(import_module: Callable[[str], object] = importlib.import_module) -> frozenset[str]:
    """Names of the :data:`FEATURES` present in the installed SDK."""
    found: set[str] = set()
    for feature in FEATURES:
        try:
            module = import_module(feature.module)
        except Exception:  # a broken or absent module is simply "not found"
            continue
        if _has_attribute(module, feature.attribute):
            found.add(feature.name)
    return frozenset(found)


def _major_of(features: Iterable[str]) -> int | None:
    """The major the modules look like, judged by the seams found."""
    names = set(features)
    if "v2.client_extension" in names or "v2.mcpserver" in names:
        return 2
    if "v1.task_types" in names and "v1.lowlevel_server" in names:
        return 1
    return None


def evaluate(version_text: str | None, features: frozenset[str]) -> SdkInfo:
    """Turn a distribution version and the probed seams into :class:`SdkInfo`, or refuse.

    Pure, so tests can fake any version (``1.22.0``, ``2.0.0rc1``, ``3.0.0``...).
    """
    if version_text is None:
        raise UnsupportedSdkError(
            f"the 'mcp' package is not installed; mcp-tasks-compat needs mcp{SUPPORTED_SPEC}. fix: {FIX_ANY}"
        )
    try:
        version = Version(version_text)
    except InvalidVersion:
        raise UnsupportedSdkError(
            f"installed mcp has an unparsable version {version_text!r}; "
            f"needs mcp{SUPPORTED_SPEC}. fix: {FIX_ANY}"
        ) from None
    if version not in SUPPORTED_RANGE:
        if version.major >= 3:
            why = f"mcp {version} is a major this release of mcp-tasks-compat does not know"
            fix = FIX_V2
        else:
            why = f"mcp {version} predates the experimental tasks API (first released in mcp 1.23.0)"
            fix = FIX_ANY
        raise UnsupportedSdkError(f"{why}; supported: mcp{SUPPORTED_SPEC}. fix: {fix}")
    looks_like = _major_of(features)
    if looks_like is None:
        raise UnsupportedSdkError(
            f"installed metadata says mcp {version}, but the modules have none of the seams either adapter "
            f"needs (found: {sorted(features) or 'nothing'}); the install looks broken. "
            f"fix: pip install --force-reinstall 'mcp=={version}'"
        )
    if looks_like != version.major:
        raise UnsupportedSdkError(
            f"installed metadata says mcp {version} (major {version.major}), but the importable 'mcp' "
            f"modules look like major {looks_like}; two installs are probably mixed on sys.path. "
            f"fix: pip install --force-reinstall 'mcp=={version}'"
        )
    missing = [
        f.name for f in FEATURES if f.major == version.major and not f.private and f.name not in features
    ]
    if missing:
        raise UnsupportedSdkError(
            f"mcp {version} lacks seams mcp-tasks-compat needs: {', '.join(missing)}; "
            f"supported: mcp{SUPPORTED_SPEC}. fix: {FIX_ANY}"
        )
    client: list[Dialect] = []
    server: list[Dialect] = []
    if version.major == 1:
        client.append(DIALECT_2025_11_25)
        server.append(DIALECT_2025_11_25)
    else:
        if "v2.raw_request" in features:
            client.append(DIALECT_2025_11_25)
        if "v2.server_middleware" in features:
            server.append(DIALECT_2025_11_25)
        client.append(DIALECT_2026_07_28)
        server.append(DIALECT_2026_07_28)
    available = tuple(o.name for o in OPT_INS if all(need in features for need in o.needs))
    return SdkInfo(
        mcp_version=str(version),
        major=version.major,
        client_dialects=tuple(client),
        server_dialects=tuple(server),
        opt_ins=available,
        features=tuple(sorted(features)),
        python=".".join(map(str, sys.version_info[:3])),
    )


def release_major(version_text: str) -> int | None:
    """The major of an mcp release (``"1.30.0"`` -> ``1``; ``None`` if it is no version), so that a
    module that must tell majors apart (an install hint) asks here instead of parsing versions."""
    try:
        return Version(version_text).major
    except InvalidVersion:
        return None


def _installed_version() -> str | None:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def sdk_info() -> SdkInfo:
    """Detect the installed SDK once and cache the answer; raises ``UnsupportedSdkError``.

    Example::

        from mcp_tasks_compat import sdk_info

        print(sdk_info().mcp_version, sdk_info().server_dialects)  # e.g. 2.3.0 ('2025-11-25', '2026-07-28')
    """
    version = _installed_version()
    features = probe_features() if version is not None else frozenset[str]()
    return evaluate(version, features)


def refuse_unsupported(asked: Iterable[str], *, side: Side, info: SdkInfo | None = None) -> None:
    """Raise one ``UnsupportedOptInError`` listing every opt-in in ``asked`` this install cannot honour.

    ``asked`` holds :data:`OPT_INS` names, plus ``"dialect='2025-11-25'"`` which every install
    speaks on the client and the server unless the probed 2.x private seam is missing.
    """
    info = info or sdk_info()
    table: Mapping[str, OptIn] = {o.name: o for o in OPT_INS if o.side in (side, "both")}
    refused: list[UnsupportedOptIn] = []
    for name in asked:
        if name == "dialect='2025-11-25'":
            dialects = info.client_dialects if side == "client" else info.server_dialects
            if DIALECT_2025_11_25 not in dialects:
                seam = "v2.raw_request" if side == "client" else "v2.server_middleware"
                refused.append(
                    UnsupportedOptIn(
                        asked=f"{name} on the {side}",
                        supported_by=f"mcp 1.x, or a 2.x release that still has the private seam {seam}",
                        fix="pip install 'mcp>=1.23,<2' (or report the 2.x release that removed the seam)",
                    )
                )
            continue
        option = table.get(name)
        if option is None:
            raise ValueError(f"unknown opt-in {name!r} for the {side}")
        if name not in info.opt_ins:
            refused.append(UnsupportedOptIn(asked=name, supported_by=option.supported_by, fix=option.fix))
    if refused:
        raise UnsupportedOptInError(refused, installed=f"mcp {info.mcp_version}")
