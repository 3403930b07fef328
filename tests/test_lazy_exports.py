"""The package faces that load their names on first use (``instructeval_tasks.lazy``): what static
tools read (the ``if TYPE_CHECKING:`` imports) is what the packages give at run time, and importing
a face stays cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from instructeval_tasks.lazy import type_checking_imports

REPO = Path(__file__).resolve().parents[1]
FACES = ("instructeval_tasks.backend", "instructeval_tasks.sweep", "instructeval_aggregation")


@pytest.mark.parametrize("package", FACES)
def test_every_statically_imported_name_is_the_submodule_s_object(package):
    face = importlib.import_module(package)
    imports = type_checking_imports(Path(face.__file__).read_text(encoding="utf-8"))
    assert imports, f"{package}: no names under `if TYPE_CHECKING:`"
    for name, (module, attribute) in imports.items():
        assert getattr(face, name) is getattr(importlib.import_module(module, package), attribute), name
    assert set(imports) <= set(face.__all__) <= set(imports) | set(vars(face))  # __all__ names only what exists
    assert set(imports) <= set(dir(face))
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        face.no_such_name  # noqa: B018


def test_type_checking_imports_reads_only_the_type_checking_blocks():
    source = ("import typing\nfrom .eager import kept\n"
              "if typing.TYPE_CHECKING:\n    from .a import x, y as z\n    from ..b import w\n"
              "if DEBUG:\n    from .c import v\n")
    assert type_checking_imports(source) == {"x": (".a", "x"), "z": (".a", "y"), "w": ("..b", "w")}


def test_importing_the_faces_imports_none_of_their_heavy_names():
    code = (
        "import sys\n"
        "import instructeval_tasks.backend, instructeval_tasks.sweep, instructeval_aggregation\n"
        "heavy = [m for m in ('torch', 'pandas', 'lm_eval', 'instructeval_tasks.sweep.runner',"
        " 'instructeval_aggregation.pipeline') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "from instructeval_tasks.sweep import PROFILES\n"
        "assert 'quick' in PROFILES and 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
