"""lm-eval's own tasks with an instruction (``instructeval run --harness-tasks``): names, configs, local data.

``tasks``: resolve ``NAME[:NSHOT]`` lists (tasks, groups, tags), the stock config, the instructed
config (the instruction placed as the task's description), the task object and its scored rows.
``local_data``: read a stock task's splits from ``--data-dir`` (``local_data.yaml``).
"""
