"""Build step that ships ``instructeval_harness_lmeval.pth`` so ``lm_eval --model instructeval-hf`` works.

Used from ``pyproject.toml``::

    [tool.setuptools]
    cmdclass = { build_py = "instructeval_tasks.backend.build.build_py" }

setuptools loads this file by path at build time (it needs only setuptools). The ``.pth`` holds
one line, ``import instructeval_tasks.backend.hook as _h; _h.install()``, which Python runs at every
start-up: it imports three tiny stdlib-only modules and puts a one-shot import hook on
``sys.meta_path`` (see ``hook``); lm-eval and torch are not imported.

- ``pip install .`` (wheel): the file is written to ``build_lib`` and so lands at the wheel's root,
  i.e. in site-packages; it is listed in the wheel's RECORD, so ``pip uninstall`` removes it.
- ``pip install -e .`` (PEP 660 ``editable_wheel``): ``build_py`` runs in editable mode, where
  setuptools points the ``install`` command's ``install_lib`` at the root of the editable wheel
  being assembled (the folder it also writes data/scripts to); the file is written there and
  packed with the editable wheel's own ``__editable__`` ``.pth`` and finder.
"""

from __future__ import annotations

import os

from setuptools.command.build_py import build_py as _build_py

PTH_NAME = "instructeval_harness_lmeval.pth"
PTH_LINE = "import instructeval_tasks.backend.hook as _h; _h.install()\n"


class build_py(_build_py):
    """``build_py`` that also writes the registration ``.pth`` (see the module docstring)."""

    def _pth_dir(self) -> str:
        if getattr(self, "editable_mode", False):
            return self.get_finalized_command("install").install_lib
        return self.build_lib

    def run(self) -> None:
        super().run()
        folder = self._pth_dir()
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, PTH_NAME)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(PTH_LINE)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(os.path.join(self.build_lib, PTH_NAME))
        return outputs
