"""The sections of a bench run, one module each, and the order they run and are shown in.

Each module holds all of its section: its part of every profile (the sizes), its measurement, its
targets, its tables and its item of "What is measured" on docs/benchmarks.md, bundled as one
:class:`~benchmarks.section.Section` named ``SECTION``. Adding a section is writing its module and
naming it in :data:`SECTIONS` (and in :data:`TARGETS_ORDER`).
"""

from __future__ import annotations

from typing import Any

from ..section import Section
from . import (
    capacity,
    creation,
    handoff,
    latency,
    mechanisms,
    overhead,
    stores,
    telemetry,
    throughput,
    workers,
)

__all__ = ["NAMES", "PROFILES", "SECTIONS", "TARGETS_ORDER", "profile_sizes"]

SECTIONS: tuple[Section[Any], ...] = (
    overhead.SECTION,
    latency.SECTION,
    throughput.SECTION,
    capacity.SECTION,
    creation.SECTION,
    mechanisms.SECTION,
    stores.SECTION,
    workers.SECTION,
    handoff.SECTION,
    telemetry.SECTION,  # last: it sets OpenTelemetry's global providers in turns (and unsets them)
)
"""In the order they run, their rows are merged in and their tables are printed."""

NAMES: tuple[str, ...] = tuple(section.name for section in SECTIONS)

TARGETS_ORDER: tuple[Section[Any], ...] = (
    overhead.SECTION,
    throughput.SECTION,  # throughput's targets have always come before latency's
    latency.SECTION,
    capacity.SECTION,
    creation.SECTION,
    mechanisms.SECTION,
    stores.SECTION,
    workers.SECTION,
    telemetry.SECTION,
    handoff.SECTION,
)
"""The order of the targets table."""

PROFILES: tuple[str, ...] = ("smoke", "full")
"""The profiles every section has a part of: tiny sizes (the smoke test), and the published run."""


def profile_sizes(profile_name: str) -> dict[str, Any]:
    """Every section's part of a profile, flat (``<section>_<size>``), as the run's JSON has it."""
    sizes: dict[str, Any] = {"name": profile_name}
    for section in SECTIONS:
        sizes.update(section.profile_sizes(profile_name))
    return sizes
