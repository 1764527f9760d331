"""Small programs exercising the alignment pass, one per fixture file."""

from __future__ import annotations

from collections.abc import Callable

import hydrolite as hl
from hydrolite import nondet


class Server:
    pass


class Client:
    pass


class Workers:
    pass


def fold_two_ticks() -> hl.Flow:
    """One fold snapshotted aligned in two ticks: both ticks merge and read one version."""
    flow = hl.FlowBuilder("fold_two_ticks")
    p = flow.process(Server)
    xs = p.source("xs", int)
    total = xs.fold(0, lambda a, x: a + x)
    align = p.local_align_point()
    t1, t2 = p.tick(), p.tick()
    a = total.snapshot_aligned(t1, align, nondet("any version, as long as both reads agree"))
    b = total.snapshot_aligned(t2, align, nondet("any version, as long as both reads agree"))
    a.into_stream().all_ticks().sink("a")
    b.into_stream().all_ticks().sink("b")
    return flow.finalize()


def batch_and_snapshot_shared_source() -> hl.Flow:
    """batch_aligned of a stream and snapshot_aligned of a fold, both from one source."""
    flow = hl.FlowBuilder("batch_and_snapshot")
    p = flow.process(Server)
    events = p.source("events", int)
    evens = events.filter(lambda x: x % 2 == 0)
    count = events.count()
    align = p.local_align_point()
    tick = p.tick()
    batch = evens.batch_aligned(tick, align, nondet("any prefix of events, consistent with the count"))
    seen = count.snapshot_aligned(tick, align, nondet("the count of the same prefix"))
    batch.cross_singleton(seen).all_ticks().sink("evens_with_count")
    return flow.finalize()


def map_filter_chain() -> hl.Flow:
    """map/filter chains between the source and the uses: the frontier is the last shared node."""
    flow = hl.FlowBuilder("chain")
    p = flow.process(Server)
    raw = p.source("raw", str)
    parsed = raw.map(lambda s: s.strip()).filter(lambda s: s != "").map(lambda s: int(s))
    total = parsed.map(lambda x: x * 2).fold(0, lambda a, x: a + x)
    align = p.local_align_point()
    parsed.filter(lambda x: x > 0).release_aligned(align).sink("acks")
    tick = p.tick()
    q = p.source("q", int)
    (
        q.batch(tick, nondet("queries in any grouping"))
        .cross_singleton(total.snapshot_aligned(tick, align, nondet("consistent with released acks")))
        .all_ticks()
        .sink("answers")
    )
    return flow.finalize()


def cluster_counter() -> hl.Flow:
    """The counter on every member of a cluster: alignment holds per member."""
    flow = hl.FlowBuilder("cluster_counter")
    workers = flow.cluster(Workers)
    inc = workers.source("inc", str)
    align = workers.local_align_point()
    count = inc.count()
    inc.release_aligned(align).sink("acks")
    tick = workers.tick()
    q = workers.source("q", str)
    (
        q.batch(tick, nondet("queries in any grouping"))
        .cross_singleton(count.snapshot_aligned(tick, align, nondet("consistent with acks")))
        .all_ticks()
        .sink("answers")
    )
    return flow.finalize()


def received_stream_aligned() -> hl.Flow:
    """Aligning on a stream after it arrived over the network is fine: it is local there."""
    flow = hl.FlowBuilder("received")
    client, server = flow.process(Client), flow.process(Server)
    arrived = client.source("ops", int).send(server)
    align = server.local_align_point()
    total = arrived.fold(0, lambda a, x: a + x)
    arrived.release_aligned(align).sink("acks")
    tick = server.tick()
    total.snapshot_aligned(tick, align, nondet("consistent with acks")).into_stream().all_ticks().sink("totals")
    return flow.finalize()


def explicit_mode() -> hl.Flow:
    """aligned_at marks the only upstream that counts; the other shared source is ignored."""
    flow = hl.FlowBuilder("explicit")
    p = flow.process(Server)
    align = p.local_align_point()
    inc = p.source("inc", int).aligned_at(align)
    config = p.source("config", int)
    count = inc.fold(0, lambda a, x: a + x)
    both = count.zip(config.count())
    inc.release_aligned(align).sink("acks")
    tick = p.tick()
    both.snapshot_aligned(tick, align, nondet("consistent with acks")).into_stream().all_ticks().sink("reads")
    return flow.finalize()


def network_only_shared() -> hl.Flow:
    """The only shared upstream is on the client, behind two sends: an error."""
    flow = hl.FlowBuilder("network")
    client, server = flow.process(Client), flow.process(Server)
    ops = client.source("ops", int)
    a = ops.send(server)
    b = ops.map(lambda x: x + 1).send(server)
    align = server.local_align_point()
    tick = server.tick()
    a.release_aligned(align).sink("acks")
    b.fold(0, lambda s, x: s + x).snapshot_aligned(tick, align, nondet("consistent")).into_stream().all_ticks().sink(
        "out"
    )
    return flow.finalize()


def explicit_network_marker() -> hl.Flow:
    """Explicit mode: the marked stream reaches the uses only by a round trip over the network."""
    flow = hl.FlowBuilder("explicit_network")
    client, server = flow.process(Client), flow.process(Server)
    align = server.local_align_point()
    marked = server.source("ops", int).aligned_at(align)
    back = marked.send(client).send(server)
    tick = server.tick()
    back.release_aligned(align).sink("acks")
    back.count().snapshot_aligned(tick, align, nondet("consistent")).into_stream().all_ticks().sink("out")
    return flow.finalize()


def unrelated_uses() -> hl.Flow:
    """Two uses of a point that share nothing: an error."""
    flow = hl.FlowBuilder("unrelated")
    p = flow.process(Server)
    align = p.local_align_point()
    p.source("a", int).release_aligned(align).sink("acks")
    tick = p.tick()
    p.source("b", int).count().snapshot_aligned(tick, align, nondet("x is fine")).into_stream().all_ticks().sink("out")
    return flow.finalize()


def only_release() -> hl.Flow:
    """A point used only by release_aligned: a warning, and nothing changes."""
    flow = hl.FlowBuilder("only_release")
    p = flow.process(Server)
    align = p.local_align_point()
    p.source("a", int).release_aligned(align).sink("acks")
    return flow.finalize()


def single_read() -> hl.Flow:
    """A point with one aligned read and no release: a warning."""
    flow = hl.FlowBuilder("single_read")
    p = flow.process(Server)
    align = p.local_align_point()
    tick = p.tick()
    p.source("a", int).count().snapshot_aligned(tick, align, nondet("any version")).into_stream().all_ticks().sink(
        "out"
    )
    p.local_align_point()  # never used
    return flow.finalize()


def counter() -> hl.Flow:
    from examples.counter import build

    return build()


def counter_naive() -> hl.Flow:
    from examples.counter_naive import build

    return build()


FIXTURE_PROGRAMS: dict[str, Callable[[], hl.Flow]] = {
    "counter": counter,
    "counter_naive": counter_naive,
    "fold_two_ticks": fold_two_ticks,
    "batch_and_snapshot_shared_source": batch_and_snapshot_shared_source,
    "map_filter_chain": map_filter_chain,
    "cluster_counter": cluster_counter,
    "received_stream_aligned": received_stream_aligned,
    "explicit_mode": explicit_mode,
    "only_release": only_release,
    "single_read": single_read,
}

ERROR_PROGRAMS: dict[str, Callable[[], hl.Flow]] = {
    "network_only_shared": network_only_shared,
    "explicit_network_marker": explicit_network_marker,
    "unrelated_uses": unrelated_uses,
}
