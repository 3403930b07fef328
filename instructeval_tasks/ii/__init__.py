"""Instruction Induction (Honovich et al., 2022) as harness tasks: execution accuracy of an instruction.

One module per idea:

- :mod:`.names`: the 24 tasks, their harness-safe ids (``ii_<task>``) and the original's
  ``TASK_TO_METRIC`` / ``TASK_TO_ANSWERS`` tables;
- :mod:`.source`: where the raw files are (``data_dir`` or the pinned download location);
- :mod:`.examples`: raw examples -> evaluation rows (input, answers), as ``prepare_for_execution.py``;
- :mod:`.prompt`: the execution prompt ``Instruction: {instruction}\\nInput: {input}\\nOutput:``;
- :mod:`.metrics`: the original's normalisation and per-task metrics (``evaluate.py``), byte for byte;
- :mod:`.task`: ``InstructionInductionTask``, the harness task class of the YAMLs in
  ``instructeval_tasks/instruction_induction/``.
"""
