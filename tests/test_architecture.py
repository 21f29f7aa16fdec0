"""Dependencies run one way, and no module needs another that needs it back.

    streamops.core (Spark-free readers and writers of on-disk formats, storage, the lake layout,
      ▲            errors, plain-text rendering, optional-dependency checks)
      ├── streamops.checkpoint_tools (inspect, correlate, doctor, rewind, maintenance)
      └── streamops.monitor (listener, progress log, status, exporter)
            ▲
            streamops.pipeline (runtime, delta_connector, registry, bronze, silver, cdc, run, demo)
              ▲
              streamops.dashboards (Grafana, Prometheus rules, the console)
                ▲
                streamops.cli (the command line: one module per command group)

Inside the pipeline the subpackages are layered too (`PIPELINE_ORDER`): each imports only those
listed before it, so none needs another that needs it back.

Read statically (ast), so a module is checked without importing it; every import counts,
including those inside functions. Imports under `if TYPE_CHECKING:` count too: none crosses a
layer or closes a cycle today, and keeping them in the check keeps it that way.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "streamops"
MAY_IMPORT: dict[str, frozenset[str]] = {
    "streamops.core": frozenset(),
    "streamops.checkpoint_tools": frozenset({"streamops.core"}),
    "streamops.monitor": frozenset({"streamops.core"}),
    "streamops.pipeline": frozenset({"streamops.core", "streamops.monitor"}),
    "streamops.dashboards": frozenset(
        {"streamops.core", "streamops.checkpoint_tools", "streamops.monitor", "streamops.pipeline"}
    ),
    "streamops.cli": frozenset(
        {
            "streamops.core",
            "streamops.checkpoint_tools",
            "streamops.monitor",
            "streamops.pipeline",
            "streamops.dashboards",
        }
    ),
}
"""Which layers each layer may import besides itself. checkpoint_tools and monitor are
siblings (neither needs the other); the pipeline reports to the monitor but diagnoses nothing;
the command line sits on top of everything and nothing imports it."""
LAYERS = tuple(MAY_IMPORT)
PIPELINE_ORDER = (
    "exceptions",
    "runtime",
    "records",
    "lake_tables",
    "delta_connector",
    "registry",
    "expectations",
    "pipeline_events",
    "silver",
    "bronze",
    "cdc",
    "generator",
    "lake_summary",
    "run",
    "demo",
)
"""The pipeline's subpackages and root modules, lowest first: each may import only those before it."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_names(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(dotted name, line) of every import in the module; `from a import b` yields `a.b`, which
    resolves to the module `a.b` when there is one and to the package `a` otherwise."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                yield f"{origin}.{alias.name}", node.lineno


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name loads (None: not one of ours)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported project module: first line importing it}."""
    modules = all_modules()
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for name, line in imported_names(module, path):
            target = resolve(name, modules)
            if target is not None and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_of(module: str) -> str:
    """The layer a module belongs to: the longest layer name it starts with."""
    if module == "streamops.__main__":
        return "streamops.cli"
    if module == "streamops":
        return "streamops.core"  # the root only re-exports the core's public names
    return max((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), key=len)


def pipeline_unit(module: str) -> str | None:
    """The pipeline subpackage or root module a module belongs to (None: not the pipeline's)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "pipeline" else None


def test_the_map_covers_every_package_and_points_one_way():
    assert sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()) == sorted(
        layer.removeprefix("streamops.") for layer in LAYERS
    )
    assert not [p for p in ROOT.iterdir() if (p / "__init__.py").is_file()], "a package outside src/"
    layer_graph = {layer: dict.fromkeys(MAY_IMPORT[layer] - {layer}, 0) for layer in LAYERS}
    assert cycles(layer_graph) == []


def test_setuptools_finds_the_packages_under_src():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in setuptools
    assert setuptools["packages"] == {"find": {"where": ["src"]}}


def test_every_pipeline_unit_has_a_place_in_the_order():
    units = {pipeline_unit(module) for module in all_modules()} - {None}
    assert units == set(PIPELINE_ORDER)


def test_the_pipeline_subpackages_import_only_those_below_them():
    rank = {unit: index for index, unit in enumerate(PIPELINE_ORDER)}
    wrong = [
        f"{module}:{line} imports {target}"
        for module, edges in sorted(import_graph().items())
        if pipeline_unit(module) is not None
        for target, line in sorted(edges.items())
        if pipeline_unit(target) is not None and rank[pipeline_unit(target)] > rank[pipeline_unit(module)]
    ]
    assert wrong == [], "pipeline imports against PIPELINE_ORDER:\n" + "\n".join(wrong)


def test_no_module_imports_a_package_above_it():
    wrong = [
        f"{module}:{line} imports {target}"
        for module, edges in sorted(import_graph().items())
        for target, line in sorted(edges.items())
        if package_of(target) != package_of(module) and package_of(target) not in MAY_IMPORT[package_of(module)]
    ]
    assert wrong == [], "imports against the layer map:\n" + "\n".join(wrong)


def test_no_import_cycle_between_modules():
    found = cycles(import_graph())
    assert found == [], "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_nothing_imports_the_command_line():
    wrong = [
        f"{module} imports {target}"
        for module, edges in sorted(import_graph().items())
        if package_of(module) != "streamops.cli"
        for target in edges
        if package_of(target) == "streamops.cli"
    ]
    assert wrong == []


def test_the_console_script_is_the_command_lines_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"streamops": "streamops.cli:main"}


def test_the_checker_sees_function_local_relative_and_package_imports(tmp_path):
    """The checker itself: the import forms the real tree uses are all resolved."""
    source = tmp_path / "pkg" / "sub" / "mod.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "import os\nfrom . import sibling\nfrom ..top import name\n"
        "def f():\n    from streamops.pipeline.bronze import jvm_classifier\n"
        "if True:\n    import streamops.monitor.fleet\n"
    )
    names = [name for name, _ in imported_names("pkg.sub.mod", source)]
    assert names == [
        "os",
        "pkg.sub.sibling",
        "pkg.top.name",
        "streamops.pipeline.bronze.jvm_classifier",
        "streamops.monitor.fleet",
    ]
    modules = all_modules()
    assert resolve("streamops.pipeline.bronze.jvm_classifier", modules) == "streamops.pipeline.bronze.jvm_classifier"
    assert resolve("streamops.cli.run.register", modules) == "streamops.cli.run"
    assert resolve("os.path", modules) is None
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def layering_diagram(page: Path) -> str:
    """The page's layering diagram: the code block that starts with the core."""
    return "streamops.core" + page.read_text().split("```\nstreamops.core", 1)[1].split("```", 1)[0]


def documented_pipeline_order(page: Path) -> tuple[str, ...]:
    """The pipeline's order as the page's layering diagram draws it (`a < b < ...` over lines)."""
    diagram = layering_diagram(page)
    lines = [line for line in diagram.splitlines() if "<" in line]
    chain = " ".join(re.split(r"\s{2,}", line.strip())[-1] for line in lines)
    return tuple(unit.strip() for unit in chain.split("<"))


def test_the_diagrams_in_the_readme_and_the_manual_are_this_map():
    for page in (ROOT / "README.md", ROOT / "docs" / "architecture.md"):
        assert documented_pipeline_order(page) == PIPELINE_ORDER, page.name
        diagram = layering_diagram(page)
        rows = [line.split() for line in diagram.splitlines() if line[:1].isalpha()]
        drawn = {row[0].removeprefix("streamops.") for row in rows} | {row[1] for row in rows if row[0] == "monitor"}
        assert {layer.removeprefix("streamops.") for layer in LAYERS} <= drawn, page.name
