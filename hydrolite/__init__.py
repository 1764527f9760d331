"""hydrolite: typed, consistent stream-processing pipelines, simulated in Python and run on Spark.

Build a program with `FlowBuilder`, locations (`Process`, `Cluster`, `Tick`) and live
collections (`Stream`, `KeyedStream`, `Singleton`, `OptionalSingleton`, `KeyedSingleton`);
`FlowBuilder.finalize()` returns the program's IR (`Flow`).
"""

from .errors import BuildError, FlowError, HydroliteError
from .ir.graph import Flow
from .live.cycles import TickCycle
from .live.keyed_singleton import KeyedSingleton
from .live.keyed_stream import KeyedStream
from .live.ports import SinkPort
from .live.singleton import OptionalSingleton, Singleton
from .live.stream import Stream
from .locations.flow import FlowBuilder
from .locations.locations import Cluster, LocalAlignPoint, Location, MemberId, Process, Tick, TopLevel
from .locations.markers import Bounded, Boundedness, NoOrder, Ordering, TotalOrder, Unbounded
from .nondet import NonDet, nondet

__all__ = [
    "Bounded",
    "Boundedness",
    "BuildError",
    "Cluster",
    "Flow",
    "FlowBuilder",
    "FlowError",
    "HydroliteError",
    "KeyedSingleton",
    "KeyedStream",
    "LocalAlignPoint",
    "Location",
    "MemberId",
    "NoOrder",
    "NonDet",
    "OptionalSingleton",
    "Ordering",
    "Process",
    "SinkPort",
    "Singleton",
    "Stream",
    "Tick",
    "TickCycle",
    "TopLevel",
    "TotalOrder",
    "Unbounded",
    "nondet",
]
__version__ = "0.1.0"
