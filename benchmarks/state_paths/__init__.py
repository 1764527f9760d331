"""The parts of `benchmarks/bench_state_paths.py` (keyed state on Spark, path by path).

    data     the generated Parquet inputs and the answers every path must write (pandas)
    jobs     the paths themselves: Spark's stateful APIs and hydrolite's programs
    memory   peak memory of the driver, the JVM and the Python workers, from /proc
    probes   capability probes (`--probe union|order`)

The script runs each path in its own process (`--worker`); Spark's Python workers cannot
import this package by name, so the worker registers it to be pickled by value.
"""
