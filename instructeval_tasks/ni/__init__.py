"""Super-NaturalInstructions (Wang et al., 2022) as harness tasks, scored as the benchmark scores them.

One module per idea:

- :mod:`.names`: the task files the plugin ships YAMLs for, their harness-safe ids (``ni_<task>``)
  and evaluation categories;
- :mod:`.metrics`: the benchmark's exact match and ROUGE-L of one prediction (``evaluation.py``).
"""
