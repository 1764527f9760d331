"""Spark settings the test sessions share (the `spark` fixture in conftest.py and the child
sessions some tests start, such as `tests/spark/s3a_runs.py`)."""

from __future__ import annotations

# A test session's queries evaluate expressions interpreted instead of compiling them to Java
# (Janino) first. Nearly every query a test starts is a new program with a few tiny batches,
# so Spark compiled code it then ran once or twice: in a Java Flight Recorder profile of the
# operator matrix on Spark, 20% of the JVM's samples were code generation. With these two
# settings the matrix's 34 Spark cases took 104-112 s of JVM CPU against 136-149 s, and
# 178-196 s of machine CPU against 223-239 s (one session each, 2 cores); the whole suite's
# pytest in a fresh-clone `.ci/run`, 1,297 s against 1,416-1,470 s before (with the worker
# launcher's shorter path, hydrolite/planner/spark/worker_python.py). Interpreted
# evaluation is Spark's own fallback path, with the same results; the CLI runs the tests start
# as subprocesses (exactly-once, local-cluster, metrics, ...) keep Spark's default, as users do.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
