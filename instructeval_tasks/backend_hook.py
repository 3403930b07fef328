"""The registration hook under its import path of earlier releases (and of the ``.pth`` line they
installed): the names of :mod:`instructeval_tasks.backend.hook`, and
``python -m instructeval_tasks.backend_hook <lm_eval args>`` runs its ``main``."""

from .backend.hook import MODEL_NAME, TARGET, _installed, _RegisterAfterImport, install, main, register, uninstall  # noqa: F401

if __name__ == "__main__":
    main()
