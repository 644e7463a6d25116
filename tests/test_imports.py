"""The import graph of the project's packages: no cycles, no private names, layers point one way.

The graph is read from the source with `ast` — every `import` and `from … import` of a project
module, at module level and inside functions (a function-level import that dodges a cycle still
makes one) and under `if TYPE_CHECKING:` — so the test needs nothing importable and sees what a
runtime check would miss until the import runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Dependencies point one way (docs: DESIGN.md): a package may import only packages to its left.
LAYERS = ("servers", "worldmodel", "hub", "taskgen", "harness", "training")


@dataclass(frozen=True)
class Import:
    """One project module importing another (`name` is set for `from module import name`)."""

    importer: str
    module: str
    name: str | None
    line: int

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.importer, self.module, self.name)

    def where(self) -> str:
        what = f"{self.module}.{self.name}" if self.name else self.module
        return f"{self.importer}:{self.line} imports {what}"


def project_modules() -> dict[str, Path]:
    """Every module of the six packages, by dotted name (a package is its `__init__`)."""
    modules: dict[str, Path] = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _absolute(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """Resolve `from .x import y` (level 1) against the importing module's package."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module that `name` (dotted) denotes, or the nearest enclosing one."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(importer: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = _owner(alias.name, modules)
                if module is not None:
                    yield Import(importer, module, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(importer, is_package, node.level, node.module)
            if _owner(source, modules) is None:
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:  # `from package import module`
                    yield Import(importer, submodule, None, node.lineno)
                else:
                    yield Import(importer, _owner(source, modules) or source, alias.name, node.lineno)


def project_imports() -> list[Import]:
    modules = project_modules()
    return [found for name, path in modules.items() for found in imports_of(name, path, modules)]


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def private_imports(imports: list[Import]) -> list[Import]:
    """Imports of a `_name` (or a `_module`) from outside the module (or package) that owns it."""
    found = []
    for edge in imports:
        if edge.name is not None and _is_private(edge.name) and edge.importer != edge.module:
            found.append(edge)
            continue
        # A private module is private to its package: `pkg._impl` may be imported within `pkg`.
        parts = edge.module.split(".")
        for depth, part in enumerate(parts):
            if _is_private(part) and not edge.importer.startswith(".".join(parts[:depth]) + "."):
                found.append(edge)
                break
    return found


def wrong_way_imports(imports: list[Import]) -> list[Import]:
    return [edge for edge in imports if _layer(edge.module) > _layer(edge.importer)]


def tangles(imports: list[Import]) -> list[tuple[list[str], set[str]]]:
    """Each set of modules that import each other in a cycle (a strongly connected component of
    the graph), with one shortest cycle through it: ``[a, b, a]``."""
    graph: dict[str, set[str]] = {}
    for edge in imports:
        if edge.module != edge.importer:
            graph.setdefault(edge.importer, set()).add(edge.module)
    return [(_cycle_within(graph, c), c) for c in _strongly_connected(graph) if len(c) > 1]


def cycles(imports: list[Import]) -> list[list[str]]:
    return [cycle for cycle, _ in tangles(imports)]


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_within(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, for the failure message."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph.get(node, set()) & component):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if successor not in previous:
                    previous[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def _own_private_names(tree: ast.Module) -> set[str]:
    """The `_names` a module defines: its functions, classes, variables and attributes of its classes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.arg | ast.keyword) and node.arg is not None:
            names.add(node.arg)
    for node in ast.walk(tree):  # __slots__ = ("_a", "_b") declares attributes too
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            names.update(
                e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return {n for n in names if _is_private(n)}


def private_attributes(module: str, source: str) -> list[str]:
    """`thing._name` in ``source`` where `_name` is nobody's in that module: another module's private."""
    tree = ast.parse(source)
    own = _own_private_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr) or node.attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue  # an attribute of a base class: a subclass may use it
        found.append(f"{module}:{node.lineno} uses {ast.unparse(node.value)}.{node.attr}")
    return found


def with_packages(imports: list[Import]) -> list[Import]:
    """The imports plus what Python runs first: importing ``a.b.c`` from outside ``a.b`` runs
    ``a.b/__init__.py`` (and ``a/__init__.py``), so a cycle may pass through a package's ``__init__``."""
    modules = project_modules()
    implied = []
    for edge in imports:
        parts = edge.module.split(".")
        for depth in range(1, len(parts)):
            package = ".".join(parts[:depth])
            if package in modules and not f"{edge.importer}.".startswith(f"{package}."):
                implied.append(Import(edge.importer, package, None, edge.line))
    return imports + implied


def test_the_graph_covers_every_package() -> None:
    assert {e.importer.split(".")[0] for e in project_imports()} == set(LAYERS)


def test_function_level_relative_and_type_checking_imports_are_edges(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from . import a\n    from .a import _hidden\n")
    modules = {"pkg": package / "__init__.py", "pkg.a": package / "a.py", "pkg.b": package / "b.py"}
    edges = [found for name in ("pkg.a", "pkg.b") for found in imports_of(name, modules[name], modules)]
    assert {e.key for e in edges} == {("pkg.a", "pkg.b", "B"), ("pkg.b", "pkg.a", None), ("pkg.b", "pkg.a", "_hidden")}
    assert cycles(edges) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert [e.name for e in private_imports(edges)] == ["_hidden"]


def test_an_import_to_the_right_is_the_wrong_way() -> None:
    edges = [Import("servers.framework", "hub.world", "World", 1), Import("hub.world", "servers.framework", None, 1)]
    assert wrong_way_imports(edges) == edges[:1]


def test_no_import_cycles_between_project_modules() -> None:
    imports = with_packages(project_imports())
    found = []
    for cycle, members in tangles(imports):
        inside = sorted({e.where() for e in imports if e.importer in members and e.module in members})
        found.append("\n    ".join([f"{' -> '.join(cycle)} (the cycle of {', '.join(sorted(members))})", *inside]))
    assert not found, "import cycles:\n" + "\n".join(found)


def test_no_module_imports_a_private_name_of_another() -> None:
    found = private_imports(project_imports())
    assert not found, "private names imported across modules:\n" + "\n".join(e.where() for e in found)


def test_a_private_attribute_is_flagged_only_outside_the_module_that_has_it() -> None:
    source = (
        "class World:\n"
        "    def __init__(self):\n"
        "        self._entries = {}\n"
        "    def fork(self, other):\n"
        "        return other._entries, self._slots, other._core\n"
    )
    assert private_attributes("m", source) == ["m:5 uses other._core"]


def test_no_module_uses_a_private_attribute_of_another() -> None:
    found = [use for name, path in project_modules().items() for use in private_attributes(name, path.read_text())]
    assert not found, "private attributes used across modules:\n" + "\n".join(found)


def test_packages_import_only_packages_to_their_left() -> None:
    found = wrong_way_imports(project_imports())
    assert not found, f"imports against the order {' <- '.join(LAYERS)}:\n" + "\n".join(e.where() for e in found)
