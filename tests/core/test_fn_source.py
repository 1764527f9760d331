"""Finding a user function's expression from its source (`fn_source.function_ast`), which
`folds` and `projection` read to decide where state lives and `lambdas` translates."""

from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Callable
from typing import Any

from hydrolite.planner.spark.fn_source import function_ast


def _body(f: Callable[..., Any]) -> str | None:
    found = function_ast(f)
    return None if found is None else f"{', '.join(found.params)}: {ast.unparse(found.body)}"


def _traced(f: Callable[..., Any]) -> Callable[..., Any]:
    return f


def test_two_lambdas_on_one_line_are_told_apart() -> None:
    pair = (lambda a, b: a + b, lambda a, b: a * b)  # same line, same parameters
    assert [_body(f) for f in pair] == ["a, b: a + b", "a, b: a * b"]


def test_each_function_object_of_a_line_is_found() -> None:
    made = [lambda x, i=i: x + i for i in range(3)]  # a default: a second parameter
    assert {_body(f) for f in made} == {"x, i: x + i"}


def test_a_def_with_one_return_and_a_decorated_one() -> None:
    def newer(_old: int, new: int) -> int:
        """A docstring is not a statement that counts."""
        return new

    @_traced
    @functools.wraps(newer)
    def older(old: int, _new: int) -> int:
        return old

    def two(a: int) -> int:
        b = a + 1
        return b

    assert _body(newer) == "_old, new: new"
    assert _body(older) == "old, _new: old"
    assert _body(two) is None  # two statements: no single expression


def test_functions_without_a_source_expression() -> None:
    assert _body(len) is None  # a builtin
    assert _body(eval("lambda x: x")) is None  # no file
    assert _body(lambda *xs: xs) is None  # *args
    assert _body("a".join) is None  # a bound method


def test_code_whose_runner_registered_its_source_in_linecache() -> None:
    # IPython and Jupyter kernels compile each cell under a name that is no file and put the
    # cell's text in `linecache` with no modification time: its functions are found there
    name = "<hl-cell-test-1>"
    text = "f = lambda x: x * 2 + 1\n"
    linecache.cache[name] = (len(text), None, [text], name)
    try:
        scope: dict[str, Any] = {}
        exec(compile(text, name, "exec"), scope)
        assert _body(scope["f"]) == "x: x * 2 + 1"
    finally:
        del linecache.cache[name]
    # an entry `linecache` may reload from a file (it has a modification time) is not taken
    # for a file that is not there
    other = "<hl-cell-test-2>"
    linecache.cache[other] = (len(text), 1.0, [text], other)
    try:
        scope = {}
        exec(compile(text, other, "exec"), scope)
        assert _body(scope["f"]) is None
    finally:
        del linecache.cache[other]


def test_a_lambda_in_a_real_notebook_cell_is_found() -> None:
    import nbformat  # the dev extra: nbformat, nbclient and ipykernel
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("double = lambda x: x + x  # cell 1"),
        nbformat.v4.new_code_cell(
            "import ast\nfrom hydrolite.planner.spark.fn_source import function_ast\n"
            "found = function_ast(double)\nprint(found.params, ast.unparse(found.body))"
        ),
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert nb.cells[1].outputs[0]["text"] == "('x',) x + x\n"
