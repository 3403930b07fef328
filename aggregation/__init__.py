"""Post-hoc aggregation of InstructEval results (import name ``instructeval_aggregation``)."""
