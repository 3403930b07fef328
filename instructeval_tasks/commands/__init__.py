"""Sub-commands of the ``instructeval`` CLI, one module each."""
