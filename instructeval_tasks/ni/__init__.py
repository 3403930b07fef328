"""Super-NaturalInstructions (Wang et al., 2022) as harness tasks, scored as the benchmark scores them.

One module per idea:

- :mod:`.names`: the task files the plugin ships YAMLs for, their harness-safe ids (``ni_<task>``)
  and evaluation categories;
- :mod:`.source`: reading and checking a task file, ``<data_dir>/natural_instructions/tasks/<task>.json``;
- :mod:`.prompt`: the task's own header rendered through the schema's encodings, and the test block;
- :mod:`.metrics`: the benchmark's exact match and ROUGE-L of one prediction (``evaluation.py``);
- :mod:`.task`: ``NaturalInstructionsTask``, the harness task class of the YAMLs in
  ``instructeval_tasks/natural_instructions/``.
"""
