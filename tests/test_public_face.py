"""The package's public face: ``from django_weft import job, start, ...``.

Every name users write resolves, lazily, to the very object in the module it lives in;
importing the package alone reads no settings and loads no models, so it works before
``django.setup()``.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import django_weft

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = [name for name in django_weft.__all__ if name != "__version__"]


def run_python(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter without Django settings."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", PUBLIC)
def test_public_face_name_is_the_object_at_its_home(name: str) -> None:
    """Each public name is the object defined in the module the map names."""
    home = importlib.import_module(django_weft._HOMES[name])
    assert getattr(django_weft, name) is getattr(home, name)


def test_public_face_all_is_the_map_and_the_version() -> None:
    """``__all__`` lists the version and every name of the map, each once."""
    assert django_weft.__all__ == ["__version__", *django_weft._HOMES]
    assert len(set(django_weft.__all__)) == len(django_weft.__all__)


def test_public_face_dir_lists_every_public_name() -> None:
    """``dir(django_weft)`` shows the public names, loaded yet or not."""
    assert set(django_weft.__all__) <= set(dir(django_weft))


def test_public_face_unknown_name_raises_attribute_error() -> None:
    """A name the package does not offer is an AttributeError that names it."""
    with pytest.raises(AttributeError, match="'no_such_name'"):
        _ = django_weft.no_such_name
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from django_weft import no_such_name")


def test_public_face_type_checkers_see_the_same_names() -> None:
    """The ``if TYPE_CHECKING:`` imports re-export exactly the names of the map."""
    tree = ast.parse(Path(django_weft.__file__).read_text(encoding="utf-8"))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        if node.test.id == "TYPE_CHECKING"
    ]
    seen: dict[str, str] = {}
    for block in blocks:
        for node in block.body:
            assert isinstance(node, ast.ImportFrom), ast.unparse(node)
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                seen[alias.name] = node.module or ""
    assert seen == django_weft._HOMES


def test_public_face_version_without_settings() -> None:
    """``import django_weft`` needs no settings, and loads nothing but the package itself."""
    printed = run_python(
        "import sys, json, django_weft\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('django_weft', 'django.conf')))\n"
        "print(json.dumps([django_weft.__version__, loaded]))\n"
    )
    version, loaded = json.loads(printed)
    assert version == django_weft.__version__ == "0.2.0"
    assert "django_weft.models" not in loaded
    # The face and the helper that loads its names: nothing else of the package.
    assert loaded == ["django_weft", "django_weft.lazy_exports"]


def test_public_face_loads_a_name_on_first_use() -> None:
    """Asking for a name imports its home then, and not before."""
    printed = run_python(
        "import sys, django_weft\n"
        "before = 'django_weft.exceptions' in sys.modules\n"
        "error = django_weft.WeftError\n"
        "print(before, 'django_weft.exceptions' in sys.modules, error.__module__)\n"
    )
    assert printed.split() == ["False", "True", "django_weft.exceptions"]


def test_public_face_app_config_imports_before_the_models() -> None:
    """``django_weft.apps`` (imported by Django before any model) loads no model module."""
    printed = run_python(
        "import sys, django_weft.apps\n"
        "print(sorted(m for m in sys.modules if m.startswith('django_weft.models')))\n"
    )
    assert printed.strip() == "[]"
