from typing import Any

class Py4JError(Exception): ...

class Py4JJavaError(Py4JError):
    java_exception: Any
