"""One read-only pass over a libcst tree that builds the `ModuleModel`.

libcst's own visitor rebuilds every node it passes (it is shared with transformers) and
its metadata providers each walk the tree again; this walker only reads fields, in
source order, and records the few facts the checks need.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from .model import (
    ArgSlot,
    Binding,
    BindingKind,
    CallInfo,
    ModuleModel,
    NameUse,
    Scope,
    ScopeKind,
    StmtPath,
)

_SKIP_FIELDS = frozenset(
    "lpar rpar comma semicolon leading_lines lines_after_decorators header footer dot colon "
    "equal star operator trailing_whitespace lbracket rbracket lbrace rbrace asynchronous "
    "first_line empty_lines indent newline".split()
)
_LEAVES = (cst.BaseParenthesizableWhitespace, cst.Newline, cst.EmptyLine, cst.TrailingWhitespace, cst.Comment)
_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def fields_of(tp: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of a node type that can hold expressions or statements, in declaration order."""
    names = _FIELDS.get(tp)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(tp) if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[tp] = names
    return names


def build_model(module: cst.Module, reexports: Sequence[str] = ()) -> ModuleModel:
    """Walk `module` once and return its model."""
    walker = _Walker(module)
    walker.visit_block(module, module.body)
    return ModuleModel(
        module=module,
        root=walker.root,
        scopes=walker.scopes,
        calls=walker.calls,
        assigned=walker.assigned,
        uses=walker.uses,
        import_names=walker.import_names,
        global_anywhere=walker.global_anywhere,
        reexports=tuple(reexports),
    )


class _Walker:
    def __init__(self, module: cst.Module) -> None:
        self.root = Scope(ScopeKind.MODULE, None, module)
        self.scope = self.root
        self.scopes = [self.root]
        self.assigned: dict[int, Binding] = {}
        self.order = 0
        self.loops: tuple[int, ...] = ()
        self.path: StmtPath = ()
        self.stmt: cst.CSTNode | None = None
        self.small: cst.CSTNode | None = None
        self.calls: list[CallInfo] = []
        self.uses: dict[str, list[NameUse]] = {}
        self.import_names: set[str] = set()
        self.global_anywhere: set[str] = set()
        self.slots: dict[int, ArgSlot] = {}
        self.context: dict[int, str] = {}
        self.dispatch: dict[type[cst.CSTNode], Callable[[Any], None]] = {
            cst.Name: self.visit_name,
            cst.Call: self.visit_call,
            cst.Attribute: lambda n: self.visit(n.value),
            cst.IndentedBlock: lambda n: self.visit_block(n, n.body),
            cst.SimpleStatementLine: self.visit_simple_line,
            cst.Assign: self.visit_assign,
            cst.AnnAssign: self.visit_ann_assign,
            cst.AugAssign: self.visit_aug_assign,
            cst.NamedExpr: self.visit_named_expr,
            cst.Expr: self.visit_expr_stmt,
            cst.Return: self.visit_return,
            cst.Import: self.visit_import,
            cst.ImportFrom: self.visit_import_from,
            cst.Global: self.visit_global,
            cst.Nonlocal: self.visit_nonlocal,
            cst.FunctionDef: self.visit_function,
            cst.ClassDef: self.visit_class,
            cst.Lambda: self.visit_lambda,
            cst.For: self.visit_for,
            cst.While: self.visit_while,
            cst.With: self.visit_with,
            cst.ExceptHandler: self.visit_except,
            cst.Del: lambda n: self.bind_target(n.target, BindingKind.OTHER, None),
            cst.IfExp: lambda n: self.visit_all((n.body, n.test, n.orelse)),
            cst.Arg: lambda n: self.visit(n.value),
            cst.MatchAs: self.visit_match_as,
            cst.MatchStar: self.visit_match_star,
            cst.MatchMapping: self.visit_match_mapping,
            cst.MatchKeywordElement: lambda n: self.visit(n.pattern),
        }
        for comp in _COMPREHENSIONS:
            self.dispatch[comp] = self.visit_comprehension

    # ---------------------------------------------------------------- generic
    def visit(self, node: cst.CSTNode | None) -> None:
        if node is None or isinstance(node, _LEAVES):
            return
        handler = self.dispatch.get(type(node))
        if handler is not None:
            handler(node)
            return
        for name in fields_of(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.visit(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        self.visit(item)

    def visit_all(self, nodes: Sequence[cst.CSTNode | None]) -> None:
        for node in nodes:
            self.visit(node)

    def tick(self) -> int:
        self.order += 1
        return self.order

    def visit_block(self, owner: cst.CSTNode, body: Sequence[cst.CSTNode]) -> None:
        saved = self.path
        for index, stmt in enumerate(body):
            self.path = (*saved, (id(owner), index))
            self.visit(stmt)
        self.path = saved

    def visit_simple_line(self, node: cst.SimpleStatementLine) -> None:
        saved = self.stmt, self.small
        self.stmt = node
        for small in node.body:
            self.small = small
            self.visit(small)
        self.stmt, self.small = saved

    # ---------------------------------------------------------------- names
    def visit_name(self, node: cst.Name) -> None:
        use = NameUse(node, self.scope, self.tick(), self.slots.get(id(node)), self.path, self.loops)
        self.uses.setdefault(node.value, []).append(use)

    def bind(
        self,
        name: cst.Name,
        kind: BindingKind,
        *,
        value: cst.BaseExpression | None = None,
        qualname: str | None = None,
        annotation: cst.BaseExpression | None = None,
        definition: cst.FunctionDef | None = None,
    ) -> Binding:
        binding = Binding(
            name.value,
            kind,
            self.scope,
            self.tick(),
            name,
            value=value,
            qualname=qualname,
            annotation=annotation,
            definition=definition,
            stmt=self.stmt,
            small_stmt=self.small,
            path=self.path,
            loops=self.loops,
        )
        self.scope.bindings.setdefault(name.value, []).append(binding)
        if kind is BindingKind.ASSIGN and binding.value is not None:
            self.assigned[id(binding.value)] = binding
        return binding

    def bind_target(self, target: cst.BaseExpression, kind: BindingKind, value: cst.BaseExpression | None) -> None:
        """Bind every name in an assignment target; reads inside it (a.b, a[i]) are visited."""
        if isinstance(target, cst.Name):
            self.bind(target, kind, value=value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values: Sequence[cst.BaseExpression | None]
            if (
                isinstance(value, (cst.Tuple, cst.List))
                and len(value.elements) == len(elements)
                and not any(isinstance(e, (cst.StarredElement)) for e in (*target.elements, *value.elements))
            ):
                values, inner = [e.value for e in value.elements], kind
            else:
                values = [value] * len(elements)
                inner = BindingKind.UNPACK if value is not None else kind
            for element, element_value in zip(elements, values):
                self.bind_target(element, inner, element_value)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, BindingKind.OTHER, None)
        else:
            self.visit(target)

    # ---------------------------------------------------------------- statements
    def visit_assign(self, node: cst.Assign) -> None:
        self.context[id(node.value)] = "assign"
        if isinstance(node.value, (cst.Tuple, cst.List)):  # a, b = nondet("..."), other
            for element in node.value.elements:
                self.context[id(element.value)] = "assign"
        self.visit(node.value)
        for target in node.targets:
            self.bind_target(target.target, BindingKind.ASSIGN, node.value)

    def visit_ann_assign(self, node: cst.AnnAssign) -> None:
        self.visit(node.annotation.annotation)
        if node.value is not None:
            self.context[id(node.value)] = "assign"
            self.visit(node.value)
            if isinstance(node.target, cst.Name):
                self.bind(node.target, BindingKind.ASSIGN, value=node.value, annotation=node.annotation.annotation)
                return
            self.bind_target(node.target, BindingKind.OTHER, None)
        elif not isinstance(node.target, cst.Name):
            self.visit(node.target)  # `x.attr: int` reads x; a bare `name: int` binds nothing

    def visit_aug_assign(self, node: cst.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, cst.Name):
            self.visit_name(node.target)
        self.bind_target(node.target, BindingKind.OTHER, None)

    def visit_named_expr(self, node: cst.NamedExpr) -> None:
        self.context[id(node.value)] = "assign"
        self.visit(node.value)
        if isinstance(node.target, cst.Name):
            scope = self.scope
            while scope.kind is ScopeKind.COMPREHENSION and scope.parent is not None:
                scope = scope.parent  # PEP 572: the walrus binds in the enclosing scope
            saved, self.scope = self.scope, scope
            self.bind(node.target, BindingKind.ASSIGN, value=node.value)
            self.scope = saved

    def visit_expr_stmt(self, node: cst.Expr) -> None:
        self.context[id(node.value)] = "statement"
        self.visit(node.value)

    def visit_return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.context[id(node.value)] = "return"
            self.visit(node.value)

    def visit_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind_import(alias.asname.name, full)
            else:
                head: cst.BaseExpression = alias.name
                while isinstance(head, cst.Attribute):
                    head = head.value
                if isinstance(head, cst.Name):
                    self.bind_import(head, head.value)

    def visit_import_from(self, node: cst.ImportFrom) -> None:
        module = _dotted_name(node.module) if node.module is not None and not node.relative else None
        if isinstance(node.names, cst.ImportStar):
            if module is not None:
                self.scope.star_imports.append(module)
            return
        for alias in node.names:
            target = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(target, cst.Name):
                imported = _dotted_name(alias.name)
                self.bind_import(target, f"{module}.{imported}" if module else None)

    def bind_import(self, name: cst.Name, qualname: str | None) -> None:
        self.import_names.add(name.value)
        self.bind(name, BindingKind.IMPORT, qualname=qualname)

    def visit_global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scope.globals.add(item.name.value)
            self.global_anywhere.add(item.name.value)

    def visit_nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.scope.nonlocals.add(item.name.value)

    def visit_function(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            self.visit(decorator.decorator)
        self.visit_param_defaults(node.params)
        if node.returns is not None:
            self.visit(node.returns.annotation)
        self.bind(node.name, BindingKind.DEF, definition=node)
        self.in_scope(ScopeKind.FUNCTION, node, lambda: self.bind_params(node.params, node.body))

    def visit_lambda(self, node: cst.Lambda) -> None:
        self.visit_param_defaults(node.params)
        self.in_scope(ScopeKind.LAMBDA, node, lambda: self.bind_params(node.params, node.body))

    def visit_param_defaults(self, params: cst.Parameters) -> None:
        for param in _all_params(params):
            if param.annotation is not None:
                self.visit(param.annotation.annotation)
            self.visit(param.default)

    def bind_params(self, params: cst.Parameters, body: cst.CSTNode) -> None:
        for param in _all_params(params):
            annotation = param.annotation.annotation if param.annotation is not None else None
            self.bind(param.name, BindingKind.PARAM, annotation=annotation)
        self.visit(body)

    def visit_class(self, node: cst.ClassDef) -> None:
        for decorator in node.decorators:
            self.visit(decorator.decorator)
        self.visit_all([a.value for a in (*node.bases, *node.keywords)])
        self.bind(node.name, BindingKind.CLASS)
        self.in_scope(ScopeKind.CLASS, node, lambda: self.visit(node.body))

    def in_scope(self, kind: ScopeKind, node: cst.CSTNode, body: Callable[[], object]) -> None:
        saved = self.scope, self.loops, self.stmt, self.small
        self.scope = Scope(kind, self.scope, node)
        self.scopes.append(self.scope)
        self.loops = () if kind is not ScopeKind.COMPREHENSION else self.loops
        self.stmt = self.small = None
        body()
        self.scope, self.loops, self.stmt, self.small = saved

    def visit_for(self, node: cst.For) -> None:
        self.visit(node.iter)
        saved = self.loops
        self.loops = (*saved, id(node))
        self.bind_target(node.target, BindingKind.OTHER, None)
        self.visit(node.body)
        self.loops = saved
        self.visit(node.orelse)

    def visit_while(self, node: cst.While) -> None:
        saved = self.loops
        self.loops = (*saved, id(node))
        self.visit(node.test)
        self.visit(node.body)
        self.loops = saved
        self.visit(node.orelse)

    def visit_with(self, node: cst.With) -> None:
        for item in node.items:
            self.visit(item.item)
            if item.asname is not None:
                self.bind_target(item.asname.name, BindingKind.OTHER, None)
        self.visit(node.body)

    def visit_except(self, node: cst.ExceptHandler) -> None:
        self.visit(node.type)
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.bind(node.name.name, BindingKind.OTHER)
        self.visit(node.body)

    def visit_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        self.visit(node.for_in.iter)  # the first iterable runs in the enclosing scope

        def body() -> None:
            self.loops = (*self.loops, id(node))
            for_in: cst.CompFor | None = node.for_in
            first = True
            while for_in is not None:
                if not first:
                    self.visit(for_in.iter)
                self.bind_target(for_in.target, BindingKind.OTHER, None)
                self.visit_all([c.test for c in for_in.ifs])
                for_in, first = for_in.inner_for_in, False
            if isinstance(node, cst.DictComp):
                self.visit_all((node.key, node.value))
            else:
                self.visit(node.elt)

        self.in_scope(ScopeKind.COMPREHENSION, node, body)

    def visit_match_as(self, node: cst.MatchAs) -> None:
        self.visit(node.pattern)
        if node.name is not None:
            self.bind(node.name, BindingKind.OTHER)

    def visit_match_star(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.bind(node.name, BindingKind.OTHER)

    def visit_match_mapping(self, node: cst.MatchMapping) -> None:
        for element in node.elements:
            self.visit_all((element.key, element.pattern))
        if node.rest is not None:
            self.bind(node.rest, BindingKind.OTHER)

    # ---------------------------------------------------------------- calls
    def visit_call(self, node: cst.Call) -> None:
        context = self.context.pop(id(node), None)
        slot = self.slots.get(id(node))
        info = CallInfo(
            node, self.scope, self.tick(), slot, "arg" if slot else context or "expression", self.path, self.loops
        )
        self.calls.append(info)
        positional = 0
        for arg in node.args:
            index: int | None = None
            if arg.keyword is None and not arg.star:
                index, positional = positional, positional + 1
            for expr in _branches(arg.value):
                if isinstance(expr, (cst.Call, cst.Name)):
                    self.slots[id(expr)] = ArgSlot(info, arg, index)
        self.visit(node.func)
        for arg in node.args:
            self.visit(arg.value)


def _branches(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a if c else b` counts as writing both a and b in the argument position."""
    if isinstance(expr, cst.IfExp):
        return [*_branches(expr.body), *_branches(expr.orelse)]
    return [expr]


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""
