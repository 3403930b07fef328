"""Make ``--model instructeval-hf`` known to lm-eval in any process, at no start-up cost.

lm-eval 0.4.13 finds models only in its registry (``lm_eval.api.registry.model_registry``: the
static ``MODEL_MAPPING`` plus ``@register_model`` at import time); it reads no entry points. So
``instructeval-hf`` exists in a process only if something registers it before ``get_model`` runs.

``install()`` does that lazily and imports nothing heavy (this module uses ``sys`` only):

- if ``lm_eval.api.registry`` is already imported, it registers the placeholder
  ``"instructeval_tasks.backend:InstructEvalHFLM"`` now;
- otherwise it puts a one-shot finder on ``sys.meta_path`` that registers it right after
  ``lm_eval.api.registry`` is first imported, then removes itself.

The registry materialises the placeholder (reads ``InstructEvalHFLM`` from ``instructeval_tasks.backend``,
which imports ``backend.model``, torch and ``HFLM``) only when ``get_model("instructeval-hf")`` is called, and upgrades it to the
class when ``backend.model``'s ``@register_model`` runs. Before registering, ``lm_eval.models`` (a plain
name -> "module:Class" dict) is imported, because ``get_model`` imports it only into an *empty*
registry: registering first would otherwise hide ``hf`` and every other stock model.

Where ``install()`` is called from:

- ``instructeval_harness_lmeval.pth`` in site-packages (written by ``backend.build.build_py`` for
  ``pip install .`` and ``pip install -e .``), so a plain ``lm_eval --model instructeval-hf ...``
  works. The line is ``import instructeval_tasks.backend.hook as _h; _h.install()``.
- ``python -m instructeval_tasks.backend.hook <lm_eval arguments>`` runs the ``lm_eval`` CLI with
  the hook installed, for environments without the ``.pth``.
- any process that imports ``instructeval_tasks.backend.model`` (or reads
  ``instructeval_tasks.backend.InstructEvalHFLM``) registers the class itself.
"""

from __future__ import annotations

import sys

from .names import MODEL_NAME  # the one definition, in a module that imports nothing

TARGET = "instructeval_tasks.backend:InstructEvalHFLM"  # the package resolves it lazily
_REGISTRY_MODULE = "lm_eval.api.registry"


def register(registry_module=None) -> None:
    """Register the lazy placeholder in lm-eval's model registry (idempotent)."""
    module = registry_module if registry_module is not None else sys.modules[_REGISTRY_MODULE]
    registry = module.model_registry
    if MODEL_NAME in registry:
        return
    import lm_eval.models  # noqa: F401  (the stock names first; see the module docstring)

    if MODEL_NAME not in registry:
        registry.register(MODEL_NAME, target=TARGET)


class _RegisterAfterImport:
    """A one-shot meta-path finder: wraps the loader of ``lm_eval.api.registry`` to call ``register``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _REGISTRY_MODULE:
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        uninstall()
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            try:
                register(module)
            except Exception as err:  # never break lm_eval itself
                print(f"instructeval_tasks.backend.hook: could not register {MODEL_NAME}: {err}", file=sys.stderr)

        spec.loader.exec_module = exec_then_register
        return spec


def _installed() -> list:
    return [f for f in sys.meta_path if isinstance(f, _RegisterAfterImport) or type(f).__name__ == "_RegisterAfterImport"]


def install() -> None:
    """Register now if lm-eval's registry is loaded, else as soon as it is (idempotent, cheap)."""
    if _REGISTRY_MODULE in sys.modules:
        try:
            register()
        except Exception as err:
            print(f"instructeval_tasks.backend.hook: could not register {MODEL_NAME}: {err}", file=sys.stderr)
        return
    if not _installed():
        sys.meta_path.insert(0, _RegisterAfterImport())


def uninstall() -> None:
    for finder in _installed():
        sys.meta_path.remove(finder)


def main(argv: list[str] | None = None) -> None:
    """``python -m instructeval_tasks.backend.hook <lm_eval args>``: the lm_eval CLI with the hook."""
    install()
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *(sys.argv[1:] if argv is None else argv)]
    cli_evaluate()


if __name__ == "__main__":
    main()
