# py4j (PySpark's bridge to the JVM) ships no type information; these stubs cover the two
# names hydrolite imports from it (planner/spark/ckfs.py).
