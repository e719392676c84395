"""The library's instruments, through the OpenTelemetry metrics API, made on first real use.

Attributes are bounded by design: the tool, the dialect, a task status, the store kind and
operation. Never a task id, a session or a principal. Each function is a flag check and returns
at once when no meter provider is set (:func:`.otel.metering`). Counters and up-down counters
are kept here and read by the SDK when it collects (observable instruments: the same cumulative
series, no SDK measurement on a task's path); histograms are recorded as they happen. The
up-down counters (active, waiting for input, push streams) count transitions where they are
saved, so on several replicas the sum over the replicas is the fleet's figure (a task created on
A and cancelled on B is +1 on A and -1 on B).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .otel import INSTRUMENTATION_NAME, metering, metrics_api
from .traces import ATTR_DIALECT, ATTR_STATUS, ATTR_TOOL

__all__ = [
    "ATTR_OPERATION",
    "ATTR_STORE",
    "SERIES",
    "forget",
    "lease_expired",
    "lease_renewed",
    "limit_refused",
    "polled",
    "push_stream",
    "queue_depth",
    "queue_wait",
    "rerun",
    "result_delivered",
    "run_ended",
    "run_fenced",
    "status_changed",
    "store_operation",
    "task_created",
    "worker_run",
]

ATTR_STORE: Final = "mcp_tasks.store"
ATTR_OPERATION: Final = "mcp_tasks.store.operation"

_SECONDS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
_STORE_SECONDS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5)

SERIES: Final = {
    # name: (kind, unit, description)
    "mcp_tasks.created": ("counter", "{task}", "Tasks created"),
    "mcp_tasks.ended": ("counter", "{task}", "Tasks that reached a terminal status, by status"),
    "mcp_tasks.active": ("updown", "{task}", "Tasks not yet terminal (sum over replicas)"),
    "mcp_tasks.input_waiting": ("updown", "{task}", "Tasks in input_required (sum over replicas)"),
    "mcp_tasks.run.duration": ("histogram", "s", "How long a task's work ran, by how the task ended"),
    "mcp_tasks.result.delay": ("histogram", "s", "From the end of a run to its result delivered"),
    "mcp_tasks.store.duration": ("histogram", "s", "One task store operation"),
    "mcp_tasks.store.errors": ("counter", "{error}", "Task store operations that raised"),
    "mcp_tasks.lease.renewals": ("counter", "{renewal}", "Leases of running tasks renewed"),
    "mcp_tasks.lease.expiries": ("counter", "{task}", "Runs lost to a replica whose lease ran out"),
    "mcp_tasks.reruns": ("counter", "{run}", "Runs started again after their replica stopped"),
    "mcp_tasks.runs.fenced": ("counter", "{run}", "Runs stopped here: another replica claimed their task"),
    "mcp_tasks.limit.refusals": ("counter", "{refusal}", "Task creations refused by a limit"),
    "mcp_tasks.polls": ("counter", "{request}", "tasks/get requests answered"),
    "mcp_tasks.push.streams": ("updown", "{stream}", "subscriptions/listen streams open"),
    "mcp_tasks.queue.depth": ("gauge", "{task}", "Tasks in the workers' queue, as this process last read it"),
    "mcp_tasks.queue.wait": ("histogram", "s", "From a task queued to its claim by a worker"),
    "mcp_tasks.worker.runs": ("counter", "{run}", "Queued tasks this worker claimed and ran"),
}
"""Every series this library emits (docs/observability.md describes each)."""


class _Tally:
    """A counter kept here and reported when the SDK collects (an observable instrument's callback):
    adding to it is a dictionary update, where a synchronous instrument's ``add`` is an SDK
    measurement (its attributes cleaned and hashed, an exemplar offered) on the task's path. The
    exported series is the same cumulative sum."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[tuple[str, ...], int] = {}

    def add(self, amount: int, pairs: tuple[str, ...]) -> None:
        self.counts[pairs] = self.counts.get(pairs, 0) + amount

    def set(self, value: int, pairs: tuple[str, ...]) -> None:
        self.counts[pairs] = value

    def observations(self) -> list[Any]:
        api = metrics_api()
        assert api is not None
        # A copy: the collecting thread (a periodic reader, a Prometheus scrape) reads while the
        # event loop adds; copying a dictionary is one step under the GIL.
        return [api.Observation(value, _attributes(*pairs)) for pairs, value in self.counts.copy().items()]


def _observer(name: str) -> Callable[[Any], list[Any]]:
    """The callback of the observable instrument ``name``: the tally of the instruments made last
    (a meter gives back an instrument already registered under that name, with its first callback,
    so the callback must not hold a tally of its own)."""

    def observe(_options: Any) -> list[Any]:
        return [] if _made is None else _made.tallies[name].observations()

    return observe


class _Instruments:
    def __init__(self) -> None:
        api = metrics_api()
        assert api is not None
        from .._version import __version__

        meter = api.get_meter(INSTRUMENTATION_NAME, __version__)
        histograms: dict[str, Any] = {}
        tallies: dict[str, _Tally] = {}
        for name, (kind, unit, description) in SERIES.items():
            if kind == "histogram":
                bounds = _STORE_SECONDS if name == "mcp_tasks.store.duration" else _SECONDS
                histograms[name] = meter.create_histogram(
                    name, unit=unit, description=description, explicit_bucket_boundaries_advisory=bounds
                )
                continue
            tallies[name] = _Tally()
            create = {
                "counter": meter.create_observable_counter,
                "updown": meter.create_observable_up_down_counter,
                "gauge": meter.create_observable_gauge,
            }[kind]
            create(name, callbacks=[_observer(name)], unit=unit, description=description)
        self.histograms = histograms
        self.tallies = tallies


_made: _Instruments | None = None
_attribute_sets: dict[tuple[str, ...], dict[str, str]] = {}


def _attributes(*pairs: str) -> dict[str, str]:
    """One shared attribute dictionary per combination (bounded: tools, dialects, statuses,
    stores and operations are few), so a measurement builds none."""
    found = _attribute_sets.get(pairs)
    if found is None:
        found = _attribute_sets[pairs] = dict(zip(pairs[::2], pairs[1::2], strict=True))
    return found


def _instruments() -> _Instruments:
    global _made
    if _made is None:
        _made = _Instruments()
    return _made


def _count(name: str, amount: int, *pairs: str) -> None:
    _instruments().tallies[name].add(amount, pairs)


def _record(name: str, value: float, *pairs: str) -> None:
    _instruments().histograms[name].record(value, _attributes(*pairs))


def forget() -> None:
    """Forget the instruments (the meter provider was replaced): made again, from zero, on next use."""
    global _made
    _made = None


def task_created(tool: str, dialect: str) -> None:
    if not metering():
        return
    _count("mcp_tasks.created", 1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)
    _count("mcp_tasks.active", 1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)


def status_changed(tool: str, dialect: str, old: str, new: str, *, terminal: bool) -> None:
    """A saved transition ``old`` -> ``new`` (``terminal``: ``new`` ends the task)."""
    if not metering() or old == new:
        return
    if old == "input_required":
        _count("mcp_tasks.input_waiting", -1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)
    if new == "input_required":
        _count("mcp_tasks.input_waiting", 1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)
    if terminal:
        _count("mcp_tasks.active", -1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)
        _count("mcp_tasks.ended", 1, ATTR_TOOL, tool, ATTR_DIALECT, dialect, ATTR_STATUS, new)


def run_ended(tool: str, dialect: str, status: str, seconds: float) -> None:
    if metering():
        _record(
            "mcp_tasks.run.duration", seconds, ATTR_TOOL, tool, ATTR_DIALECT, dialect, ATTR_STATUS, status
        )


def result_delivered(tool: str, dialect: str, seconds: float) -> None:
    if metering():
        _record("mcp_tasks.result.delay", max(seconds, 0.0), ATTR_TOOL, tool, ATTR_DIALECT, dialect)


def store_operation(store: str, operation: str, seconds: float, *, failed: bool) -> None:
    if not metering():
        return
    _record("mcp_tasks.store.duration", seconds, ATTR_STORE, store, ATTR_OPERATION, operation)
    if failed:
        _count("mcp_tasks.store.errors", 1, ATTR_STORE, store, ATTR_OPERATION, operation)


def lease_renewed(count: int = 1) -> None:
    if metering() and count:
        _count("mcp_tasks.lease.renewals", count)


def lease_expired(count: int = 1) -> None:
    if metering() and count:
        _count("mcp_tasks.lease.expiries", count)


def run_fenced(tool: str) -> None:
    if metering():
        _count("mcp_tasks.runs.fenced", 1, ATTR_TOOL, tool)


def rerun(tool: str) -> None:
    if metering():
        _count("mcp_tasks.reruns", 1, ATTR_TOOL, tool)


def limit_refused(dialect: str) -> None:
    if metering():
        _count("mcp_tasks.limit.refusals", 1, ATTR_DIALECT, dialect)


def polled(tool: str, dialect: str) -> None:
    if metering():
        _count("mcp_tasks.polls", 1, ATTR_TOOL, tool, ATTR_DIALECT, dialect)


def push_stream(delta: int, dialect: str) -> None:
    if metering():
        _count("mcp_tasks.push.streams", delta, ATTR_DIALECT, dialect)


def queue_depth(waiting: int) -> None:
    if metering():
        _instruments().tallies["mcp_tasks.queue.depth"].set(waiting, ())


def queue_wait(tool: str, seconds: float) -> None:
    if metering():
        _record("mcp_tasks.queue.wait", seconds, ATTR_TOOL, tool)


def worker_run(tool: str) -> None:
    if metering():
        _count("mcp_tasks.worker.runs", 1, ATTR_TOOL, tool)
