"""The Python layers on their own: RestrictedPython, the guards, the allow-lists of what
a module reads from its imports, and the audit hook, with every kernel layer off
(:func:`~tests.sandbox_helpers.python_layers_only`).

Each escape is attacker code that ended ``done`` before these layers were rebuilt: a
helper of an allowed module doing the attribute walk the guards refuse
(``functools.update_wrapper``, ``operator.attrgetter``, ``str.format`` through
``super()``), a refusal erased after it was caught, an allowed module's function leading
to its module's globals. Each must end ``failed`` with ``ForbiddenAccess`` or
``ForbiddenImport`` naming what was refused, a secret of the worker (in its environment
and in a file) must appear in no field of the run, and a well-behaved module must still
run to its answer in the same worker afterwards.

The rules under the runs are tested on their own too: the guards' values, the closures
the module's globals hold, the host keeping the first refusal, the audit hook's frozen
state and one-way phases.
"""

from __future__ import annotations

import builtins
import os
import sys
import types
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from django_weft.conf import weft_settings
from django_weft.sandbox.restricted import MESSAGE_LIMIT, Refused, Room
from django_weft.sandbox.views import ModuleView
from django_weft.testing import Rehearsal
from tests.sandbox_helpers import (
    ESCAPES,
    RECORDED,
    TEST_LIMITS,
    assert_done,
    assert_failed,
    assert_kept_secret,
    assert_well_behaved_runs,
    in_child,
    python_layers_only,
    run_module,
    run_rogue,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.once]


@dataclass(frozen=True)
class Secret:
    value: str
    path: str


@pytest.fixture
def sandbox(rehearsal: Rehearsal, settings: Any) -> Iterator[Rehearsal]:
    """A rehearsal whose worker runs modules with the Python layers only, under the
    test limits."""
    for name, value in TEST_LIMITS.items():
        setattr(settings, name, value)
    with python_layers_only():
        yield rehearsal


@pytest.fixture
def secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Secret:
    """A secret in the worker's environment and in a file a module must not read."""
    value = f"weft-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("WEFT_TEST_SECRET", value)
    path = tmp_path / "secret.txt"
    path.write_text(value)
    return Secret(value, str(path))


def with_imports(settings: Any, *modules: str) -> None:
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, *modules]


def assert_escape_refused(
    sandbox: Rehearsal, secret: Secret, source: str, error_type: str, *says: str
) -> None:
    """``source`` (its ``default(path)`` given the secret file) fails naming the refusal,
    keeps the secret, and the worker still runs a well-behaved module."""
    run = run_module(sandbox, source, args=[secret.path])
    assert_failed(run, error_type, *says)
    assert_kept_secret(run, secret.value)
    assert_well_behaved_runs(sandbox)


# -- the four escapes, as the attacker wrote them ------------------------------------------


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_python_layers_escapes_of_allowed_helpers(
    sandbox: Rehearsal, secret: Secret, settings: Any, escape: str
) -> None:
    """The attacker's escapes: the helpers that walked for the module are refused by
    name, saying why; a caught refusal still fails the call."""
    source, imports, says = ESCAPES[escape]
    with_imports(settings, *imports)
    assert_escape_refused(sandbox, secret, source, "ForbiddenAccess", says)


def test_python_layers_erasing_a_refusal_alone(
    sandbox: Rehearsal, secret: Secret, settings: Any
) -> None:
    """Without a refusal to erase first, the helper it reaches for is refused itself."""
    source, imports, _ = ESCAPES["erase-refusal"]
    with_imports(settings, *imports)
    assert_escape_refused(
        sandbox,
        secret,
        source.replace('getattr((), "__class__")', "pass"),
        "ForbiddenAccess",
        "operator.attrgetter is not allowed: it reads attributes by name, unguarded",
    )


# -- walks through helpers and builtins ----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("super().format(value)", "str.format is not allowed"),
        ("super(S, self).format_map({'x': value})", "str.format_map is not allowed"),
        ("getattr(super(S, self), 'for' + 'mat')(value)", "str.format is not allowed"),
        ("super(S, S).format(self, value)", "str.format is not allowed"),
    ],
    ids=["zero-argument", "format_map", "getattr", "super-of-the-class"],
)
def test_python_layers_format_through_super(
    sandbox: Rehearsal, secret: Secret, body: str, says: str
) -> None:
    """``format`` and ``format_map`` of what a ``super`` of a str subclass stands for are
    refused, however the super is made."""
    source = (
        "class S(str):\n"
        "    def show(self, value):\n"
        f"        return {body}\n"
        "def default(path):\n"
        "    return S('{0.__class__}').show(host)\n"
    )
    assert_escape_refused(sandbox, secret, source, "ForbiddenAccess", says)


@pytest.mark.parametrize(
    ("imports", "expression", "says"),
    [
        ("collections", "collections.UserString('{0.__class__}').format(1)", "UserString"),
        ("string", "string.Formatter().format('{0.__class__}', 1)", "string.Formatter is not"),
        ("collections", "collections.namedtuple('P', 'x')", "it compiles code"),
        ("functools", "functools.singledispatch(len)", "evaluates type annotations"),
        ("functools", "getattr(functools.lru_cache(len), '__wrap' + 'ped__')", '"__wrapped__"'),
        ("functools", "getattr(functools.partial(len).func, '__self' + '__')", '"__self__"'),
        ("json", "getattr(functools.partial(json.dumps).func, '__glob' + 'als__')", "__glo"),
        ("json", "json.decoder", "json.decoder is not allowed: it is the module holding"),
        ("json", "json.codecs", 'json.codecs is not allowed: it is the module "codecs"'),
        ("statistics", "statistics.math", "statistics.math is not allowed: it is the module"),
        ("re", "re.enum", 're.enum is not allowed: it is the module "enum"'),
        ("collections", "collections.abc.ByteString", 'allow-list of "collections.abc"'),
    ],
)
def test_python_layers_helpers_of_allowed_modules(
    sandbox: Rehearsal, secret: Secret, imports: str, expression: str, says: str
) -> None:
    """Helpers left out of the allow-lists are refused naming why; what the allowed ones
    hold leads no further than names without "_"; no name of a view is a real module."""
    source = f"import functools\nimport {imports}\ndef default(path):\n    return {expression}\n"
    assert_escape_refused(sandbox, secret, source, "ForbiddenAccess", says)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("getattr((x for x in [1]), 'gi_' + 'frame')", '"gi_frame" is not allowed'),
        ("getattr((x for x in [1]), 'gi_' + 'code')", '"gi_code" is not allowed'),
        ("getattr((x for x in [1]), 'gi_' + 'yieldfrom')", '"gi_yieldfrom" is not allowed'),
        ("getattr(ValueError(), '__trace' + 'back__')", '"__traceback__" is not allowed'),
        ("getattr([], '__reduce' + '_ex__')(2)", '"__reduce_ex__" is not allowed'),
        ("getattr(object, '__subcl' + 'asses__')()", '"__subclasses__" is not allowed'),
        ("getattr(classmethod(len), '__fu' + 'nc__')", '"__func__" is not allowed'),
        ("getattr(staticmethod(len), '__wrap' + 'ped__')", '"__wrapped__" is not allowed'),
        ("getattr([].append, '__se' + 'lf__')", '"__self__" is not allowed'),
        ("getattr(getattr, '__clo' + 'sure__')", '"__closure__" is not allowed'),
        ("type('X', (), {})", "type() is not available in the sandbox"),
    ],
    ids=[
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "traceback",
        "reduce_ex",
        "subclasses",
        "classmethod",
        "staticmethod",
        "builtin-self",
        "guard-closure",
        "three-argument-type",
    ],
)
def test_python_layers_walks_refused(
    sandbox: Rehearsal, secret: Secret, expression: str, says: str
) -> None:
    """Frames, code, tracebacks, reductions, subclasses, what descriptors and methods wrap,
    the guards' cells and new types are out of reach, even with names built at run time."""
    source = f"def default(path):\n    return {expression}\n"
    assert_escape_refused(sandbox, secret, source, "ForbiddenAccess", says)


@pytest.mark.parametrize("call", ["getattr((), name)", "setattr(Box(), name, 1)"])
def test_python_layers_names_of_a_str_subclass(
    sandbox: Rehearsal, secret: Secret, call: str
) -> None:
    """An attribute name of a str subclass whose ``startswith`` says no is checked as the
    plain string it holds."""
    source = (
        "class Sly(str):\n"
        "    def startswith(self, prefix):\n"
        "        return False\n"
        "class Box:\n"
        "    pass\n"
        "def default(path):\n"
        "    name = Sly('__class__')\n"
        f"    return {call}\n"
    )
    assert_escape_refused(
        sandbox, secret, source, "ForbiddenAccess", 'attribute "__class__" is not allowed'
    )


def test_python_layers_metaclasses_refused(sandbox: Rehearsal, secret: Secret) -> None:
    """A class statement cannot name a metaclass: RestrictedPython refuses the keyword."""
    source = "class A(metaclass=type):\n    pass\ndef default(path):\n    return 1\n"
    assert_escape_refused(
        sandbox, secret, source, "ModuleSyntaxError", 'keyword argument "metaclass"'
    )


def test_python_layers_operator_helpers(sandbox: Rehearsal, secret: Secret, settings: Any) -> None:
    """With ``operator`` allowed, its by-name helpers are refused and the rest work."""
    with_imports(settings, "operator")
    for helper, why in (
        ("attrgetter", "it reads attributes"),
        ("methodcaller", "it calls methods"),
    ):
        source = f"import operator\ndef default(path):\n    return operator.{helper}('x')\n"
        assert_escape_refused(
            sandbox, secret, source, "ForbiddenAccess", f"operator.{helper} is not allowed: {why}"
        )
    source = (
        "import operator\n"
        "def default():\n"
        "    pairs = sorted([(2, 'b'), (1, 'a')], key=operator.itemgetter(0))\n"
        "    return [operator.add(1, 2), operator.getitem(pairs, 0)[1]]\n"
    )
    assert_done(run_module(sandbox, source), [3, "a"])


# -- the allow-lists ----------------------------------------------------------------------


def test_python_layers_import_without_allow_list(sandbox: Rehearsal, settings: Any) -> None:
    """An allowed module with no allow-list cannot be imported; naming its attributes in
    WEFT_SANDBOX_IMPORT_NAMES opens exactly those."""
    with_imports(settings, "html", "copy")
    source = "import html\ndef default():\n    return html.escape('<b>')\n"
    assert_failed(
        run_module(sandbox, source),
        "ForbiddenImport",
        'import of "html" is not allowed: the module "html" has no attribute allow-list',
        "WEFT_SANDBOX_IMPORT_NAMES",
    )
    copy_source = "import copy\ndef default():\n    return 1\n"
    assert_failed(
        run_module(sandbox, copy_source),
        "ForbiddenImport",
        'import of "copy" is not allowed: copy.copy and copy.deepcopy read objects',
    )
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"html": ["escape"]}
    assert_done(run_module(sandbox, source), "&lt;b&gt;")
    unescape = "import html\ndef default():\n    return html.unescape('&lt;')\n"
    assert_failed(
        run_module(sandbox, unescape),
        "ForbiddenAccess",
        'html.unescape is not allowed: it is not in the attribute allow-list of "html"',
    )


def test_python_layers_optional_modules_work(sandbox: Rehearsal, settings: Any) -> None:
    """The modules a project may add, each with its built-in allow-list, work."""
    optional = [
        "operator",
        "random",
        "bisect",
        "heapq",
        "fractions",
        "textwrap",
        "unicodedata",
        "calendar",
    ]
    with_imports(settings, *optional)
    source = (
        f"import {', '.join(optional)}\n"
        "def default():\n"
        "    rng = random.Random(1)\n"
        "    return [operator.mul(2, 3), rng.randint(4, 4), bisect.bisect([1, 3], 2),\n"
        "            heapq.nsmallest(1, [3, 1]), str(fractions.Fraction(1, 3)),\n"
        "            textwrap.dedent('  x'), unicodedata.name('a'), calendar.isleap(2024)]\n"
    )
    assert_done(
        run_module(sandbox, source), [6, 4, 1, [1], "1/3", "x", "LATIN SMALL LETTER A", True]
    )


def test_python_layers_allowed_helpers_still_work(sandbox: Rehearsal) -> None:
    """What modules reasonably use of the allowed modules keeps working: caches,
    partials, total ordering, ABCs, templates, super() of a module's own class."""
    source = (
        "import functools\n"
        "import string\n"
        "from collections.abc import Mapping\n"
        "from decimal import Decimal\n"
        "import statistics\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def square(n):\n"
        "    return n * n\n"
        "@functools.total_ordering\n"
        "class Version:\n"
        "    def __init__(self, number):\n"
        "        self.number = number\n"
        "    def __eq__(self, other):\n"
        "        return self.number == other.number\n"
        "    def __lt__(self, other):\n"
        "        return self.number < other.number\n"
        "class Base:\n"
        "    def name(self):\n"
        "        return 'base'\n"
        "class Child(Base):\n"
        "    def name(self):\n"
        "        return super().name() + '+child'\n"
        "def default():\n"
        "    square(3)\n"
        "    square(3)\n"
        "    add_one = functools.partial(sum, start=1)\n"
        "    return [square.cache_info().hits, add_one([1, 2]), Version(1) <= Version(2),\n"
        "            Child().name(), isinstance({}, Mapping),\n"
        "            string.Template('$who ran').substitute(who='it'),\n"
        "            str(Decimal('1.10') + Decimal('2')), statistics.median([3, 1, 2])]\n"
    )
    assert_done(run_module(sandbox, source), [1, 4, True, "base+child", True, "it ran", "3.10", 2])


# -- the first refusal, on the host --------------------------------------------------------


def test_python_layers_host_keeps_the_first_refusal(
    sandbox: Rehearsal, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that reported a refusal and then answers (its record of the refusal
    erased) still fails with the refusal, keeping what the module printed."""
    run = run_rogue(sandbox, settings, monkeypatch, "refusal_then_answer")
    assert_failed(run, "ForbiddenAccess", "the first refusal")
    assert run.state is not None
    assert run.state.data["output"] == "printed"


def test_python_layers_no_host_function_after_a_refusal(
    sandbox: Rehearsal, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a refusal no host function runs for the call, even a granted one."""
    RECORDED.clear()
    run = run_rogue(
        sandbox, settings, monkeypatch, "refusal_then_host_call", grants=["tests.record"]
    )
    assert_failed(run, "ForbiddenAccess", "the first refusal")
    assert RECORDED == []


def test_python_layers_refusal_of_unknown_kind(
    sandbox: Rehearsal, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal frame of a kind no guard refuses with breaks the protocol."""
    run = run_rogue(sandbox, settings, monkeypatch, "bad_refusal")
    assert_failed(run, "ProtocolViolation", "a refusal of kind 'victory'")


# -- the guards, in this process -----------------------------------------------------------


class Holder:
    """An object holding a value under a public name, as an allowed helper might."""

    def __init__(self, value: object) -> None:
        self.value = value


def make_room(reports: list[Refused]) -> tuple[Room, dict[str, Any]]:
    room = Room(allowed_imports=["json"], import_names={}, output_limit=100, report=reports.append)
    return room, room.module_globals({})


def closed_over() -> types.CellType:
    value = 1

    def inner() -> int:
        return value

    assert inner.__closure__ is not None
    return inner.__closure__[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (sys._getframe(), "is a frame object, which is not allowed"),
        (closed_over(), "is a cell object, which is not allowed"),
        (compile("1", "x", "eval"), "is a code object, which is not allowed"),
        (os, 'is the module "os", which is not allowed'),
    ],
    ids=["frame", "cell", "code", "module"],
)
def test_python_layers_values_refused_on_every_read(value: object, says: str) -> None:
    """Attribute reads, item reads and iteration refuse frames, cells, code and modules
    outside the allow-list, and report the first refusal at once."""
    reports: list[Refused] = []
    room, module_globals = make_room(reports)
    reads = [
        lambda: module_globals["_getattr_"](Holder(value), "value"),
        lambda: module_globals["_getitem_"]({"key": value}, "key"),
        lambda: list(module_globals["_getiter_"]([value])),
    ]
    for read in reads:
        with pytest.raises(Refused, match=says):
            read()
    assert [str(report) for report in reports] == [str(room.refusals[0])]
    assert len(room.refusals) == len(reads)


def test_python_layers_guard_objects_refused_as_values() -> None:
    """The objects the guards keep their state in are refused by every read."""
    room, module_globals = make_room([])
    for value in (room, room.views):
        with pytest.raises(Refused, match=f"is a {type(value).__name__} object"):
            module_globals["_getattr_"](Holder(value), "value")


def test_python_layers_allowed_module_read_as_its_view() -> None:
    """A read that meets an allowed module hands over its view, holding its allow-list."""
    _, module_globals = make_room([])
    view = module_globals["_getitem_"]({"json": sys.modules["json"]}, "json")
    assert isinstance(view, ModuleView)
    assert view.dumps is sys.modules["json"].dumps
    with pytest.raises(Refused, match=r"json\.decoder is not allowed"):
        view.decoder  # noqa: B018


def test_python_layers_cells_have_no_readable_attributes() -> None:
    """A cell reached anyhow cannot be opened: its attributes are refused."""
    _, module_globals = make_room([])
    with pytest.raises(Refused, match="attributes of cell objects are not allowed"):
        module_globals["_getattr_"](closed_over(), "cell_contents")


def test_python_layers_guards_are_closures() -> None:
    """Every guard and builtin the module's globals hold is a plain function or a builtin,
    never a bound method or a partial of an object with state (``__self__`` to walk to)."""
    _, module_globals = make_room([])
    values = {**module_globals["__builtins__"], **module_globals}
    values.pop("__builtins__")
    for name, value in values.items():
        if isinstance(value, type) or not callable(value):
            continue
        if isinstance(value, types.BuiltinFunctionType):
            assert value.__self__ in (builtins, None), name
            continue
        assert isinstance(value, types.FunctionType), (name, value)


def test_python_layers_refusal_messages_are_bounded() -> None:
    """A refusal quoting a huge name is cut, so its frame stays small."""
    reports: list[Refused] = []
    _, module_globals = make_room(reports)
    with pytest.raises(Refused):
        module_globals["_getattr_"](1, "_" * 100_000)
    assert len(str(reports[0])) <= MESSAGE_LIMIT + 3


# -- the audit hook ------------------------------------------------------------------------


def test_python_layers_audit_hook_frozen_and_one_way(tmp_path: Path) -> None:
    """Rebinding ``ALLOWED_EVENTS`` changes nothing; the module's code runs while armed;
    after the module, only the epilogue's traceback reads pass: not the module's code,
    not ``open``."""
    readable = tmp_path / "readable.txt"
    readable.write_text("text")
    result = in_child(
        f"""
        from django_weft.sandbox import audit

        def refuse(message):
            return PermissionError(message)

        module_code = compile("ran = True", "<module m>", "exec")
        after_module = audit.install_audit_hook(module_code, refuse)
        audit.ALLOWED_EVENTS = frozenset({{"open"}})
        try:
            open({str(readable)!r})
        except PermissionError as error:
            print("armed open:", error)
        namespace = {{}}
        exec(module_code, namespace)
        print("armed exec:", namespace["ran"])
        after_module()
        try:
            exec(module_code, {{}})
        except PermissionError as error:
            print("after exec:", error)
        try:
            1 / 0
        except ZeroDivisionError as error:
            print("after traceback:", error.__traceback__.tb_frame.f_code.co_filename)
        try:
            open({str(readable)!r})
        except PermissionError as error:
            print("after open:", error)
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        f"armed open: the sandbox refused the audit event \"open\" ('{readable}')",
        "armed exec: True",
        'after exec: the sandbox refused the audit event "exec"',
        "after traceback: <string>",
        f"after open: the sandbox refused the audit event \"open\" ('{readable}')",
    ]
