"""What the walker learns about one module: scopes, bindings, name uses and calls.

A deliberately small scope model (module / class / function / lambda / comprehension)
so qualified names resolve without libcst's ScopeProvider, which costs more than the
whole lint budget on a large file. Resolution is flow-aware in the common case: a use
sees the last binding of its name before it in the same scope.
"""

from __future__ import annotations

import builtins
import enum
from dataclasses import dataclass, field

import libcst as cst

BUILTIN_NAMES = frozenset(dir(builtins))

# Where a statement sits: one (block id, index) pair per enclosing statement block.
StmtPath = tuple[tuple[int, int], ...]


class ScopeKind(enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    LAMBDA = "lambda"
    COMPREHENSION = "comprehension"


class BindingKind(enum.Enum):
    IMPORT = "import"  # qualname set (None for relative imports)
    ASSIGN = "assign"  # value set: `name = value` (also walrus, elementwise tuple unpacking)
    UNPACK = "unpack"  # value is the whole right-hand side of a tuple unpacking
    PARAM = "param"  # annotation may be set
    DEF = "def"  # node is the FunctionDef
    CLASS = "class"
    OTHER = "other"  # for / with / except targets, augmented assignment, del, match ...


@dataclass(eq=False)
class Scope:
    """A Python scope: its bindings by name, plus global/nonlocal declarations."""

    kind: ScopeKind
    parent: Scope | None
    node: cst.CSTNode
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    star_imports: list[str] = field(default_factory=list)

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass(eq=False)
class Binding:
    """One place where a name gets a value."""

    name: str
    kind: BindingKind
    scope: Scope
    order: int
    node: cst.CSTNode  # the Name (or def/class) that binds
    value: cst.BaseExpression | None = None
    qualname: str | None = None
    annotation: cst.BaseExpression | None = None
    definition: cst.FunctionDef | None = None  # for DEF bindings
    stmt: cst.CSTNode | None = None  # the enclosing SimpleStatementLine, if any
    small_stmt: cst.CSTNode | None = None  # the Assign / AnnAssign itself
    path: StmtPath = ()
    loops: tuple[int, ...] = ()


@dataclass(eq=False)
class ArgSlot:
    """An expression written directly as an argument of a call."""

    call: CallInfo
    arg: cst.Arg
    index: int | None  # positional index, None for keywords and */** arguments


@dataclass(eq=False)
class NameUse:
    """A Name read (load context)."""

    node: cst.Name
    scope: Scope
    order: int
    slot: ArgSlot | None
    path: StmtPath
    loops: tuple[int, ...]


@dataclass(eq=False)
class CallInfo:
    """A call expression and where it sits."""

    node: cst.Call
    scope: Scope
    order: int
    slot: ArgSlot | None  # set when the call is written directly as another call's argument
    context: str  # "arg", "assign", "return", "statement" or "expression"
    path: StmtPath
    loops: tuple[int, ...]

    @property
    def method(self) -> str | None:
        """The attribute name for `x.method(...)` calls."""
        func = self.node.func
        return func.attr.value if isinstance(func, cst.Attribute) else None


@dataclass(eq=False)
class ModuleModel:
    """Everything the checks need, plus name resolution over it."""

    module: cst.Module
    root: Scope
    scopes: list[Scope]
    calls: list[CallInfo]
    assigned: dict[int, Binding]  # id(value expression) -> the ASSIGN binding it feeds
    uses: dict[str, list[NameUse]]
    import_names: set[str]
    global_anywhere: set[str]
    reexports: tuple[str, ...]
    _uses_by_binding: dict[str, dict[int, list[NameUse]]] = field(default_factory=dict)

    # ---------------------------------------------------------------- resolution
    def resolve(self, name: str, scope: Scope, order: int) -> Binding | None:
        """The binding a read of `name` at `order` in `scope` sees (None: builtin/unknown)."""
        current: Scope | None = scope
        innermost = True
        while current is not None:
            if current.kind is ScopeKind.CLASS and not innermost:
                current = current.parent
                continue
            if name in current.globals:
                current, innermost = current.module(), False
            if name in current.nonlocals:
                current, innermost = current.parent, False
                continue
            found = current.bindings.get(name)
            if found:
                return _pick(found, order if innermost else None)
            if current.parent is None and current.star_imports:
                return self._star_binding(name, current)
            current, innermost = current.parent, False
        return None

    def _star_binding(self, name: str, module: Scope) -> Binding | None:
        for source in module.star_imports:
            if self.canonical(source) == "hydrolite" and name in ("nondet", "NonDet"):
                return Binding(name, BindingKind.IMPORT, module, -1, module.node, qualname=f"hydrolite.{name}")
        return None

    def qualname(self, expr: cst.BaseExpression, scope: Scope, order: int) -> str | None:
        """The canonical dotted name `expr` refers to through imports, or None."""
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return None
        if expr.value not in self.import_names and not scope.module().star_imports:
            return None
        binding = self.resolve(expr.value, scope, order)
        if binding is None or binding.kind is not BindingKind.IMPORT or binding.qualname is None:
            return None
        return self.canonical(".".join([binding.qualname, *reversed(parts)]))

    def canonical(self, qualname: str) -> str:
        """Map a configured re-exporting module onto `hydrolite`."""
        for mod in self.reexports:
            if qualname == mod or qualname.startswith(mod + "."):
                return "hydrolite" + qualname[len(mod) :]
        return qualname

    def is_builtin_call(self, call: CallInfo) -> bool:
        """True for a call to an unshadowed builtin such as print() or str()."""
        func = call.node.func
        return (
            isinstance(func, cst.Name)
            and func.value in BUILTIN_NAMES
            and self.resolve(func.value, call.scope, call.order) is None
        )

    def uses_of(self, binding: Binding) -> list[NameUse]:
        """Every recorded read that resolves to `binding` (each name's reads are resolved once)."""
        table = self._uses_by_binding.get(binding.name)
        if table is None:
            table = self._uses_by_binding[binding.name] = {}
            for use in self.uses.get(binding.name, ()):
                found = self.resolve(binding.name, use.scope, use.order)
                if found is not None:
                    table.setdefault(id(found), []).append(use)
        return table.get(id(binding), [])

    def bindings_in(self, scope: Scope, name: str) -> list[Binding]:
        return scope.bindings.get(name, [])


def _pick(bindings: list[Binding], order: int | None) -> Binding:
    """The last binding before `order` (or the last one when the read runs later)."""
    if order is not None:
        before = [b for b in bindings if b.order < order]
        if before:
            return before[-1]
    return bindings[-1]


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def literal_text(expr: cst.BaseExpression) -> str | None:
    """The value of a str literal (plain, implicitly concatenated or expression-free f-string)."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.FormattedString):
        if all(isinstance(p, cst.FormattedStringText) for p in expr.parts):
            return "".join(p.value for p in expr.parts if isinstance(p, cst.FormattedStringText))
    return None
