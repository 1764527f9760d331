"""The Spark planner: stages (queries), translation to DataFrames, state, ports, exactly-once."""
