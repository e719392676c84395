"""SDK detection and the loud refusals, with the installed version faked; error codes and their docs anchors.

Messages are compared in full: they are the user interface of a refusal (what was asked, what is
installed, what would support it, the exact fix, the docs link).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from mcp_tasks_compat import _detect
from mcp_tasks_compat._detect import (
    FEATURES,
    OPT_INS,
    SdkInfo,
    evaluate,
    probe_features,
    refuse_unsupported,
    sdk_info,
)
from mcp_tasks_compat.errors import (
    DOCS_URL,
    CompatError,
    UnsupportedOptIn,
    UnsupportedOptInError,
    UnsupportedSdkError,
)

ROOT = Path(__file__).resolve().parents[1]
SEE_SDK = f"\n  see {DOCS_URL}#unsupported-sdk"
SEE_OPT_IN = f"\n  see {DOCS_URL}#unsupported-opt-in"
PYTHON = ".".join(map(str, sys.version_info[:3]))


def features_of(major: int, *, private: bool = True) -> frozenset[str]:
    return frozenset(f.name for f in FEATURES if f.major == major and (private or not f.private))


V1 = features_of(1)
V2 = features_of(2)


def refusal(version: str | None, features: frozenset[str]) -> str:
    with pytest.raises(UnsupportedSdkError) as caught:
        evaluate(version, features)
    assert isinstance(caught.value, ImportError)  # "cannot use this install", like a failed import
    return str(caught.value)


# --- refusals of the SDK itself -----------------------------------------------------------------


def test_missing_mcp() -> None:
    assert refusal(None, frozenset()) == (
        "the 'mcp' package is not installed; mcp-tasks-compat needs mcp>=1.23.0,<3. "
        "fix: pip install 'mcp>=1.23,<3'" + SEE_SDK
    )


def test_mcp_before_the_tasks_api() -> None:
    assert refusal("1.22.0", V1) == (
        "mcp 1.22.0 predates the experimental tasks API (first released in mcp 1.23.0); "
        "supported: mcp>=1.23.0,<3. fix: pip install 'mcp>=1.23,<3'" + SEE_SDK
    )


def test_an_unknown_future_major() -> None:
    assert refusal("3.0.0", V2) == (
        "mcp 3.0.0 is a major this release of mcp-tasks-compat does not know; "
        "supported: mcp>=1.23.0,<3. fix: pip install 'mcp>=2,<3'" + SEE_SDK
    )


def test_a_garbage_version() -> None:
    assert refusal("not.a.version!", V1) == (
        "installed mcp has an unparsable version 'not.a.version!'; needs mcp>=1.23.0,<3. "
        "fix: pip install 'mcp>=1.23,<3'" + SEE_SDK
    )


def test_metadata_says_2x_but_the_modules_are_1x() -> None:
    assert refusal("2.3.0", V1) == (
        "installed metadata says mcp 2.3.0 (major 2), but the importable 'mcp' modules look like major 1; "
        "two installs are probably mixed on sys.path. fix: pip install --force-reinstall 'mcp==2.3.0'"
        + SEE_SDK
    )


def test_metadata_says_1x_but_the_modules_are_2x() -> None:
    assert refusal("1.30.0", V2) == (
        "installed metadata says mcp 1.30.0 (major 1), but the importable 'mcp' modules look like major 2; "
        "two installs are probably mixed on sys.path. fix: pip install --force-reinstall 'mcp==1.30.0'"
        + SEE_SDK
    )


def test_modules_with_no_seams_at_all() -> None:
    assert refusal("1.30.0", frozenset()) == (
        "installed metadata says mcp 1.30.0, but the modules have none of the seams either adapter needs "
        "(found: nothing); the install looks broken. fix: pip install --force-reinstall 'mcp==1.30.0'"
        + SEE_SDK
    )


def test_a_release_that_lost_a_public_seam() -> None:
    assert refusal("1.30.0", V1 - {"v1.fastmcp", "v1.client_experimental"}) == (
        "mcp 1.30.0 lacks seams mcp-tasks-compat needs: v1.client_experimental, v1.fastmcp; "
        "supported: mcp>=1.23.0,<3. fix: pip install 'mcp>=1.23,<3'" + SEE_SDK
    )


# --- what supported installs can do -------------------------------------------------------------


def test_mcp_1_30_speaks_2025_11_25_on_both_sides_and_offers_no_2x_opt_in() -> None:
    info = evaluate("1.30.0", V1)
    assert info == SdkInfo(
        mcp_version="1.30.0",
        major=1,
        client_dialects=("2025-11-25",),
        server_dialects=("2025-11-25",),
        opt_ins=(),
        features=tuple(sorted(V1)),
        python=PYTHON,
    )


def test_a_2x_release_candidate_is_accepted_and_speaks_both_dialects() -> None:
    info = evaluate("2.0.0rc1", V2)
    assert info.mcp_version == "2.0.0rc1"
    assert info.major == 2
    assert info.client_dialects == ("2025-11-25", "2026-07-28")
    assert info.server_dialects == ("2025-11-25", "2026-07-28")
    assert info.opt_ins == tuple(option.name for option in OPT_INS)


def test_a_2x_without_the_private_seams_drops_only_the_2025_dialect() -> None:
    info = evaluate("2.3.0", features_of(2, private=False))
    assert info.client_dialects == ("2026-07-28",)
    assert info.server_dialects == ("2026-07-28",)
    with pytest.raises(UnsupportedOptInError) as caught:
        refuse_unsupported(["dialect='2025-11-25'"], side="server", info=info)
    assert str(caught.value) == (
        "cannot honour 1 opt-in(s) with mcp 2.3.0:\n"
        "  - dialect='2025-11-25' on the server: needs mcp 1.x, or a 2.x release that still has the private "
        "seam v2.server_middleware; fix: pip install 'mcp>=1.23,<2' (or report the 2.x release that removed "
        "the seam)" + SEE_OPT_IN
    )


# --- refusals of opt-ins ------------------------------------------------------------------------


def test_every_refused_client_opt_in_is_listed_in_one_error() -> None:
    info = evaluate("1.30.0", V1)
    asked = [
        "dialect='2025-11-25'",
        "dialect='2026-07-28'",
        "extensions=",
        "result_claims=",
        "notification_bindings=",
    ]
    with pytest.raises(UnsupportedOptInError) as caught:
        refuse_unsupported(asked, side="client", info=info)
    error = caught.value
    assert str(error) == (
        "cannot honour 4 opt-in(s) with mcp 1.30.0:\n"
        "  - dialect='2026-07-28': needs mcp>=2,<3 (the Tasks extension); fix: pip install 'mcp>=2,<3'\n"
        "  - extensions=: needs mcp>=2,<3 (ClientSession extension seams); fix: pip install 'mcp>=2,<3'\n"
        "  - result_claims=: needs mcp>=2,<3 (ClientSession extension seams); fix: pip install 'mcp>=2,<3'\n"
        "  - notification_bindings=: needs mcp>=2,<3 (ClientSession extension seams); "
        "fix: pip install 'mcp>=2,<3'" + SEE_OPT_IN
    )
    assert error.installed == "mcp 1.30.0"
    assert [item.asked for item in error.refused] == asked[1:]
    assert all(isinstance(item, UnsupportedOptIn) for item in error.refused)
    assert isinstance(error, ValueError)


def test_refused_server_opt_ins() -> None:
    with pytest.raises(UnsupportedOptInError) as caught:
        refuse_unsupported(["MCPServer", "dialect='2026-07-28'"], side="server", info=evaluate("1.23.0", V1))
    assert str(caught.value) == (
        "cannot honour 2 opt-in(s) with mcp 1.23.0:\n"
        "  - MCPServer: needs mcp>=2,<3; fix: pip install 'mcp>=2,<3'\n"
        "  - dialect='2026-07-28': needs mcp>=2,<3 (the Tasks extension); fix: pip install 'mcp>=2,<3'"
        + SEE_OPT_IN
    )


@pytest.mark.parametrize("side", ["client", "server"])
def test_a_full_2x_install_honours_every_opt_in_of_its_side(side: _detect.Side) -> None:
    asked = [o.name for o in OPT_INS if o.side in (side, "both")] + ["dialect='2025-11-25'"]
    refuse_unsupported(asked, side=side, info=evaluate("2.3.0", V2))


def test_an_unknown_opt_in_is_a_programming_error_not_a_refusal() -> None:
    info = evaluate("2.3.0", V2)
    with pytest.raises(ValueError, match=r"^unknown opt-in 'bogus=' for the client$") as caught:
        refuse_unsupported(["bogus="], side="client", info=info)
    assert not isinstance(caught.value, CompatError)
    with pytest.raises(ValueError, match="unknown opt-in 'MCPServer' for the client"):
        refuse_unsupported(["MCPServer"], side="client", info=info)  # a server-only opt-in


# --- probing and caching ------------------------------------------------------------------------


class _Namespace:
    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)


def test_probe_features_checks_modules_and_dotted_attributes() -> None:
    modules = {
        "mcp.types": _Namespace(CreateTaskResult=object, ToolExecution=object),
        "mcp.server.lowlevel.server": _Namespace(Server=object),
        "mcp.client.session": _Namespace(ClientSession=_Namespace(discover=object)),
        "mcp.server.extension": _Namespace(Extension=_Namespace()),  # no intercept_tool_call
    }

    def fake_import(name: str) -> object:
        if name == "mcp.server.fastmcp":
            raise RuntimeError("a module that breaks on import counts as absent")
        try:
            return modules[name]
        except KeyError:
            raise ModuleNotFoundError(name) from None

    assert probe_features(fake_import) == {
        "v1.task_types",
        "v1.tool_execution",
        "v1.lowlevel_server",
        "v2.client_discover",
    }


@pytest.fixture
def fresh_detection() -> Iterator[None]:
    sdk_info.cache_clear()
    yield
    sdk_info.cache_clear()


@pytest.mark.usefixtures("fresh_detection")
def test_sdk_info_detects_once_and_reads_the_distribution_version(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_version() -> str:
        calls.append("version")
        return "1.22.0"

    monkeypatch.setattr(_detect, "_installed_version", fake_version)
    with pytest.raises(UnsupportedSdkError, match=r"mcp 1\.22\.0 predates"):
        sdk_info()
    monkeypatch.setattr(_detect, "_installed_version", lambda: "1.30.0")
    monkeypatch.setattr(_detect, "probe_features", lambda: V1)
    first = sdk_info()
    assert sdk_info() is first  # cached
    assert first.mcp_version == "1.30.0"
    assert calls == ["version"]


def test_the_real_install_is_detected_as_what_is_installed() -> None:
    installed = Version(importlib.metadata.version("mcp"))
    info = sdk_info()
    assert Version(info.mcp_version) == installed
    assert info.major == installed.major
    both = ("2025-11-25", "2026-07-28")
    assert info.client_dialects == (("2025-11-25",) if installed.major == 1 else both)
    assert info.server_dialects == (("2025-11-25",) if installed.major == 1 else both)
    assert features_of(installed.major) <= set(info.features)


def test_supported_range_matches_the_pyproject_requirement() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (mcp,) = [Requirement(text) for text in project["dependencies"] if Requirement(text).name == "mcp"]
    assert mcp.specifier == SpecifierSet(_detect.SUPPORTED_SPEC)
    assert SpecifierSet(_detect.SUPPORTED_SPEC) == _detect.SUPPORTED_RANGE
    assert _detect.SUPPORTED_RANGE.contains("2.0.0rc1")  # pre-releases of a supported major count


# --- error codes and their docs anchors ---------------------------------------------------------


def all_error_classes() -> list[type[CompatError]]:
    """Every CompatError subclass, wherever defined (the public modules are imported first)."""
    for name in ("client", "server"):
        if importlib.util.find_spec(f"mcp_tasks_compat.{name}") is not None:
            importlib.import_module(f"mcp_tasks_compat.{name}")
    found: list[type[CompatError]] = []
    pending: list[type[CompatError]] = [CompatError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: cls.__name__)


def example_of(cls: type[CompatError]) -> CompatError:
    """One instance of each error, built the way the library builds it."""
    if issubclass(cls, UnsupportedOptInError):
        return cls(
            [UnsupportedOptIn("extensions=", "mcp>=2,<3", "pip install 'mcp>=2,<3'")], installed="mcp 1.30.0"
        )
    if cls.__name__ == "TaskFailedError":
        return cls(task_id="t-1", error_code=-32603, error_message="boom")  # type: ignore[call-arg]
    if cls.__name__ == "ServerConnectionLostError":
        return cls(task_id="t-1", dialect="2026-07-28", cause=ConnectionResetError("reset"))  # type: ignore[call-arg]
    if cls.__name__ == "ServerAuthError":
        return cls(server="http://127.0.0.1:1/mcp", status=401)  # type: ignore[call-arg]
    if cls.__name__ == "ServerUnreachableError":
        return cls(server="http://127.0.0.1:1/mcp", cause=ConnectionRefusedError("refused"))  # type: ignore[call-arg]
    try:
        return cls("something happened")
    except TypeError:  # pragma: no cover - tells the next person what to add
        pytest.fail(f"add an example of {cls.__name__} to example_of()")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def docs_anchors() -> set[str]:
    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.MULTILINE)
    explicit = re.findall(r'<a (?:id|name)="([^"]+)"', text)
    return {github_anchor(heading) for heading in headings} | set(explicit)


def test_error_codes_are_unique_and_anchor_shaped() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes)), codes
    assert all(re.fullmatch(r"[a-z][a-z0-9-]*", code) for code in codes)


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_message_ends_with_its_docs_link_and_the_anchor_exists(cls: type[CompatError]) -> None:
    error = example_of(cls)
    assert type(error) is cls
    assert str(error).endswith(f"\n  see {DOCS_URL}#{cls.code}")
    assert str(error).startswith(error.message)
    assert cls.code in docs_anchors(), f"docs/errors.md needs a heading or <a id> for {cls.code!r}"
