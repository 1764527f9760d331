"""The port plugin interface, for packages that add `--input` / `--output` schemes.

```python
from hydrolite.ports import PortPlugin, PortSpec, InputBinding, OutputBinding, SinkCtx
```

A plugin is a `PortPlugin` subclass declared in its package's metadata under the entry-point
group `hydrolite.ports` (the entry point's name is the scheme). See docs/ports.md for a
complete example and `hydrolite.planner.spark.port_api` for the contract. Importing this
module imports PySpark.
"""

from __future__ import annotations

from .planner.spark.port_api import (
    ENTRY_POINT_GROUP,
    InputBinding,
    OutputBinding,
    PortPlugin,
    PortSpec,
    PortSpecError,
    SinkCtx,
    arrow_schema,
    batch_arrow,
    collect_values,
    external_columns,
    external_schema,
    external_types,
    internal_columns,
)
from .planner.spark.port_registry import PortRegistry, known_schemes, registry
from .planner.spark.types import HType
from .planner.spark.values import SFrame

__all__ = [
    "ENTRY_POINT_GROUP",
    "HType",
    "InputBinding",
    "OutputBinding",
    "PortPlugin",
    "PortRegistry",
    "PortSpec",
    "PortSpecError",
    "SFrame",
    "SinkCtx",
    "arrow_schema",
    "batch_arrow",
    "collect_values",
    "external_columns",
    "external_schema",
    "external_types",
    "internal_columns",
    "known_schemes",
    "registry",
]
