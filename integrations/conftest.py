"""What every framework test shares: a folder for the server's records (its summary printed after
the test), and the asyncio backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from integrations.records import Records


@pytest.fixture
def records(tmp_path: Path) -> Iterator[Records]:
    """The test's records folder; what the server saw is printed afterwards (``-s`` or ``-rA``)."""
    records = Records(tmp_path / "records")
    yield records
    print(f"server side: {records.summary()}")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
