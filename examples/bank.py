"""Per-account balances and the bank's total, read consistently in one tick.

Both are folds over one ledger of (account, delta) entries. An audit compares the sum of
the balances with the total: with `snapshot_aligned` at one align point both reflect the
same ledger prefix, so they always agree; two plain `snapshot`s could pick different versions.
"""

from __future__ import annotations

import hydrolite as hl
from hydrolite import nondet

Account = str


class Bank:
    """Tag of the bank process."""


def build() -> hl.Flow:
    """Build the bank program."""
    flow = hl.FlowBuilder("bank")
    bank = flow.process(Bank)
    deposits = bank.source("deposit", tuple[Account, int])  # (account, amount)
    transfers = bank.source("transfer", tuple[Account, Account, int])  # (from, to, amount)
    audits = bank.source("audit", str)  # auditor id

    ledger = deposits.merge_unordered(transfers.flat_map_ordered(lambda t: [(t[0], -t[2]), (t[1], t[2])]))
    balances = ledger.into_keyed().fold_commutative(0, lambda b, d: b + d)
    total = ledger.map(lambda e: e[1]).fold_commutative(0, lambda s, d: s + d)

    align = bank.local_align_point()
    tick = bank.tick()
    balance_sum = (
        balances.snapshot_aligned(
            tick, align, nondet("any ledger prefix, as long as balances and total see the same one")
        )
        .values()
        .fold_commutative(0, lambda s, b: s + b)
    )
    total_now = total.snapshot_aligned(tick, align, nondet("the same ledger prefix as the balances"))
    (
        audits.batch(tick, nondet("audits may be answered in any grouping"))
        .cross_singleton(balance_sum.zip(total_now))
        .all_ticks()
        .sink("audit_report")
    )
    return flow.finalize()


if __name__ == "__main__":
    print(build().dump())
