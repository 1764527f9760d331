"""Streaming query listeners whose events cross from the JVM as one JSON string each.

PySpark hands a Python `StreamingQueryListener` each event by walking the JVM event object
over Py4J: a few dozen calls per progress event, and every Java map or list in it (the
durations, each source's metrics, each state operator's custom metrics) is read with a Py4J
iterator that ends by raising `NoSuchElementException` in the JVM. PySpark converts each of
those exceptions and, to classify it, asks the JVM about fourteen exception classes through
`jvm.py4j.reflection.TypeUtil`, whose package names the JVM first looks up as classes on the
whole classpath. On this machine a listener that does nothing cost the listener thread about
13 s of CPU over a 70 s test run of 48 micro-batches (`hydrolite run` attaches two: its
progress line and its metrics).

`JsonEventListener` keeps PySpark's listener API and its event classes, but its events come
as the event's own JSON (`event.json()` in the JVM, one Py4J call) read by the same
`fromJson` constructors Spark Connect uses: no iterator, no exception. On Spark Connect,
PySpark never reads `_jlistener`: events arrive there as JSON already.

    >>> class Rows(JsonEventListener):  # then: spark.streams.addListener(Rows())
    ...     rows = 0
    ...     def onQueryStarted(self, event): print("started", event.name)
    ...     def onQueryProgress(self, event): self.rows += event.progress.numInputRows
    ...     def onQueryTerminated(self, event): print(self.rows, "rows")
    >>> isinstance(Rows(), StreamingQueryListener)
    True
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from .ckfs import java_class


class _JsonEvents:
    """The Py4J proxy the JVM calls (`PythonStreamingQueryListener`): one JSON string per event."""

    def __init__(self, listener: StreamingQueryListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        self.listener.onQueryStarted(QueryStartedEvent.fromJson(json.loads(jevent.json())))

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.onQueryProgress(QueryProgressEvent.fromJson(json.loads(jevent.json())))

    def onQueryIdle(self, jevent: Any) -> None:
        self.listener.onQueryIdle(QueryIdleEvent.fromJson(json.loads(jevent.json())))

    def onQueryTerminated(self, jevent: Any) -> None:
        self.listener.onQueryTerminated(QueryTerminatedEvent.fromJson(json.loads(jevent.json())))

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


class JsonEventListener(StreamingQueryListener):
    """A `StreamingQueryListener` (same methods, same event classes) whose events the JVM
    sends as JSON; register it with `spark.streams.addListener` as usual."""

    @property
    def _jlistener(self) -> Any:  # PySpark's (classic) `addListener` / `removeListener` read this
        from pyspark import SparkContext

        if "_jlistenerobj" not in vars(self):
            jvm: Any = SparkContext._jvm
            assert jvm is not None, "no SparkContext: create the SparkSession first"
            wrapper = java_class(jvm, "org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper")
            self._jlistenerobj = wrapper(_JsonEvents(self))
        return self._jlistenerobj
