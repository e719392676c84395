"""Which mcp releases and task dialects to test on: the pinned matrix for a noxfile, the dialects
the installed mcp speaks for parametrizing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from .._detect import sdk_info
from ..dialects import ALL_DIALECTS, Dialect

__all__ = ["SDK_VERSIONS", "SDK_VERSIONS_DATE", "SdkVersionPolicy", "dialects", "nox_sdk_versions"]

SDK_VERSIONS: Final[tuple[str, ...]] = ("1.23.0", "1.30.0", "2.0.0", "2.3.0")
"""The mcp releases this library is tested on: the 1.x floor (the first with the tasks API), the
newest 1.x, the first 2.x and the newest 2.x. ``noxfile.py`` runs the suite once on each."""
SDK_VERSIONS_DATE: Final = "2026-12-01"
"""When :data:`SDK_VERSIONS` was last checked against the newest releases on PyPI (a pinned list:
a release newer than it is not in it until this library is tested on it)."""
SdkVersionPolicy = Literal["floor-latest", "latest"]


def nox_sdk_versions(
    policy: SdkVersionPolicy = "floor-latest", *, majors: Iterable[int] = (1, 2), floors: bool = True
) -> list[str]:
    """The pinned, tested :data:`SDK_VERSIONS` for ``@nox.parametrize("mcp", nox_sdk_versions())``.

    ``"floor-latest"`` (the default): the floor and the newest release of each major, the matrix
    this library runs; ``"latest"`` (or ``floors=False``): only the newest of each. ``majors``
    keeps only those majors. The list is dated :data:`SDK_VERSIONS_DATE`.
    """
    if policy not in ("floor-latest", "latest"):
        raise ValueError(f"policy must be 'floor-latest' or 'latest', not {policy!r}")
    wanted = set(majors)
    chosen = [version for version in SDK_VERSIONS if int(version.split(".")[0]) in wanted]
    if floors and policy == "floor-latest":
        return chosen
    newest: dict[str, str] = {}
    for version in chosen:
        newest[version.split(".")[0]] = version  # SDK_VERSIONS is in ascending order
    return list(newest.values())


def dialects() -> tuple[Dialect, ...]:
    """The task dialects the installed mcp speaks as client and as server (for parametrizing)."""
    info = sdk_info()
    return tuple(d for d in ALL_DIALECTS if d in info.client_dialects and d in info.server_dialects)
