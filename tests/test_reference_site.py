"""The reference site (mkdocs.yml, `nox -s docs`) keeps up with the code and the docs, without mkdocs.

Every name in the ``__all__`` of a public module has a reference entry, no entry names something
that is not public, and the nav lists every docs page. The build's own check (every entry's anchor
in the HTML: tools/check_reference.py) and the site's hooks (tools/mkdocs_hooks.py) are checked
here on small inputs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the site's tools are repository tools (tools/), not in the wheel
    sys.path.insert(0, str(ROOT))

from tools import check_reference, mkdocs_hooks  # noqa: E402

DOCS = ROOT / "docs"


def test_every_public_name_has_a_reference_entry() -> None:
    assert check_reference.uncovered_names() == [], (
        "public names with no reference entry: add `::: <module>` as a page under docs/reference/ "
        "(and to mkdocs.yml's nav), or make the module private"
    )


def test_every_reference_entry_names_something_public() -> None:
    assert check_reference.stale_entries() == [], "reference entries for names that are not public"


def test_the_public_modules_are_found_and_declare_what_they_export() -> None:
    modules = check_reference.public_modules()
    for module in ("mcp_tasks_compat", "mcp_tasks_compat.client", "mcp_tasks_compat.server"):
        assert module in modules
    assert [module for module in modules if "._" in module] == []
    undeclared = [
        m for m in modules if not isinstance(getattr(importlib.import_module(m), "__all__", None), list)
    ]
    assert undeclared == [], "a public module must say what it exports (__all__)"


def test_the_modules_left_out_of_the_reference_are_still_public() -> None:
    gone = sorted(set(check_reference.NOT_IN_REFERENCE) - set(check_reference.public_modules()))
    assert gone == [], (
        f"no longer public modules: drop them from tools/check_reference.py NOT_IN_REFERENCE: {gone}"
    )


def test_the_nav_lists_every_docs_page_and_only_pages_that_exist() -> None:
    pages = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    nav = check_reference.nav_pages()
    assert sorted(set(pages) - set(nav)) == [], "docs pages missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "mkdocs.yml's nav names pages that do not exist"
    assert nav[0] == "index.md"
    assert len(nav) == len(set(nav)), "a page is listed twice in the nav"


def test_the_built_site_check_names_each_missing_anchor(tmp_path: Path) -> None:
    page = tmp_path / "reference" / "client" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text('<h1 id="mcp_tasks_compat.client">client</h1><h2 id="m.a">a</h2>', encoding="utf-8")
    expected = {
        "reference/client.md": {"mcp_tasks_compat.client", "m.a", "m.b"},
        "reference/server.md": {"m.c"},
    }
    assert check_reference.missing_anchors(tmp_path, expected) == [
        "reference/client.md: m.b",
        "reference/server.md: (no reference/server/index.html in the site)",
    ]
    assert check_reference.page_html(tmp_path, "index.md") == tmp_path / "index.html"


def test_each_entry_expects_its_module_and_every_name_of_its_all() -> None:
    anchors = check_reference.expected_anchors()["reference/client.md"]
    client = importlib.import_module("mcp_tasks_compat.client")
    assert anchors == {
        "mcp_tasks_compat.client",
        *(f"mcp_tasks_compat.client.{name}" for name in client.__all__),
    }
    assert "mcp_tasks_compat.client.TaskClientSession" in anchors  # made on first use, documented statically


def test_links_out_of_docs_become_github_addresses_and_missing_ones_stay() -> None:
    repository = mkdocs_hooks.repository()
    markdown = (
        "See [changes](../CHANGELOG.md), [the peers](../tests/interop/peers.py#L1), "
        "[a page](client.md), [gone](../no-such-file.md), [site](https://example.org/x).\n\n"
        "```\n[code](../CHANGELOG.md)\n```\n`[span](../CHANGELOG.md)`\n"
    )
    assert mkdocs_hooks.rewrite_outside_links(markdown, "index.md") == (
        f"See [changes]({repository}/blob/main/CHANGELOG.md), "
        f"[the peers]({repository}/blob/main/tests/interop/peers.py#L1), "
        "[a page](client.md), [gone](../no-such-file.md), [site](https://example.org/x).\n\n"
        "```\n[code](../CHANGELOG.md)\n```\n`[span](../CHANGELOG.md)`\n"
    )
    assert (
        mkdocs_hooks.outside_link("reference/client.md", "../../examples")
        == f"{repository}/tree/main/examples"
    )


def test_fence_tags_for_the_docs_tests_are_cut_to_the_language() -> None:
    markdown = "```python mcp2\nx = 1\n```\n\n```python fragment\ny\n```\n\n```json\n{}\n```\n"
    assert (
        mkdocs_hooks.strip_fence_tags(markdown)
        == "```python\nx = 1\n```\n\n```python\ny\n```\n\n```json\n{}\n```\n"
    )


def test_sphinx_roles_become_code_linked_to_where_the_object_is_defined() -> None:
    resolve = mkdocs_hooks.resolve_role
    # A name read in its docstring's module, then outwards; the identifier is the defining path.
    assert (
        resolve("TaskRun", "mcp_tasks_compat.client.call_tool") == "mcp_tasks_compat._client.task_run.TaskRun"
    )
    assert (
        resolve("~mcp_tasks_compat.errors.TaskError", "mcp_tasks_compat")
        == "mcp_tasks_compat.errors.TaskError"
    )
    assert (
        resolve("TaskRun.result", "mcp_tasks_compat.client")
        == "mcp_tasks_compat._client.task_run.TaskRun.result"
    )
    assert resolve("no_such_name", "mcp_tasks_compat.client") is None
    html = (
        '<h2 id="mcp_tasks_compat.client.call_tool">call_tool</h2>'
        "<p>See :class:<code>~mcp_tasks_compat.errors.TaskError</code>"
        " and :func:<code>nothing_here</code>.</p>"
    )
    assert mkdocs_hooks.link_roles(html, "mcp_tasks_compat.client") == (
        '<h2 id="mcp_tasks_compat.client.call_tool">call_tool</h2>'
        '<p>See <autoref identifier="mcp_tasks_compat.errors.TaskError" optional>'
        "<code>TaskError</code></autoref>"
        " and <code>nothing_here</code>.</p>"
    )


def test_a_literal_block_marker_before_code_reads_as_a_colon() -> None:
    html = '<p>Three touch points::</p>\n<div class="highlight"><pre>x</pre></div><p>a::</p><p>b</p>'
    assert mkdocs_hooks.cut_literal_markers(html) == (
        '<p>Three touch points:</p>\n<div class="highlight"><pre>x</pre></div><p>a::</p><p>b</p>'
    )
