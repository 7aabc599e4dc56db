"""The partition stage: assign every imported operator to one backend.

Each accelerator's :class:`~aot.backends.OperatorPattern` s become Relax ``FusionPattern`` s
over the importer's ``call_tir`` operators, with a check that reads the operator's kind and
typed parameters (the PrimFunc attributes ``aot.operator`` / ``aot.params``) and calls the
backend's predicate. Relax's ``FuseOpsByPattern`` wraps each claimed operator in a
``Composite`` function and ``MergeCompositeFunctions`` groups neighbouring ones of the same
backend into one function with a ``Codegen`` attribute: a region. Patterns are tried in the
``--accelerator`` order, so the first backend that takes an operator gets it. Whatever no
accelerator takes stays a plain ``call_tir`` in ``main``: the CPU backend's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aot.backends.base import (
    CPU_TARGET,
    OPERATOR_KIND_ATTR,
    OPERATOR_PARAMS_ATTR,
    Backend,
    OperatorInfo,
    OperatorPattern,
    PartitionHooks,
    TensorInfo,
    check_claims,
    hook_failure,
    partition_hooks,
    prepared_partition_hooks,
)
from aot.backends.regions import region_outputs
from aot.errors import AotError, ConfigError, UnsupportedError
from aot.frontend.model import ImportedModel
from aot.operators import GenericParams, params_of

CODEGEN_ATTR = "Codegen"
COMPOSITE_ATTR = "Composite"
# Set on each region: the source operator index of each of its operators, in order.
SOURCES_ATTR = "aot.source_operators"


@dataclass(frozen=True)
class PartitionedModel:
    """The imported model with its regions: ``module``'s ``main`` calls each region (a
    Relax function whose ``Codegen`` attribute names its backend) and, for the rest, the
    CPU's ``call_tir`` operators. ``backends`` are the accelerators in priority order."""

    imported: ImportedModel
    module: Any  # tvm.IRModule
    backends: tuple[Backend, ...] = ()
    # Region function name -> backend name, in the order main calls them.
    regions: dict[str, str] = field(default_factory=dict)
    # Backend name -> what its prepare() returned: the build's context for its hooks.
    contexts: dict[str, Any] = field(default_factory=dict, compare=False)

    def backend(self, name: str) -> Backend:
        for backend in self.backends:
            if backend.name == name:
                return backend
        raise ConfigError(f"no backend '{name}' in this build")


def python_value(value: Any) -> Any:
    """A TVM attribute value as plain Python (ints, floats, bools, strings, tuples)."""
    import tvm_ffi

    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tvm_ffi.Array | list | tuple):
        return tuple(python_value(v) for v in value)
    if isinstance(value, tvm_ffi.Map | dict):
        return {str(k): python_value(v) for k, v in value.items()}
    if hasattr(value, "value"):  # IntImm, FloatImm
        return value.value
    return value


def tensor_info(expr: Any) -> TensorInfo:
    """Shape, dtype and (for a constant) the value of a Relax tensor expression."""
    from tvm import ir

    ty = expr.ty
    shape = tuple(int(d) for d in ty.shape.values)
    data = expr.value.numpy() if isinstance(expr, ir.GenericConst) else None
    return TensorInfo(shape, str(ty.dtype), data)


def source_index(call: Any) -> int | None:
    """The source operator index the importer put on a call's span, if any."""
    from aot.naming import SOURCE_OPERATOR_SPAN

    span = getattr(call, "span", None)
    if span is None or str(span.source_name.name) != SOURCE_OPERATOR_SPAN:
        return None
    return int(span.line)


def operator_info(module: Any, call: Any, source: Any = None) -> OperatorInfo | None:
    """The :class:`OperatorInfo` of a ``call_tir`` whose PrimFunc the importer annotated,
    with its ``aot.params`` as the kind's dataclass (aot/operators), else None (operators
    of the stock frontends carry no kind)."""
    from tvm import ir

    callee = call.args[0]
    if not isinstance(callee, ir.GlobalVar) or callee.name_hint not in _names(module):
        return None
    func = module[callee]
    attrs = func.attrs
    if attrs is None or OPERATOR_KIND_ATTR not in attrs:
        return None
    kind = str(attrs[OPERATOR_KIND_ATTR])
    params = (
        params_of(kind, python_value(attrs[OPERATOR_PARAMS_ATTR]))
        if OPERATOR_PARAMS_ATTR in attrs
        else GenericParams()
    )
    args = call.args[1]
    inputs = tuple(tensor_info(a) for a in getattr(args, "fields", [args]))
    output = TensorInfo(tuple(int(d) for d in call.ty.shape.values), str(call.ty.dtype))
    return OperatorInfo(kind, params, inputs, output, source, function=func)


def _names(module: Any) -> set[str]:
    return {gv.name_hint for gv in module.functions}


def _fusion_patterns(
    asked: PartitionHooks,
    module: Any,
    sources: Sequence[Any] = (),
    failures: list[BaseException] | None = None,
    yield_to: Sequence[tuple[Backend, OperatorPattern]] = (),
) -> list[Any]:
    from tvm import relax
    from tvm.relax.dpl import is_op, wildcard

    backend = asked.backend
    patterns = []
    for pattern in asked.patterns:
        if not isinstance(pattern, OperatorPattern):
            raise ConfigError(
                f"backend {backend.name}: patterns() returned {type(pattern).__name__}; "
                "expected aot.backends.OperatorPattern"
            )
        call = is_op("relax.call_tir")(wildcard(), wildcard())
        patterns.append(
            relax.transform.FusionPattern(
                f"{backend.name}.{pattern.name}",
                call,
                {"root": call},
                _check(backend, pattern, module, sources, failures, yield_to),
            )
        )
    return patterns


def _check(
    backend: Backend,
    pattern: OperatorPattern,
    module: Any,
    sources: Sequence[Any] = (),
    failures: list[BaseException] | None = None,
    yield_to: Sequence[tuple[Backend, OperatorPattern]] = (),
) -> Callable[[Any], bool]:
    """The FusionPattern check of one pattern. ``yield_to``: the patterns of backends
    earlier in the priority order that partition in a later pass (``merge_regions``
    False); an operator one of them claims is left to it."""
    by_index = {op.index: op for op in sources}
    failures = [] if failures is None else failures

    def check(ctx: Any) -> bool:
        root = ctx.annotated_expr["root"]
        # With its source operator, so that a predicate may decide by it (Ethos-U: Vela's).
        info = operator_info(module, root, by_index.get(source_index(root)))
        if info is None or failures:
            return False  # after a failure: it is reported once the pass returns
        if any(_claims(earlier, p, info, failures) for earlier, p in yield_to):
            return False
        return _claims(backend, pattern, info, failures)

    return check


def _claims(
    backend: Backend, pattern: OperatorPattern, info: OperatorInfo, failures: list[BaseException]
) -> bool:
    """Whether ``pattern`` takes ``info``; a predicate's failure is kept in ``failures``."""
    if info.kind not in pattern.kinds:
        return False
    if pattern.check is None:
        return True
    try:
        return bool(pattern.check(info))
    except AotError as exc:
        failures.append(exc)
    except Exception as exc:
        # Raised inside TVM's callback it would come back as TVM's RuntimeError: kept
        # here and raised by _fuse, so the user reads which backend failed.
        failure = hook_failure(backend.name, f"the predicate of pattern '{pattern.name}'", exc)
        failure.__cause__ = exc
        failures.append(failure)
    return False


def _fuse(module: Any, patterns: list[Any], failures: list[BaseException], **options: Any) -> Any:
    """FuseOpsByPattern, raising a predicate's failure (kept by _check) as itself."""
    from tvm import relax

    try:
        module = relax.transform.FuseOpsByPattern(patterns, bind_constants=False, **options)(module)
    except Exception:
        if failures:
            raise failures[0] from None
        raise
    if failures:
        raise failures[0]
    return module


def partition(
    imported: ImportedModel,
    backends: Sequence[Backend] = (),
    progress: Any = None,
    contexts: dict[str, Any] | None = None,
) -> PartitionedModel:
    """Assign every operator to one backend (see the module docstring). ``contexts``:
    backend name -> what its prepare() returned, handed to its hooks."""
    _check_accelerators(backends)
    if not backends:
        return PartitionedModel(imported, imported.relax_module, contexts=dict(contexts or {}))
    return _partitioned(imported, partition_hooks(backends, dict(contexts or {})), progress)


def partition_for_build(
    imported: ImportedModel, backends: Sequence[Backend], board: Any = None, progress: Any = None
) -> PartitionedModel:
    """The partition stage of a build: each backend prepared for ``imported`` on
    ``board`` (its context goes with the model to the later hooks) and asked for its
    partition hooks, once; then :func:`partition`'s regions."""
    _check_accelerators(backends)
    if not backends:
        return PartitionedModel(imported, imported.relax_module)
    return _partitioned(imported, prepared_partition_hooks(backends, imported, board), progress)


def _check_accelerators(backends: Sequence[Backend]) -> None:
    for backend in backends:
        if backend.target == CPU_TARGET and backend.name == CPU_TARGET:
            raise ConfigError("'cpu' is the default backend; it is not an --accelerator")


def _partitioned(
    imported: ImportedModel, asked: Sequence[PartitionHooks], progress: Any
) -> PartitionedModel:
    module, regions = _partition_module(imported, asked, progress)
    by_name = {h.backend.name: h.backend for h in asked}
    claims = [
        (by_name[backend_name], info)
        for region_name, backend_name in regions.items()
        for info in region_operators(module, module[region_name])
    ]
    check_claims(claims)
    backends = tuple(h.backend for h in asked)
    contexts = {h.backend.name: h.context for h in asked}
    return PartitionedModel(imported, module, backends, regions, contexts)


def _partition_module(
    imported: ImportedModel, asked: Sequence[PartitionHooks], progress: Any
) -> tuple[Any, dict[str, str]]:
    """The module with every claimed operator in a region, and region -> backend name."""
    import tvm
    from tvm import relax

    module = imported.relax_module
    for hooks in asked:
        if hooks.passes_before:
            module = tvm.transform.Sequential(list(hooks.passes_before))(module)
    before = module
    failures: list[BaseException] = []  # a predicate's, raised once its pass returns
    # Two passes: the merging backends' regions first, then one region per operator for
    # the others. The --accelerator order holds across them: a merging backend leaves
    # alone what a non-merging one earlier in the order claims.
    patterns = []
    for position, hooks in enumerate(asked):
        if not hooks.backend.merge_regions:
            continue
        earlier = [
            (h.backend, p)
            for h in asked[:position]
            if not h.backend.merge_regions
            for p in h.patterns
        ]
        patterns += _fusion_patterns(hooks, module, imported.sources, failures, earlier)
    if progress is not None:
        progress(f"partitioning for {', '.join(h.backend.name for h in asked)}")
    if patterns:
        module = _fuse(module, patterns, failures, annotate_codegen=False)
        module = relax.transform.MergeCompositeFunctions()(module)
    # Backends whose operators stay one region each (a kernel library) take what the
    # accelerators left in main, each operator wrapped in its own Codegen function.
    single = [
        p
        for hooks in asked
        if not hooks.backend.merge_regions
        for p in _fusion_patterns(hooks, module, imported.sources, failures)
    ]
    if single:
        module = _fuse(module, single, failures, annotate_codegen=True, entry_functions=["main"])
    for hooks in asked:
        if hooks.passes_after:
            module = tvm.transform.Sequential(list(hooks.passes_after))(module)
    names = {h.backend.name for h in asked}
    module = _annotate_sources(before, module, _regions(module, names))
    return module, _regions(module, names)


def _regions(module: Any, names: set[str]) -> dict[str, str]:
    """Region function name -> backend name, in the order main calls them."""
    from tvm import ir, relax

    regions: dict[str, str] = {}
    for block in module["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not (isinstance(value, ir.Call) and isinstance(value.op, ir.GlobalVar)):
                continue
            func = module[value.op]
            if not isinstance(func, relax.Function) or func.attrs is None:
                continue
            if CODEGEN_ATTR in func.attrs:
                codegen = str(func.attrs[CODEGEN_ATTR])
                if codegen not in names:
                    raise UnsupportedError(
                        f"a region is assigned to '{codegen}', which is not among the "
                        f"accelerators {', '.join(sorted(names))}"
                    )
                regions[value.op.name_hint] = codegen
    return regions


def _value_key(expr: Any, known: dict[int, Any]) -> Any:
    """What a main-level argument is, the same in the module before and after
    partitioning: a parameter, a constant, or the result of an earlier operator."""
    from tvm import ir

    if isinstance(expr, ir.GenericConst):
        return ("const", expr.__chandle__())
    return known.get(expr.__chandle__(), ("var", expr.__chandle__()))


def _call_key(callee: str, args: Sequence[Any], interned: dict[Any, int]) -> int:
    """A small id per distinct callee and arguments. The arguments hold the keys of the
    operators they read, so as nested tuples the keys grew with the graph's depth and
    hashing them took exponential time (a 50-step LSTM never got past partitioning)."""
    return interned.setdefault((callee, tuple(args)), len(interned))


def _annotate_sources(before: Any, after: Any, regions: dict[str, str]) -> Any:
    """Set ``aot.source_operators`` on each region: the importer's source operator index
    of each of its operators, in order. The spans cannot tell: MergeCompositeFunctions
    binds one Composite function per distinct operator and calls it for every use, so
    the span of a shared PrimFunc's first call would name them all. Each operator is
    found instead in the module before partitioning by its PrimFunc and its arguments
    (parameters, constants, results of earlier operators)."""
    from tvm import ir

    known: dict[int, Any] = {}
    interned: dict[Any, int] = {}
    for i, param in enumerate(before["main"].params):
        known[param.__chandle__()] = ("param", i)
    index_of: dict[Any, int | None] = {}  # call key -> source operator index
    for block in before["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, ir.Call) and getattr(value.op, "name", None) == "relax.call_tir":
                args = value.args[1]
                keys = [_value_key(a, known) for a in getattr(args, "fields", [args])]
                key = _call_key(value.args[0].name_hint, keys, interned)
                index_of[key] = source_index(value)
                known[binding.var.__chandle__()] = ("op", key)
            elif isinstance(value, ir.Var):
                known[binding.var.__chandle__()] = _value_key(value, known)
    main = after["main"]
    known_after: dict[int, Any] = {p.__chandle__(): ("param", i) for i, p in enumerate(main.params)}
    sites: list[tuple[Any, list[int]]] = []  # region call, its operators' sources
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            var = binding.var.__chandle__()
            if isinstance(value, ir.Var):
                known_after[var] = _value_key(value, known_after)
            elif isinstance(value, ir.TupleGetItem):
                base = _value_key(value.tuple_value, known_after)
                item = base[1][value.index] if base[0] == "tuple" else ("item", base, value.index)
                known_after[var] = item
            if not isinstance(value, ir.Call):
                continue
            if getattr(value.op, "name", None) == "relax.call_tir":
                args = value.args[1]
                keys = [_value_key(a, known_after) for a in getattr(args, "fields", [args])]
                known_after[var] = ("op", _call_key(value.args[0].name_hint, keys, interned))
                continue
            if not isinstance(value.op, ir.GlobalVar) or value.op.name_hint not in regions:
                continue
            function = after[value.op]
            outer = [_value_key(a, known_after) for a in value.args]
            operators, callees = _region_calls(after, function)
            keys: list[Any] = []
            for op, callee in zip(operators, callees, strict=True):
                args = [outer[v] if kind == "param" else ("op", keys[v]) for kind, v in op.wiring]
                keys.append(_call_key(callee, args, interned))
            found = [index_of.get(k) for k in keys]
            if keys and all(i is not None for i in found):
                sites.append((value, found))
            # The region's results are its operators' results, for the operators after it.
            outputs = region_outputs(function)
            result = [("op", keys[k]) for k in sorted(outputs, key=outputs.get)]
            known_after[var] = result[0] if len(result) == 1 else ("tuple", tuple(result))
    return _one_function_per_call(after, sites)


def _one_function_per_call(module: Any, sites: Sequence[tuple[Any, list[int]]]) -> Any:
    """Set each region's source operators on its function. Partitioning binds one
    function for structurally equal regions (kws's four 1x1 convolutions on a backend
    taking one per region): each further call gets a copy of its own, named
    ``<region>_<k>``, so that every step says which operators it computes."""
    from tvm import ir, relax

    builder = relax.BlockBuilder(module)
    first: dict[str, list[int]] = {}
    redirect: dict[int, Any] = {}  # region call -> the copy it calls instead
    copies: dict[str, int] = {}
    for call, found in sites:
        gv = call.op
        function = module[gv].with_attr(SOURCES_ATTR, found)
        if gv.name_hint not in first:
            first[gv.name_hint] = found
            builder.update_func(gv, function)
        elif found != first[gv.name_hint]:
            copies[gv.name_hint] = copies.get(gv.name_hint, 0) + 1
            name = f"{gv.name_hint}_{copies[gv.name_hint]}"
            redirect[call.__chandle__()] = builder.add_func(function, name)
    module = builder.get()
    if not redirect:
        return module

    @relax.expr_functor.mutator
    class Redirect(relax.PyExprMutator):
        def visit_call_(self, call: Any) -> Any:
            target = redirect.get(call.__chandle__())
            call = super().visit_call_(call)
            if target is None:
                return call
            return ir.Call(target, call.args, call.attrs, call.ty_args, call.span)

    module["main"] = Redirect(module).visit_expr(module["main"])
    return module


def region_operators(module: Any, region: Any, sources: Sequence[Any] = ()) -> list[OperatorInfo]:
    """The operators of a region function in execution order (through its Composite
    functions), each with its source operator (from ``sources``: the region's
    ``aot.source_operators`` attribute that partitioning sets, else the importer's span)
    and ``wiring``: where each of its inputs comes from, ``("param", i)``
    (the region's i-th parameter) or ``("op", k)`` (the result of its k-th operator)."""
    found = _region_calls(module, region, sources)[0]
    attrs = region.attrs
    if attrs is not None and SOURCES_ATTR in attrs and sources:
        by_index = {op.index: op for op in sources}
        indices = [int(i) for i in attrs[SOURCES_ATTR]]
        if len(indices) == len(found):
            found = [replace(op, source=by_index.get(i)) for op, i in zip(found, indices)]
    return found


def _region_calls(
    module: Any, region: Any, sources: Sequence[Any] = ()
) -> tuple[list[OperatorInfo], list[str]]:
    """region_operators' walk: the operators with their spans' sources, and the name of
    the PrimFunc each calls."""
    from tvm import ir, relax

    found: list[OperatorInfo] = []
    callees: list[str] = []
    # Relax var handle -> where its value comes from.
    origin: dict[int, tuple[str, int]] = {
        p.__chandle__(): ("param", i) for i, p in enumerate(region.params)
    }
    local: dict[int, Any] = {}  # var bound to a Composite function -> the function

    def where(expr: Any, env: dict[int, tuple[str, int]]) -> tuple[str, int]:
        return env.get(expr.__chandle__(), ("param", -1))

    def walk(func: Any, env: dict[int, tuple[str, int]]) -> tuple[str, int] | None:
        result = None
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                key = binding.var.__chandle__()
                if isinstance(value, relax.Function):
                    local[key] = value
                    continue
                if isinstance(value, ir.Var):
                    env[key] = where(value, env)
                    continue
                if not isinstance(value, ir.Call):
                    continue
                callee = value.op
                inner = callee if isinstance(callee, relax.Function) else None
                if isinstance(callee, ir.Var):
                    inner = local.get(callee.__chandle__())
                if inner is not None:
                    inner_env = {
                        p.__chandle__(): where(a, env)
                        for p, a in zip(inner.params, value.args, strict=True)
                    }
                    env[key] = walk(inner, inner_env) or ("param", -1)
                elif getattr(callee, "name", None) == "relax.call_tir":
                    index = source_index(value)
                    source = next((op for op in sources if op.index == index), None)
                    info = operator_info(module, value, source)
                    if info is not None:
                        args = value.args[1]
                        wiring = tuple(where(a, env) for a in getattr(args, "fields", [args]))
                        found.append(replace(info, wiring=wiring))
                        callees.append(value.args[0].name_hint)
                        env[key] = ("op", len(found) - 1)
        body = func.body.body
        if isinstance(body, ir.Var):
            result = where(body, env)
        return result

    walk(region, origin)
    return found, callees
