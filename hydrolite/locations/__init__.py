"""Locations (Process, Cluster, Tick), markers and the flow builder."""
