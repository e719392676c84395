"""What every framework test shares: a folder for the server's records, and the asyncio backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from integrations.records import Records


@pytest.fixture
def records(tmp_path: Path) -> Records:
    return Records(tmp_path / "records")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
