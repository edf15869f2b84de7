"""The package's layout, read from its source with ``ast``: layers, cycles, sizes, time.

Every module of ``django_weft`` (migrations aside) is parsed, never imported, and each of
its imports of the package is collected: at module level, under ``if TYPE_CHECKING:``
(a type-only import is still a dependency) and inside functions, relative imports
resolved and ``from django_weft.x import y`` read as an import of ``django_weft.x.y``
when ``y`` is a module. On that graph:

- no import cycle, hidden or not;
- no ``import`` of the package inside a function or method (one that dodges a cycle hides
  the cycle; one that waits for the app registry belongs in a module loaded by name);
- every import points down :data:`LAYERS`, or stays in its own layer.

``django_weft/__init__.py`` is the public face: it names anything (lazily, so its names are
checked to exist rather than ranked), and nothing in the package imports from it but
``__version__`` and ``__file__``. Then the sizes: no module over 500 lines, no class over 20
methods, the worker loop under 350 lines; and time: the services, the engine and the entry
points ask :mod:`django_weft.timing.clocks`, never ``timezone.now``.

The checker itself is tested on small made-up packages at the end.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import django_weft

PACKAGE = Path(django_weft.__file__).resolve().parent
FACE = "django_weft"
"""The package root: the names users write (``from django_weft import job``)."""

FACE_ATTRIBUTES = frozenset({"__version__", "__file__"})
"""What any module may take from the face: it is set before anything is imported."""

LAYERS: dict[str, int] = {
    "conf": 0,
    "loading": 0,
    "lazy_exports": 0,
    "exceptions": 0,
    "signals": 0,
    "tracing": 0,
    "timing": 1,
    "models": 2,
    "access": 3,
    "jobs": 4,
    "live": 5,
    "sandbox": 6,
    "engine": 7,
    "operations": 8,
    "requests": 8,
    "api": 9,
    "tasks": 9,
    "sockets": 9,
    "console": 9,
    "management": 9,
    "observe": 9,
    "admin": 10,
    "templatetags": 10,
    "checks": 10,
    "testing": 10,
    "apps": 11,
}
"""Each top-level module or folder of the package and its layer, bottom (0) to top.

A module imports only from its own layer or from lower ones.
"""

ENGINE = "django_weft.engine"
ENGINE_LAYERS: dict[str, int] = {
    "auditing": 0,
    "database": 0,
    "history": 0,
    "runs": 1,
    "limits": 1,
    "schedules": 2,
    "flows": 2,
    "outcomes": 3,
    "worker": 4,
}
"""The engine's parts, bottom (0) to top, as its folders group them: talking to the
database; a run's start and claim, and the flow limits the claim obeys; schedules, and
flows (signals, waking); a run's end (which may start a schedule's buffered fire); the
worker and its satellites. A part imports only its own layer or lower ones, as the
package's layers do.
"""

MAX_MODULE_LINES = 500
MAX_CLASS_METHODS = 20
WORKER = "django_weft.engine.worker.loop"
MAX_WORKER_LINES = 350
TIMELESS = ("django_weft.operations", "django_weft.admin")
TIMELESS_FOLDERS = ("engine", "jobs", "api", "sockets", "console")
"""Where ``timezone.now`` must not be read: every "now" comes from the process's clock."""


@dataclass(frozen=True)
class Import:
    """One import of a package module, where it is written."""

    importer: str
    target: str
    line: int
    function: str | None = None
    """The function or method it sits in (``Class.method``); None at module level."""

    def __str__(self) -> str:
        return f"{self.importer} (line {self.line}) imports {self.target}"


# -- reading the package ---------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def package_sources() -> dict[str, str]:
    """The source of every module of the package (migrations aside), by module name."""
    return {
        module_name(path): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.relative_to(PACKAGE).parts
    }


@functools.cache
def package_imports() -> list[Import]:
    return read_imports(package_sources())


def is_package(module: str, modules: Mapping[str, str]) -> bool:
    return module == FACE or any(other.startswith(module + ".") for other in modules)


def from_base(importer: str, node: ast.ImportFrom, modules: Mapping[str, str]) -> str:
    """The absolute module of ``from <base> import ...``, relative levels resolved."""
    if not node.level:
        return node.module or ""
    parts = importer.split(".")
    if not is_package(importer, modules):
        parts.pop()
    parts = parts[: len(parts) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def in_package(module: str) -> bool:
    return module == FACE or module.startswith(FACE + ".")


def targets(
    importer: str, node: ast.Import | ast.ImportFrom, tree: ast.Module, modules: Mapping[str, str]
) -> Iterator[str]:
    """The package modules one import statement depends on."""
    if isinstance(node, ast.ImportFrom):
        base = from_base(importer, node, modules)
        if not in_package(base):
            return
        for alias in node.names:
            if base == FACE and alias.name in FACE_ATTRIBUTES:
                continue
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in modules else base
        return
    for alias in node.names:
        if alias.name != FACE:
            if in_package(alias.name):
                yield alias.name
            continue
        # ``import django_weft``: what it depends on is what is read from the name.
        bound = alias.asname or FACE
        for attribute in sorted(attributes_read(tree, bound) - FACE_ATTRIBUTES):
            submodule = f"{FACE}.{attribute}"
            yield submodule if submodule in modules else FACE


def attributes_read(tree: ast.Module, name: str) -> set[str]:
    """Every ``<name>.<attribute>`` read in ``tree``."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
    }


def read_imports(sources: Mapping[str, str]) -> list[Import]:
    """Every import of a package module in ``sources`` (module name -> source)."""
    return [item for module in sources for item in module_imports(module, sources)]


def module_imports(importer: str, sources: Mapping[str, str]) -> list[Import]:
    """The imports of package modules in ``importer``, each with the function it sits in."""
    tree = ast.parse(sources[importer])
    found: list[Import] = []

    def visit(node: ast.AST, function: str | None, owner: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.extend(
                    Import(importer, target, child.lineno, function)
                    for target in targets(importer, child, tree, sources)
                    if target != importer
                )
            elif isinstance(child, ast.ClassDef):
                visit(child, function, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{owner}.{child.name}" if owner else child.name
                visit(child, function or name, None)
            else:
                visit(child, function, owner)

    visit(tree, None, None)
    return found


# -- the rules -------------------------------------------------------------------------------


def layer_of(module: str) -> str:
    """The top-level name a module belongs to (``engine`` for
    ``django_weft.engine.worker.loop``)."""
    return module.split(".")[1] if module != FACE else FACE


def unlayered(modules: Mapping[str, str], layers: Mapping[str, int]) -> list[str]:
    """The modules whose top-level name has no layer."""
    return [m for m in modules if m != FACE and layer_of(m) not in layers]


def part_of(module: str, package: str) -> str | None:
    """The part of ``package`` a module belongs to (``worker`` for
    ``django_weft.engine.worker.loop`` in ``django_weft.engine``), or None outside it."""
    inside = module.removeprefix(package + ".")
    return inside.split(".")[0] if inside != module else None


def upward_within(imports: list[Import], package: str, layers: Mapping[str, int]) -> list[str]:
    """Each import between two parts of ``package`` that points to a higher part."""
    found = []
    for item in imports:
        source, target = part_of(item.importer, package), part_of(item.target, package)
        if source in layers and target in layers and layers[target] > layers[source]:
            found.append(
                f"{item}: part {target} ({layers[target]}) is above {source} ({layers[source]})"
            )
    return found


def upward_imports(imports: list[Import], layers: Mapping[str, int]) -> list[str]:
    """Each import that points to a higher layer, or to the public face."""
    found = []
    for item in imports:
        if item.importer == FACE:
            continue
        if item.target == FACE:
            found.append(f"{item}: only __version__ and __file__ may come from the public face")
            continue
        source, target = layer_of(item.importer), layer_of(item.target)
        if source in layers and target in layers and layers[target] > layers[source]:
            found.append(
                f"{item}: layer {target} ({layers[target]}) is above {source} ({layers[source]})"
            )
    return found


def function_imports(imports: list[Import]) -> list[str]:
    return [f"{item} inside {item.function}()" for item in imports if item.function]


def import_edges(imports: list[Import]) -> dict[str, set[str]]:
    """Who imports whom. The face's own imports are left out: its names load lazily."""
    edges: dict[str, set[str]] = {}
    for item in imports:
        if item.importer != FACE:
            edges.setdefault(item.importer, set()).add(item.target)
    return edges


def import_tangles(imports: list[Import]) -> list[set[str]]:
    """The groups of modules that reach each other through imports."""
    return [tangle for tangle in strongly_connected(import_edges(imports)) if len(tangle) > 1]


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """One cycle per tangle, as the modules along it, the first repeated last."""
    edges = import_edges(imports)
    return sorted(shortest_cycle(min(t), edges, t) for t in import_tangles(imports))


def strongly_connected(edges: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``edges``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return components


def shortest_cycle(start: str, edges: Mapping[str, set[str]], within: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself inside one tangle."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(edges.get(node, set()) & within):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"{start} is in a tangle but on no cycle")


def defined_names(source: str) -> set[str]:
    """The names a module defines or imports at its top (``if`` blocks included)."""
    names: set[str] = set()
    body = list(ast.parse(source).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If | ast.Try):
            body.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return names


def missing_public_names(homes: Mapping[str, str], sources: Mapping[str, str]) -> list[str]:
    """Each name of the face's map whose module does not exist or does not define it."""
    return [
        f"{name} from {home}"
        for name, home in homes.items()
        if home not in sources or name not in defined_names(sources[home])
    ]


def long_modules(sources: Mapping[str, str], limit: int) -> list[str]:
    return [
        f"{module}: {len(source.splitlines())} lines"
        for module, source in sources.items()
        if len(source.splitlines()) > limit
    ]


def large_classes(sources: Mapping[str, str], limit: int) -> list[str]:
    found = []
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                methods = sum(
                    isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) for child in node.body
                )
                if methods > limit:
                    found.append(f"{module}.{node.name}: {methods} methods")
    return found


def is_timeless(module: str) -> bool:
    return module in TIMELESS or (module != FACE and layer_of(module) in TIMELESS_FOLDERS)


def time_reads(sources: Mapping[str, str]) -> list[str]:
    """Each ``timezone.now`` (called, passed or imported) in the modules that ask the clock."""
    found = []
    for module, source in sources.items():
        if not is_timeless(module):
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "now"
                and ast.unparse(node.value).split(".")[-1] == "timezone"
            ) or (
                isinstance(node, ast.ImportFrom)
                and node.module == "django.utils.timezone"
                and any(alias.name == "now" for alias in node.names)
            ):
                found.append(f"{module} (line {node.lineno}): {ast.unparse(node)}")
    return found


def lines(found: list[str]) -> str:
    return "\n" + "\n".join(found)


# -- the package -----------------------------------------------------------------------------


def test_layout_has_no_import_cycle() -> None:
    """No module is reachable from itself through imports, type-only ones included."""
    cycles = import_cycles(package_imports())
    tangles = sorted(sorted(tangle) for tangle in import_tangles(package_imports()))
    assert cycles == [], lines(
        [" -> ".join(cycle) for cycle in cycles]
        + [f"tangled together: {', '.join(tangle)}" for tangle in tangles]
    )


def test_layout_has_no_package_import_inside_a_function() -> None:
    """Imports of the package sit at module level: none dodges a cycle or the registry."""
    hidden = function_imports(package_imports())
    assert hidden == [], lines(hidden)


def test_layout_every_module_has_a_layer() -> None:
    """Each top-level module or folder of the package is in the layer table."""
    assert unlayered(package_sources(), LAYERS) == []


def test_layout_every_import_points_down() -> None:
    """A module imports its own layer or lower ones, and from the face only the version."""
    upward = upward_imports(package_imports(), LAYERS)
    assert upward == [], lines(upward)


def test_layout_every_engine_part_has_a_layer() -> None:
    """Each folder (or module) of the engine is in its layer table: ``ls`` of the engine
    reads as its parts."""
    parts = {part_of(module, ENGINE) for module in package_sources()} - {None, "__init__"}
    assert parts == set(ENGINE_LAYERS)


def test_layout_the_engines_parts_import_down() -> None:
    """Within the engine, a part imports its own layer or lower ones."""
    upward = upward_within(package_imports(), ENGINE, ENGINE_LAYERS)
    assert upward == [], lines(upward)


def test_layout_public_names_exist_at_their_homes() -> None:
    """Every name of the face's lazy map is defined in the module the map names."""
    assert missing_public_names(django_weft._HOMES, package_sources()) == []


def test_layout_no_module_over_500_lines() -> None:
    long = long_modules(package_sources(), MAX_MODULE_LINES)
    assert long == [], lines(long)


def test_layout_no_class_over_20_methods() -> None:
    large = large_classes(package_sources(), MAX_CLASS_METHODS)
    assert large == [], lines(large)


def test_layout_worker_under_350_lines() -> None:
    """The worker loop is its life cycle and loop; its parts live in modules of their own."""
    length = len(package_sources()[WORKER].splitlines())
    assert length < MAX_WORKER_LINES, f"{WORKER}: {length} lines"


def test_layout_only_the_clock_reads_the_time() -> None:
    """Services, engine, jobs and entry points take "now" from the process's clock."""
    reads = time_reads(package_sources())
    assert reads == [], lines(reads)


# -- the checker -----------------------------------------------------------------------------

MADE_UP: dict[str, str] = {
    FACE: "from django_weft.jobs import job\n__version__ = '1'\n",
    "django_weft.conf": "from typing import TYPE_CHECKING\n"
    "if TYPE_CHECKING:\n"
    "    from django_weft.models import Run\n",
    "django_weft.models": "from django_weft import conf\n",
    "django_weft.jobs": "from .models import Run\n"
    "import django_weft\n"
    "VERSION = django_weft.__version__\n"
    "def job():\n"
    "    from django_weft import __version__\n",
    "django_weft.engine": "",
    "django_weft.engine.worker": "from . import claiming\nfrom django_weft import job\n",
    "django_weft.engine.claiming": "from ..jobs import job\n"
    "class Claim:\n"
    "    def run(self):\n"
    "        from django_weft.engine.worker import tick\n",
    "django_weft.cache": "import django_weft.conf\n",
}
"""A package with a type-only cycle, an import hidden in a method, an upward import, an
import of the face, a module with no layer; and imports that are fine."""


def test_layout_checker_resolves_imports() -> None:
    """Relative imports resolve, ``from x import module`` names the module, the version is free."""
    found = {(item.importer, item.target, item.function) for item in read_imports(MADE_UP)}
    assert found == {
        (FACE, "django_weft.jobs", None),
        ("django_weft.conf", "django_weft.models", None),
        ("django_weft.models", "django_weft.conf", None),
        ("django_weft.jobs", "django_weft.models", None),
        ("django_weft.engine.worker", "django_weft.engine.claiming", None),
        ("django_weft.engine.worker", FACE, None),
        ("django_weft.engine.claiming", "django_weft.jobs", None),
        ("django_weft.engine.claiming", "django_weft.engine.worker", "Claim.run"),
        ("django_weft.cache", "django_weft.conf", None),
    }


def test_layout_checker_reports_cycles() -> None:
    """A cycle through a type-only import and one through a hidden import both show."""
    assert import_cycles(read_imports(MADE_UP)) == [
        ["django_weft.conf", "django_weft.models", "django_weft.conf"],
        ["django_weft.engine.claiming", "django_weft.engine.worker", "django_weft.engine.claiming"],
    ]


def test_layout_checker_reports_function_imports() -> None:
    """An import of the package in a method is reported with its method, the version too."""
    found = function_imports(read_imports(MADE_UP))
    assert found == [
        "django_weft.engine.claiming (line 4) imports django_weft.engine.worker inside Claim.run()"
    ]
    elsewhere = read_imports({FACE: "", "django_weft.api": "def f():\n    import os\n"})
    assert function_imports(elsewhere) == []


def test_layout_checker_reports_upward_imports() -> None:
    """Imports up a layer and imports of the face's names are reported; the face is free."""
    found = upward_imports(read_imports(MADE_UP), LAYERS)
    assert found == [
        "django_weft.conf (line 3) imports django_weft.models: layer models (2) is above conf (0)",
        "django_weft.engine.worker (line 2) imports django_weft: "
        "only __version__ and __file__ may come from the public face",
    ]
    assert unlayered(MADE_UP, LAYERS) == ["django_weft.cache"]


def test_layout_checker_reports_missing_public_names() -> None:
    """A name the face promises that its module lacks, or a module that is gone, shows."""
    sources = {
        "django_weft.jobs": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    Alias = int\n"
        "def job(): ...\nclass Job: ...\nstart: int = 1\n"
    }
    homes = {
        "job": "django_weft.jobs",
        "Job": "django_weft.jobs",
        "start": "django_weft.jobs",
        "Alias": "django_weft.jobs",
        "gone": "django_weft.jobs",
        "lost": "django_weft.nowhere",
    }
    assert missing_public_names(homes, sources) == [
        "gone from django_weft.jobs",
        "lost from django_weft.nowhere",
    ]


def test_layout_checker_reports_sizes_and_time_reads() -> None:
    """Long modules, large classes and ``timezone.now`` where the clock must be asked."""
    methods = "".join(f"    def m{i}(self): ...\n" for i in range(21))
    sources = {
        "django_weft.engine.loop": "from django.utils import timezone\n"
        "from django.utils.timezone import now\n"
        "x = timezone.now()\n"
        f"class Big:\n{methods}",
        "django_weft.timing.clocks": "from django.utils import timezone\nx = timezone.now()\n",
        "django_weft.admin": "import django.utils.timezone\nx = django.utils.timezone.now\n",
    }
    assert long_modules(sources, 20) == ["django_weft.engine.loop: 25 lines"]
    assert large_classes(sources, 20) == ["django_weft.engine.loop.Big: 21 methods"]
    assert time_reads(sources) == [
        "django_weft.engine.loop (line 2): from django.utils.timezone import now",
        "django_weft.engine.loop (line 3): timezone.now",
        "django_weft.admin (line 2): django.utils.timezone.now",
    ]
