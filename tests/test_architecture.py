"""Dependencies run one way, and no module needs another that needs it back.

    streamops (core: Spark-free readers and writers of on-disk formats, the lake layout,
      ▲        errors, CLI helpers)
      ├── checkpoint_tools (inspect, correlate, doctor, rewind)
      └── monitor (listener, progress log, status, exporter)
            ▲
            pipeline (bronze, registry, silver, delta_connector, generator, supervisor, demo)
              ▲
              dashboards (Grafana, Prometheus rules, the console)
                ▲
                the command line: each package's `cli.register`, found by `streamops.cli`
                through the `streamops.commands` entry points in pyproject.toml

Read statically (ast), so a module is checked without importing it; every import counts,
including those inside functions. Imports under `if TYPE_CHECKING:` count too: none crosses a
layer or closes a cycle today, and keeping them in the check keeps it that way.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAY_IMPORT: dict[str, frozenset[str]] = {
    "streamops": frozenset(),
    "checkpoint_tools": frozenset({"streamops"}),
    "monitor": frozenset({"streamops"}),
    "pipeline": frozenset({"streamops", "monitor"}),
    "dashboards": frozenset({"streamops", "checkpoint_tools", "monitor", "pipeline"}),
}
"""Which packages each package may import besides itself. checkpoint_tools and monitor are
siblings (neither needs the other); the pipeline reports to the monitor but diagnoses nothing."""
PACKAGES = tuple(MAY_IMPORT)
COMMANDS_GROUP = "streamops.commands"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
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
    return module.split(".", 1)[0]


def test_the_map_covers_every_package_and_points_one_way():
    assert sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()) == sorted(PACKAGES)
    package_graph = {package: dict.fromkeys(MAY_IMPORT[package], 0) for package in PACKAGES}
    assert cycles(package_graph) == []


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


def test_the_command_line_is_assembled_from_each_package_registering_its_own_commands():
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][COMMANDS_GROUP]
    with_cli = sorted(p for p in PACKAGES if (ROOT / p / "cli.py").is_file() and p != "streamops")
    assert entry_points == {package: f"{package}.cli:register" for package in with_cli}
    assert set(import_graph()["streamops.cli"]) <= {m for m in all_modules() if package_of(m) == "streamops"}


def test_the_checker_sees_function_local_relative_and_package_imports(tmp_path):
    """The checker itself: the import forms the real tree uses are all resolved."""
    source = tmp_path / "pkg" / "sub" / "mod.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "import os\nfrom . import sibling\nfrom ..top import name\n"
        "def f():\n    from pipeline.bronze import jvm_classifier\n"
        "if True:\n    import monitor.fleet\n"
    )
    names = [name for name, _ in imported_names("pkg.sub.mod", source)]
    assert names == ["os", "pkg.sub.sibling", "pkg.top.name", "pipeline.bronze.jvm_classifier", "monitor.fleet"]
    modules = all_modules()
    assert resolve("pipeline.bronze.jvm_classifier", modules) == "pipeline.bronze.jvm_classifier"
    assert resolve("pipeline.cli.register", modules) == "pipeline.cli"
    assert resolve("os.path", modules) is None
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
