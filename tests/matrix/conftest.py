"""The matrix uses the session-wide `spark` fixture of tests/conftest.py (one SparkSession,
created only when a spark case runs); each spark case gets its own `SparkHarness`."""
