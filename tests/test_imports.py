"""The package's import graph: no cycles, and no import hidden in a function to dodge one.

Read from the source with ``ast``, as Python would run it: imports under
``if TYPE_CHECKING:`` are left out (they never run), and an import inside a function is
allowed only in an ``AppConfig.ready()``, where Django asks for them (the app's checks and
built-in jobs load once the models are ready).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django_weft

PACKAGE = Path(django_weft.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    module_name(path): path
    for path in PACKAGE.rglob("*.py")
    if "migrations" not in path.relative_to(PACKAGE).parts
}


def resolve(importer: str, node: ast.ImportFrom | ast.Import) -> Iterator[str]:
    """The django_weft modules an import statement loads."""
    if isinstance(node, ast.Import):
        candidates = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = importer.split(".")
            if MODULES[importer].name != "__init__.py":
                package = package[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base]) if base else ".".join(package)
        candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
    for name in candidates:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("django_weft") and name != importer:
            yield name


def imports(module: str) -> Iterator[tuple[str, bool, str | None]]:
    """(imported module, inside a function?, that function's class) for each import."""
    tree = ast.parse(MODULES[module].read_text())

    def visit(node: ast.AST, function: str | None, owner: str | None) -> Iterator[Any]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in resolve(module, child):
                    yield target, function is not None, f"{owner}.{function}"
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, function, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from visit(child, child.name, owner)
            else:
                yield from visit(child, function, owner)

    yield from visit(tree, None, None)


def graph() -> dict[str, set[str]]:
    return {module: {target for target, _, _ in imports(module)} for module in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges``, as the modules along it, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := walk(target)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (cycle := walk(start)):
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    """Every import points down: no module is reachable from itself."""
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_no_import_hides_in_a_function_but_in_ready() -> None:
    """Imports of the package's own modules sit at the top of each module."""
    hidden = [
        f"{module} imports {target} in {where}"
        for module in MODULES
        for target, inside, where in imports(module)
        if inside and not (where or "").endswith(".ready")
    ]
    assert hidden == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a graph with a loop is caught."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_models_import_nothing_above_them() -> None:
    """Plain models: the model modules import only pure modules and each other."""
    allowed_prefixes = (
        "django_weft.models",
        "django_weft.timing.cron",
        "django_weft.timing.plans",
        "django_weft.timing.durations",
    )
    upward = {
        (module, target)
        for module, targets in graph().items()
        if module.startswith("django_weft.models")
        for target in targets
        if not target.startswith(allowed_prefixes)
        and target not in {"django_weft.timing.cronfields", "django_weft.timing.wording"}
    }
    assert upward == set()
