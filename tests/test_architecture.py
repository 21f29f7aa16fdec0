"""Dependencies run one way, and no module needs another that needs it back.

    streamops (core: Spark-free readers and writers of on-disk formats, the lake layout,
      ▲        errors, plain-text rendering, optional-dependency checks)
      ├── streamops.checkpoint_tools (inspect, correlate, doctor, rewind, maintenance)
      └── streamops.monitor (listener, progress log, status, exporter)
            ▲
            streamops.pipeline (bronze, registry, silver, delta_connector, generator, supervisor, demo)
              ▲
              streamops.dashboards (Grafana, Prometheus rules, the console)
                ▲
                streamops.cli (the command line: one module per command group)

Read statically (ast), so a module is checked without importing it; every import counts,
including those inside functions. Imports under `if TYPE_CHECKING:` count too: none crosses a
layer or closes a cycle today, and keeping them in the check keeps it that way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
FOLDERS: dict[str, str] = {
    "streamops": "streamops",
    "streamops.checkpoint_tools": "checkpoint_tools",
    "streamops.monitor": "monitor",
    "streamops.pipeline": "pipeline",
    "streamops.dashboards": "dashboards",
}
"""Each package and the repository folder it installs from (pyproject.toml's package-dir)."""
MAY_IMPORT: dict[str, frozenset[str]] = {
    "streamops": frozenset(),
    "streamops.checkpoint_tools": frozenset({"streamops"}),
    "streamops.monitor": frozenset({"streamops"}),
    "streamops.pipeline": frozenset({"streamops", "streamops.monitor"}),
    "streamops.dashboards": frozenset(
        {"streamops", "streamops.checkpoint_tools", "streamops.monitor", "streamops.pipeline"}
    ),
    "streamops.cli": frozenset(FOLDERS),
}
"""Which layers each layer may import besides itself. checkpoint_tools and monitor are
siblings (neither needs the other); the pipeline reports to the monitor but diagnoses nothing;
the command line sits on top of everything and nothing imports it."""
LAYERS = tuple(MAY_IMPORT)


def module_name(package: str, path: Path) -> str:
    parts = path.relative_to(ROOT / FOLDERS[package]).with_suffix("").parts
    return ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))).rstrip(".")


def all_modules() -> dict[str, Path]:
    return {
        module_name(package, path): path
        for package in FOLDERS
        for path in sorted((ROOT / FOLDERS[package]).rglob("*.py"))
    }


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
    return max((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), key=len)


def test_the_map_covers_every_package_and_points_one_way():
    assert sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()) == sorted(FOLDERS.values())
    layer_graph = {layer: dict.fromkeys(MAY_IMPORT[layer] - {layer}, 0) for layer in LAYERS}
    assert cycles(layer_graph) == []


def test_the_package_dirs_in_pyproject_are_the_map():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == FOLDERS
    found = sorted(module for module, path in all_modules().items() if path.name == "__init__.py")
    assert sorted(setuptools["packages"]) == found


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
