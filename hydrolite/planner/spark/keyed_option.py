"""The run option `keyed_state` (`FlowRunner(keyed_state=...)`, `--keyed-state`): whether
eligible keyed state goes to the executors and to Spark's native aggregation, and why not
(`placement.place_all` places by it)."""

from __future__ import annotations

#: the run option `keyed_state` (`FlowRunner`, `--keyed-state`)
KEYED_STATE = ("auto", "executors", "driver")


def resolve_keyed_state(option: str, master: str) -> tuple[bool, str | None]:
    """(whether eligible keyed state goes to the executors, the reason when not) for a run
    option and a Spark master URL.

    `auto` chooses by measurement: on a local master the executors share the driver's cores,
    and there the driver's store answered the key-value store about 6x faster than the
    `transformWithStateInPandas` path (3,349 vs 528 rows/s, 5 x 6,000 rows over 10k keys, and
    `benchmarks/bench_state_paths.py`); the Row-based `transformWithState` processor that
    replaced it measured 3.05x faster (README, "Keyed state on the executors"), which still
    leaves the driver ahead (not re-measured side by side); on a cluster master (including
    `local-cluster`) the executor path scales with the executors while the driver's does not.
    """
    if option == "executors":
        return True, None
    if option == "driver":
        return False, None
    if master.startswith("local") and not master.startswith("local-cluster"):
        return False, (
            f"keyed_state='auto' on the local master {master!r}: the executors share the driver's cores and the "
            "driver store is faster there (--keyed-state executors to partition it anyway)"
        )
    return True, None


def resolve_native(option: str) -> bool:
    """Whether eligible algebraic keyed state goes to Spark's native streaming aggregation
    under a run option: always but with `driver`. On a local master too (`auto`): there it
    was faster than the driver store (README.md, "Native aggregation")."""
    return option != "driver"
