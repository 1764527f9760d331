"""HL001-HL004 (the reason) and HL010-HL012 (where the token goes) for `nondet(...)`.

A nondet is hydrolite's written justification for one non-deterministic observation, so
it must say something real, be written at the call that makes the observation, and
justify exactly one such call.
"""

from __future__ import annotations

import libcst as cst

from hydrolite.nondet import is_placeholder

from .findings import Fix, Issue
from .model import BUILTIN_NAMES, ArgSlot, Binding, BindingKind, CallInfo, ModuleModel, ScopeKind, literal_text
from .rules import NON_NONDET_METHODS, NONDET_KEYWORD, NONDET_METHODS

NONDET_FUNCS = frozenset({"hydrolite.nondet", "hydrolite.nondet.nondet"})
NONDET_TYPES = frozenset({"hydrolite.NonDet", "hydrolite.nondet.NonDet"})

# Builtins that look at a token without consuming it (isinstance(nd, NonDet), print(nd), ...).
_INSPECTING_BUILTINS = frozenset(
    {
        "isinstance",
        "issubclass",
        "id",
        "repr",
        "str",
        "type",
        "hash",
        "getattr",
        "hasattr",
        "vars",
        "dir",
        "print",
        "format",
        "callable",
    }
)

_AT_CALL = 'write nondet("...") directly as the argument of the call that consumes it'


def is_nondet_call(model: ModuleModel, call: CallInfo) -> bool:
    """True when the call is hydrolite's nondet(), under any import alias."""
    return model.qualname(call.node.func, call.scope, call.order) in NONDET_FUNCS


def check_nondet(model: ModuleModel) -> list[Issue]:
    """Every HL00x/HL01x issue in the module."""
    issues: list[Issue] = []
    for call in model.calls:
        if not is_nondet_call(model, call):
            continue
        issues.extend(_reason_issues(model, call))
        if call.slot is not None:
            problem = consumer_problem(model, call.slot)
            if problem is not None:
                issues.append(Issue("HL012", problem, call.node))
        else:
            issues.append(_placement_issue(model, call))
    for binding in _token_bindings(model):
        issues.extend(_variable_issues(model, binding))
    return issues


# ---------------------------------------------------------------------- reason
def _reason_issues(model: ModuleModel, call: CallInfo) -> list[Issue]:
    args = call.node.args
    if any(a.star for a in args):
        return [
            Issue(
                "HL004",
                "nondet() reason is unpacked from */**; write the reason at the call as a string literal",
                call.node,
            )
        ]
    reason = next((a for a in args if a.keyword is None), None) or next(
        (a for a in args if a.keyword is not None and a.keyword.value == "reason"), None
    )
    if reason is None:
        return [
            Issue(
                "HL001",
                'nondet() has no reason; say why every outcome is acceptable, e.g. nondet("queries may be answered in any grouping")',
                call.node,
            )
        ]
    text = literal_text(reason.value)
    if text is None:
        fix = _inline_constant_fix(model, call, reason.value)
        return [
            Issue(
                "HL004",
                "nondet() reason is not a string literal; write the justification at the call, as a literal",
                reason.value,
                fix,
            )
        ]
    if not text.strip():
        return [Issue("HL002", "nondet() reason is empty; say why every outcome is acceptable here", reason.value)]
    if is_placeholder(text):
        return [
            Issue(
                "HL003",
                f"nondet() reason {text.strip()!r} is a placeholder; say why every outcome is acceptable here",
                reason.value,
            )
        ]
    return []


def _inline_constant_fix(model: ModuleModel, call: CallInfo, expr: cst.BaseExpression) -> Fix | None:
    """Fix for a reason held in a module-level string constant bound exactly once."""
    if not isinstance(expr, cst.Name) or expr.value in model.global_anywhere:
        return None
    binding = model.resolve(expr.value, call.scope, call.order)
    if (
        binding is None
        or binding.kind is not BindingKind.ASSIGN
        or binding.scope.kind is not ScopeKind.MODULE
        or len(binding.scope.bindings[binding.name]) != 1
        or not isinstance(binding.value, (cst.SimpleString, cst.ConcatenatedString))
        or literal_text(binding.value) is None
        or (call.scope is binding.scope and binding.order > call.order)
    ):
        return None
    # a copy: one node object must not sit at two places of the tree (positions, later fixes)
    return Fix(f"inline the constant {expr.value}", replace=((expr, binding.value.deep_clone()),))


# ---------------------------------------------------------------------- placement
def _placement_issue(model: ModuleModel, call: CallInfo) -> Issue:
    if call.context == "assign":
        binding = model.assigned.get(id(call.node))
        name = f" `{binding.name}`" if binding is not None else ""
        fix = _inline_variable_fix(model, call, binding) if binding is not None else None
        return Issue("HL010", f"nondet token stored in variable{name}; {_AT_CALL}", call.node, fix)
    if call.context == "return":
        return Issue("HL010", f"nondet token returned from a function; {_AT_CALL}", call.node)
    return Issue("HL010", f"nondet token is not passed directly to a call; {_AT_CALL}", call.node)


def _inline_variable_fix(model: ModuleModel, call: CallInfo, binding: Binding) -> Fix | None:
    """Move `nd = nondet("...")` into its single consumer when that is provably the same program.

    Required: a function-local name bound once, by a one-statement line without a trailing
    comment; a literal reason (no side effects to reorder); one read, in the same scope,
    as the nondet argument of a nondet-taking call inside a later statement of the same
    block and in no extra loop; and `nondet` still meaning hydrolite's nondet there.
    """
    scope, stmt = binding.scope, binding.stmt
    if (
        scope.kind is not ScopeKind.FUNCTION
        or len(scope.bindings[binding.name]) != 1
        or binding.name in scope.globals | scope.nonlocals
        or not isinstance(stmt, cst.SimpleStatementLine)
        or len(stmt.body) != 1
        or stmt.trailing_whitespace.comment is not None
        or not _assigns_exactly(binding, call.node)
        or any(literal_text(a.value) is None or a.star for a in call.node.args)
        or not binding.path
    ):
        return None
    uses = model.uses_of(binding)
    if len(uses) != 1:
        return None
    use = uses[0]
    depth = len(binding.path) - 1
    block, index = binding.path[-1]
    if (
        use.slot is None
        or use.scope is not scope
        or use.loops != binding.loops
        or len(use.path) <= depth
        or use.path[depth][0] != block
        or use.path[depth][1] <= index
        or use.slot.call.method not in NONDET_METHODS
        or consumer_problem(model, use.slot) is not None
        or model.qualname(call.node.func, use.scope, use.order) not in NONDET_FUNCS
    ):
        return None
    func = call.node.func
    if isinstance(func, cst.Name) and model.resolve(func.value, use.scope, use.order) is not model.resolve(
        func.value, call.scope, call.order
    ):
        return None
    return Fix(
        f"move nondet(...) into its consumer and drop `{binding.name}`",
        replace=((use.node, call.node.deep_clone()),),
        remove=(stmt,),
    )


def _assigns_exactly(binding: Binding, value: cst.Call) -> bool:
    """True for a statement that is exactly `name = value` or `name: T = value`."""
    small = binding.small_stmt
    if isinstance(small, cst.Assign):
        return len(small.targets) == 1 and small.targets[0].target is binding.node and small.value is value
    if isinstance(small, cst.AnnAssign):
        return small.target is binding.node and small.value is value
    return False


# ---------------------------------------------------------------------- consumers
def consumer_problem(model: ModuleModel, slot: ArgSlot) -> str | None:
    """Why the call in `slot` cannot take a nondet there, or None when it can (or may)."""
    call, arg = slot.call, slot.arg
    if arg.star:
        return None
    qualname = model.qualname(call.node.func, call.scope, call.order)
    if qualname is not None:
        if qualname == "hydrolite" or qualname.startswith("hydrolite."):
            return f"nondet passed to {qualname.rsplit('.', 1)[-1]}(), which does not take one"
        return None
    method = call.method
    if method is not None:
        if method in NONDET_METHODS:
            return _slot_problem(method, slot)
        if method in NON_NONDET_METHODS:
            return f"nondet passed to .{method}(), which does not take one (only batch, batch_aligned, snapshot, snapshot_aligned and assume_ordering do)"
        return None
    func = call.node.func
    if not isinstance(func, cst.Name):
        return None
    binding = model.resolve(func.value, call.scope, call.order)
    if binding is None:
        return f"nondet passed to {func.value}(), which does not take one" if func.value in BUILTIN_NAMES else None
    if binding.kind is BindingKind.DEF and binding.definition is not None:
        return _param_problem(model, binding, slot)
    return None


def _slot_problem(method: str, slot: ArgSlot) -> str | None:
    expected = NONDET_METHODS[method]
    keyword = slot.arg.keyword.value if slot.arg.keyword is not None else None
    if keyword is not None:
        if keyword == NONDET_KEYWORD:
            return None
        return f".{method}() takes its nondet as `nondet=`, not as `{keyword}=`"
    if slot.index != expected:
        return f".{method}() takes its nondet as argument {expected + 1} (or nondet=), not as argument {(slot.index or 0) + 1}"
    return None


def _param_problem(model: ModuleModel, binding: Binding, slot: ArgSlot) -> str | None:
    definition = binding.definition
    assert definition is not None
    params = definition.params
    param: cst.Param | None = None
    if slot.index is not None:
        positional = [*params.posonly_params, *params.params]
        if slot.index < len(positional):
            param = positional[slot.index]
    elif slot.arg.keyword is not None:
        wanted = slot.arg.keyword.value
        param = next((p for p in (*params.params, *params.kwonly_params) if p.name.value == wanted), None)
    if param is None:
        return None  # absorbed by *args / **kwargs, or a call error mypy reports
    if param.name.value == NONDET_KEYWORD or is_nondet_annotation(model, param.annotation, binding):
        return None
    return f"nondet passed to {definition.name.value}(), whose parameter `{param.name.value}` is not declared as NonDet"


def is_nondet_annotation(
    model: ModuleModel, annotation: cst.Annotation | cst.BaseExpression | None, where: Binding
) -> bool:
    """True for `NonDet`, `hl.NonDet`, "NonDet" and `NonDet | None` (under any alias)."""
    expr = annotation.annotation if isinstance(annotation, cst.Annotation) else annotation
    if expr is None:
        return False
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return is_nondet_annotation(model, expr.left, where) or is_nondet_annotation(model, expr.right, where)
    if isinstance(expr, cst.SimpleString):
        text = literal_text(expr)
        try:
            expr = cst.parse_expression(text) if text else expr
        except cst.ParserSyntaxError:
            return False
        if isinstance(expr, cst.SimpleString):
            return False
        return is_nondet_annotation(model, expr, where)
    return model.qualname(expr, where.scope, where.order) in NONDET_TYPES


# ---------------------------------------------------------------------- variables
def _token_bindings(model: ModuleModel) -> list[Binding]:
    """Names holding a nondet token: assigned from nondet(...) or parameters typed NonDet."""
    found: list[Binding] = []
    calls = {id(c.node): c for c in model.calls}
    for scope in model.scopes:
        for bindings in scope.bindings.values():
            for b in bindings:
                if b.kind is BindingKind.ASSIGN and isinstance(b.value, cst.Call):
                    call = calls.get(id(b.value))
                    if call is not None and is_nondet_call(model, call):
                        found.append(b)
                elif (
                    b.kind is BindingKind.PARAM
                    and b.annotation is not None
                    and is_nondet_annotation(model, b.annotation, b)
                ):
                    found.append(b)
    return found


def _variable_issues(model: ModuleModel, binding: Binding) -> list[Issue]:
    issues: list[Issue] = []
    consumed = [
        u
        for u in model.uses_of(binding)
        if u.slot is not None
        and not (model.is_builtin_call(u.slot.call) and _builtin_name(u.slot.call) in _INSPECTING_BUILTINS)
    ]
    for use in consumed[1:]:
        issues.append(
            Issue(
                "HL011",
                f'nondet token `{binding.name}` is consumed by more than one call; give each call its own nondet("...") and reason',
                use.node,
            )
        )
    if len(consumed) == 1 and set(consumed[0].loops) - set(binding.loops):
        issues.append(
            Issue(
                "HL011",
                f'nondet token `{binding.name}` is consumed inside a loop, once per iteration; write nondet("...") at the call, inside the loop',
                consumed[0].node,
            )
        )
    for use in consumed:
        assert use.slot is not None
        problem = consumer_problem(model, use.slot)
        if problem is not None:
            issues.append(Issue("HL012", problem, use.node))
    return issues


def _builtin_name(call: CallInfo) -> str | None:
    return call.node.func.value if isinstance(call.node.func, cst.Name) else None
