"""The benchmark harness, run with tiny sizes in memory, so it cannot rot between bench runs.

Every section must produce its rows for our client and server (a failed measurement is recorded
in ``errors`` and fails this test), and the report must render the JSON, the markdown tables and
the docs page from them.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import report  # noqa: E402
from benchmarks.__main__ import run_bench  # noqa: E402
from benchmarks.sections import PROFILES, SECTIONS, TARGETS_ORDER, profile_sizes  # noqa: E402
from tools.postgres_server import postgres_bindir  # noqa: E402

SECTIONS_IN_ORDER = (
    "overhead",
    "latency",
    "throughput",
    "capacity",
    "creation",
    "mechanisms",
    "stores",
    "workers",
    "handoff",
    "telemetry",
)
REDIS_HERE = shutil.which("redis-server") is not None and importlib.util.find_spec("redis") is not None
POSTGRES_HERE = postgres_bindir() is not None and importlib.util.find_spec("psycopg") is not None


SMOKE_SECTIONS = SECTIONS_IN_ORDER
"""What the smoke run measures: every section. The workers section (a redis-server and five mcp
processes) once hung here under load (issue 43): a listen stream that opened while a worker ended
one of its tasks pushed the state read before the watch and never again, and the client polled
no task a stream covered; fixed on both sides (tests/server/test_listen_2026.py,
tests/client/test_push.py), and it runs on every version again."""

SMOKE_BOUND_S = 900
"""A safety net, not a budget: about 50 s alone (the workers section starts five processes); a
2-core machine loaded about 15 times over took 6 minutes (issue 43's loops)."""


@pytest.mark.anyio
async def test_smoke_run_produces_every_section_and_renders(tmp_path: Path) -> None:
    with anyio.fail_after(SMOKE_BOUND_S):
        run = await run_bench("smoke", kinds=["sdk", "ours"], only=SMOKE_SECTIONS)

    # A mechanism this checkout cannot switch off is refused loudly (an error naming the keyword),
    # never skipped; every other measurement must have succeeded.
    refused = [error for error in run["errors"] if "MechanismMissing" in error["error"]]
    assert [error for error in run["errors"] if error not in refused] == [], run["errors"]
    for error in refused:
        assert error["what"].startswith("mechanisms/"), error
        assert "does not have" in error["error"], error
    assert {"major", "profile", "environment", "rows", "started", "duration_s"} <= run.keys()
    assert run["environment"]["nproc"]
    assert run["environment"]["packages"]["mcp"]
    rows = run["rows"]
    measured = set(SMOKE_SECTIONS) if REDIS_HERE else set(SMOKE_SECTIONS) - {"workers"}
    assert {row["section"] for row in rows} == measured
    if REDIS_HERE:
        drains = [row for row in rows if row["section"] == "workers" and row["variant"] == "drain"]
        assert [row["workers"] for row in drains] == list(run["profile_sizes"]["workers_workers"])
    else:
        assert any("workers: not measured" in note for note in run["notes"]), run["notes"]
    assert all(row["major"] == run["major"] for row in rows)

    overhead = {(row["kind"], row["variant"]): row for row in rows if row["section"] == "overhead"}
    assert {("sdk", "raw"), ("ours", "raw"), ("ours", "plain"), ("ours", "auto")} <= overhead.keys()
    plain = overhead[("ours", "plain")]
    assert plain["per_call_us"]["median"] > 0
    assert plain["ratio_to_raw"]["median"] > 0
    assert plain["ratio_to_raw"]["n"] == run["profile_sizes"]["overhead_rounds"]
    # the quick path as users feel it: a TaskClientSession next to the bare SDK session, over stdio
    quick_path = {
        row["variant"]: row
        for row in rows
        if row["section"] == "overhead" and row["variant"].startswith("quick-path/")
    }
    assert quick_path.keys() == {"quick-path/bare", "quick-path/auto", "quick-path/plain"}
    for row in quick_path.values():
        assert row["transport"] == "stdio"
        assert row["rate_to_bare"]["n"] == run["profile_sizes"]["overhead_quick_rounds"]
        assert row["server_cpu_us"] > 0

    handoff = {row["variant"]: row for row in rows if row["section"] == "handoff"}
    assert handoff.keys() == {"off", "on"}
    assert handoff["on"]["rate_to_off"]["n"] == run["profile_sizes"]["handoff_rounds"]
    assert handoff["on"]["rate_to_off"]["median"] > 0

    latencies = [row for row in rows if row["section"] == "latency"]
    expected_dialects = {"2025-11-25"} if run["major"] == 1 else {"2025-11-25", "2026-07-28"}
    assert {row["dialect"] for row in latencies} == expected_dialects
    for row in latencies:
        stats = row["completion_to_result_ms"]
        assert stats["n"] == run["profile_sizes"]["latency_samples"]
        assert 0 <= stats["median"] <= stats["p90"] <= stats["p99"]

    throughput = {row["variant"]: row for row in rows if row["section"] == "throughput"}
    assert throughput.keys() == {"sequential", "concurrent"}
    for row in throughput.values():
        assert row["task_per_s"]["median"] > 0
        assert row["plain_per_s"]["median"] > 0
        assert row["task_to_half_plain"]["median"] > 0

    mechanism_rows = [row for row in rows if row["section"] == "mechanisms"]
    configurations = {row["mechanisms"] for row in mechanism_rows if row["section"] == "mechanisms"}
    assert "all on" in configurations
    (quick,) = [r for r in mechanism_rows if r["variant"] == "quick" and r["mechanisms"] == "all on"]
    assert quick["rate_to_raw"]["median"] > 0
    assert quick["requests_per_call"] >= 1
    cpu_rows = {r["what"]: r for r in mechanism_rows if r["variant"] == "cpu" and r["mechanisms"] == "all on"}
    assert cpu_rows.keys() == {"quick call", "task"}
    for row in cpu_rows.values():  # in memory: client and server in one process, one CPU figure
        assert row["split"] is False
        assert row["cpu_us"]["n"] == run["profile_sizes"]["mechanisms_rounds"]
        assert row["cpu_to_raw"]["median"] > 0
    lengths = {
        r["length_s"] for r in mechanism_rows if r["variant"] == "extra_time" and r["mechanisms"] == "all on"
    }
    assert lengths == set(run["profile_sizes"]["mechanisms_lengths_s"])
    for off in configurations - {"all on"}:  # each configuration that could be built has every row
        assert any(r["mechanisms"] == off for r in mechanism_rows if r["section"] == "mechanisms")
    refused_names = {error["what"].removeprefix("mechanisms/") for error in refused}
    assert not refused_names & configurations

    capacity_rows = [row for row in rows if row["section"] == "capacity"]
    assert {row["mechanisms"] for row in capacity_rows} == {"all on", "detach off"}
    assert all(row["running_at_once"] == row["size"] for row in capacity_rows)
    capacity = next(row for row in capacity_rows if row["mechanisms"] == "all on")
    size = run["profile_sizes"]["capacity_sizes"][0]
    assert capacity["running_at_once"] == size  # truly concurrent, none queued
    assert capacity["expired"] is True
    assert capacity["stored_after_expiry"] == 0
    assert capacity["rss_baseline_kib"] > 0
    assert capacity["tasks_get_ms"]["n"] > 0

    following = [row for row in rows if row["section"] == "creation" and row.get("variant") == "following"]
    assert [row["kind"] for row in following] == ["ours"]  # create while following (issue 43)
    assert following[0]["created_per_s"]["median"] > 0
    assert following[0]["tasks"] == run["profile_sizes"]["creation_following_tasks"]
    creation = {
        row["client"]: row
        for row in rows
        if row["section"] == "creation" and row.get("variant") != "following"
    }
    assert creation.keys() == ({"ours"} if run["major"] == 1 else {"ours", "sdk"})
    for row in creation.values():
        assert row["kind"] == "ours"
        assert row["running_at_once"] == row["tasks"]  # every create was a task, held
        assert row["created_per_s"]["median"] > 0
        assert row["first_ms"]["n"] + row["rest_ms"]["n"] == row["tasks"]

    stores = [row for row in rows if row["section"] == "stores"]
    expected_stores = {"memory", "sqlite"} | ({"redis"} if REDIS_HERE else set[str]())
    expected_stores |= {"postgres"} if POSTGRES_HERE else set[str]()
    assert {row["store"] for row in stores} == expected_stores
    if not REDIS_HERE:
        assert any("redis rows skipped" in note for note in run["notes"]), run["notes"]
    sizes = run["profile_sizes"]["stores_get_sizes"]
    for store in expected_stores:
        mine = [row for row in stores if row["store"] == store]
        shapes = {(row["dialect"], row["variant"]) for row in mine if row["variant"] != "tasks/get"}
        assert shapes == {(d, v) for d in expected_dialects for v in ("sequential", "concurrent")}
        for row in mine:
            if row["variant"] != "tasks/get":
                assert row["task_per_s"]["median"] > 0
                assert row["ratio_to_memory"]["n"] == run["profile_sizes"]["stores_rounds"]
        gets = {row["stored"]: row for row in mine if row["variant"] == "tasks/get"}
        assert sorted(gets) == sorted(sizes)
        assert all(row["tasks_get_ms"]["median"] > 0 for row in gets.values())
        assert gets[max(sizes)]["p50_ratio_to_smallest"]["median"] > 0

    document = report.merge([run], command="pytest tests/test_bench_smoke.py")
    assert {"schema", "command", "runs", "rows", "targets"} <= document.keys()
    target_names = " ".join(target["target"] for target in document["targets"])
    assert "plain-call overhead" in target_names
    assert "completion-to-result" in target_names
    assert "half the plain rate" not in target_names  # HTTP only; the smoke run is in memory
    assert "task throughput SQLite ÷ memory" in target_names
    assert "tasks/get p50" in target_names
    assert "CPU per quick call, ours vs plain" in target_names
    assert ("task throughput Redis ÷ memory" in target_names) is REDIS_HERE

    paths = report.write_outputs(document, tmp_path / "results", tmp_path / "benchmarks.md")
    saved = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert saved["rows"] == json.loads(json.dumps(document["rows"]))
    table = paths["markdown"].read_text(encoding="utf-8")
    for heading in (
        "Plain-call overhead",
        "Completion-to-result",
        "Throughput",
        "Capacity",
        "Task stores",
        "Targets",
    ):
        assert heading in table
    assert "`call_tool(mode='plain')`" in table
    assert "SQLite tasks/s" in table
    assert "tasks/get p50 ms" in table
    docs = paths["docs"].read_text(encoding="utf-8")
    assert "pytest tests/test_bench_smoke.py" in docs
    assert f"mcp{run['major']} run (smoke" in docs
    assert "auto ÷ raw calls/s" in table
    assert "CPU time per call" in table
    if importlib.util.find_spec("matplotlib") is not None:  # the bench environment has it
        assert paths["chart"].read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_a_section_run_alone_replaces_only_the_sections_it_was_asked_for() -> None:
    """A re-run of ``mechanisms`` writes capacity rows too (its detach rows): the capacity section
    of the full run measured earlier must survive the merge."""
    full = {
        "major": 1,
        "started": "2026-12-02T04:00:00+0000",
        "sections": ["capacity", "mechanisms"],
        "rows": [
            {"section": "capacity", "size": 10_000, "mechanisms": "all on"},
            {"section": "mechanisms", "variant": "quick", "from": "full"},
        ],
    }
    rerun = {
        "major": 1,
        "started": "2026-12-02T05:00:00+0000",
        "sections": ["mechanisms"],
        "rows": [
            {"section": "capacity", "size": 1_000, "mechanisms": "detach off"},
            {"section": "mechanisms", "variant": "quick", "from": "rerun"},
        ],
    }
    merged = report.merge([full, rerun], command="nox -s bench")
    capacity = [row for row in merged["rows"] if row["section"] == "capacity"]
    mechanisms = [row for row in merged["rows"] if row["section"] == "mechanisms"]
    assert [row["size"] for row in capacity] == [10_000]
    assert [row["from"] for row in mechanisms] == ["rerun"]


def test_each_section_is_one_module_with_every_part_the_run_and_the_report_use() -> None:
    """The registry runs the sections in the published order, lists each once in the targets order,
    each has its part of every profile (flat keys prefixed with its name, as the run JSON has them),
    and the page lists their numbered paragraphs in order."""
    assert tuple(section.name for section in SECTIONS) == SECTIONS_IN_ORDER
    assert sorted(section.name for section in TARGETS_ORDER) == sorted(SECTIONS_IN_ORDER)
    for profile in PROFILES:
        sizes = profile_sizes(profile)
        assert sizes["name"] == profile
        for section in SECTIONS:
            own = section.profile_sizes(profile)
            assert own, section.name
            assert all(key.startswith(f"{section.name}_") for key in own)
            assert own.items() <= sizes.items()
    assert sorted(section.number for section in SECTIONS) == list(range(1, len(SECTIONS) + 1))
    page = report.render_docs(report.merge([], command="pytest"))
    positions = [page.index(section.described) for section in sorted(SECTIONS, key=lambda s: s.number)]
    assert positions == sorted(positions)
