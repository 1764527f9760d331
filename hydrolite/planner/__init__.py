"""Backends that run a hydrolite program: `hydrolite.planner.spark` lowers it to Apache Spark."""
