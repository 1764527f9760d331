"""Finding a user function's source as an `ast` expression (for `lambdas` and `folds`).

The source is found through the function's code object: its file, first line, and the
column positions of its instructions, so two lambdas on one line are told apart. Only a
lambda or a function whose body is a single `return` has an expression to translate. Code
with no file is found when its runner registered the text in `linecache` (a notebook cell);
code `exec`'d from a string is not, and its functions run as opaque Python.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FnAst:
    """A function's parameters and the expression it returns."""

    params: tuple[str, ...]
    body: ast.expr


_AST_CACHE: weakref.WeakKeyDictionary[Any, FnAst | None] = weakref.WeakKeyDictionary()
Fn = ast.Lambda | ast.FunctionDef
#: a module's lambdas and functions by the lines a code object may start on (a lambda's
#: line; a function's `def` line and its decorators' lines), per (path, modification time):
#: parsed and walked once, however many function objects of the module are looked up later
#: a notebook cell's source (no file) per (name, hash of its text)
_MODULES: dict[tuple[str, float | str], dict[int, list[Fn]] | None] = {}


def _module_index(path: str) -> dict[int, list[Fn]] | None:
    key: tuple[str, float | str]
    try:
        key = (path, os.path.getmtime(path))
        text = None
    except OSError:
        text = _registered_source(path)
        if text is None:
            return None
        key = (path, hashlib.sha1(text.encode()).hexdigest())
    if key not in _MODULES:
        try:
            tree = ast.parse(text if text is not None else "".join(linecache.getlines(path)))
        except SyntaxError:
            _MODULES[key] = None
            return None
        index: dict[int, list[Fn]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Lambda):
                index.setdefault(node.lineno, []).append(node)
            elif isinstance(node, ast.FunctionDef):
                for line in dict.fromkeys((node.lineno, *(d.lineno for d in node.decorator_list))):
                    index.setdefault(line, []).append(node)
        _MODULES[key] = index
    return _MODULES[key]


def _registered_source(name: str) -> str | None:
    """The text of code that has no file but whose source its runner registered in `linecache`
    with no modification time, as IPython and Jupyter kernels do for each cell: the entry
    cannot go stale, so a function defined in a notebook cell is translated as one in a file."""
    entry = linecache.cache.get(name)
    if entry is None or len(entry) != 4 or entry[1] is not None:
        return None
    return "".join(entry[2])


def function_ast(f: Callable[..., Any]) -> FnAst | None:
    """The parsed body of a lambda or single-`return` function, or None when not found."""
    try:
        return _AST_CACHE[f]
    except (KeyError, TypeError):
        pass
    found = _find_ast(f)
    try:
        _AST_CACHE[f] = found
    except TypeError:  # not weak-referenceable
        pass
    return found


def _find_ast(f: Callable[..., Any]) -> FnAst | None:
    code = getattr(f, "__code__", None)
    if code is None or getattr(f, "__self__", None) is not None:
        return None
    if code.co_flags & 0x0C or code.co_kwonlyargcount:  # *args / **kwargs / keyword-only
        return None
    index = _module_index(code.co_filename)
    if index is None:
        return None
    params = tuple(code.co_varnames[: code.co_argcount])
    cands = [
        c
        for c in index.get(code.co_firstlineno, [])
        if (isinstance(c, ast.Lambda) or c.name == code.co_name)
        and tuple(a.arg for a in c.args.args) == params
        and not c.args.posonlyargs
    ]
    if len(cands) > 1:
        pos = [
            (p[0], p[2])
            for p in code.co_positions()
            if p[0] is not None and p[2] is not None and (p[0], p[2]) != (p[1], p[3])
        ]
        cands = [c for c in cands if all(_inside(c, line, col) for line, col in pos)]
    if len(cands) != 1:
        return None
    c = cands[0]
    if isinstance(c, ast.Lambda):
        return FnAst(params, c.body)
    body = [s for s in c.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return FnAst(params, body[0].value)
    return None


def _inside(node: ast.AST, line: int, col: int) -> bool:
    start: tuple[int, int] = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end: tuple[int, int] = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return start <= (line, col) <= end
