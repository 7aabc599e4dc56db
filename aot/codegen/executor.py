"""Emit the model library's C sources: public header, kernels, constants, executor.

The executor is one straight-line function that calls the kernels in order with pointers
into the planned pools: no interpreter, no heap, no TVM runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from aot.backends.base import Artifact, EmitContext, EmittedCode, fault_symbol
from aot.errors import AotError, InternalError, UnsupportedError
from aot.lowering import CONSTANT, INPUT, OUTPUT, LoweredModel, Step, Tensor
from aot.naming import (
    constant_symbol,
    constants_section,
    library_header_guard,
    pool_section,
    pool_symbol,
    scratch_buffer_name,
    tensor_buffer_name,
)
from aot.planning import MemoryPlan
from aot.tir_to_c.printer import c_literal, c_type, helper_definitions

# Matches aot_dtype_t in aot/runtime_c/include/aot/model.h.
MODEL_DTYPES = {"int8": 0, "uint8": 1, "int16": 2, "int32": 3, "float32": 4, "float64": 5}

COMPILER_MACROS = """\
#if defined(__GNUC__) || defined(__clang__)
#define AOT_SECTION(name) __attribute__((section(name)))
#define AOT_ALIGNED(n) __attribute__((aligned(n)))
#else
#define AOT_SECTION(name)
#define AOT_ALIGNED(n)
#endif
"""


@dataclass(frozen=True)
class CodegenOptions:
    constants_alignment: int = 16
    workspace_alignment: int = 16
    # Inputs and outputs live in the planned pools too (--io-in-pool): the caller reads
    # and writes them through aot_<name>_input_buffers / aot_<name>_output_buffers.
    io_in_pool: bool = False
    # Time every executor step with aot_platform_ticks() into a static array the
    # descriptor points at (--profile); off, the executor reads no timer at all.
    profile: bool = False
    # A debug build for 'aot validate --layers' (--trace): run() can stop after any step
    # and record where that step's outputs are, read back with the TRACE command.
    trace: bool = False


@dataclass(frozen=True)
class GeneratedSources:
    """File name (relative to the model library folder) -> content."""

    files: dict[str, str]
    constants_bytes: int


@dataclass(frozen=True)
class CNames:
    """Every C spelling of one model the emitter takes from the modules below it, taken
    once (``c_names``): its symbols and sections (``aot.naming``), each tensor's element
    type and each array's initializer (``aot.tir_to_c.printer``), its fault record
    (``aot.backends.base``); the writers below read them as plain data."""

    header_guard: str
    fault: str
    constants_section: str
    ctypes: Mapping[int, str]  # tensor id -> C element type
    buffers: Mapping[int, str]  # tensor id -> the planner's buffer name
    constants: Mapping[int, str]  # constant tensor id -> its array's symbol
    initializers: Mapping[int, str]  # tensor id -> the C initializer of its data
    pools: Mapping[str, str]  # pool -> its static array's symbol
    pool_sections: Mapping[str, str]  # pool -> its linker section
    scratch: Mapping[int, str]  # step index -> its scratch buffer's name


def c_names(lowered: LoweredModel, plan: MemoryPlan) -> CNames:
    """The C spellings of ``lowered`` with ``plan``'s pools."""
    name = lowered.name
    pools = sorted({*plan.pool_sizes, *(p.pool for p in plan.placements)})
    initial = {t.id: (_constant_data(t), t.dtype) for t in lowered.constants}
    initial |= {
        t.id: (t.data.astype(t.dtype), t.dtype) for t in lowered.states if t.data is not None
    }
    return CNames(
        fault=fault_symbol(name),
        ctypes={t.id: c_type(t.dtype) for t in lowered.tensors},
        initializers={i: _array_initializer(d, dtype) for i, (d, dtype) in initial.items()},
        header_guard=library_header_guard(name),
        constants_section=constants_section(name),
        buffers={t.id: tensor_buffer_name(t) for t in lowered.tensors},
        constants={t.id: constant_symbol(name, t) for t in lowered.constants},
        pools={pool: pool_symbol(name, pool) for pool in pools},
        pool_sections={pool: pool_section(name, pool) for pool in pools},
        scratch={s.index: scratch_buffer_name(s.index) for s in lowered.steps if s.scratch_bytes},
    )


def _constant_data(tensor: Tensor) -> np.ndarray:
    """A constant's data in its own type; one zero for an empty one (C has no empty
    arrays)."""
    assert tensor.data is not None
    data = tensor.data.astype(tensor.dtype)
    return data if data.size else np.zeros(1, dtype=tensor.dtype)


def _array_initializer(data: np.ndarray, dtype: str) -> str:
    flat = np.ascontiguousarray(data).reshape(-1)
    per_line = 16 if dtype in ("int8", "uint8") else 8
    items = [c_literal(v.item(), dtype) for v in flat]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n  " + ",\n  ".join(lines) + "\n}"


def step_ticks_symbol(model: str) -> str:
    return f"aot_{model}_step_ticks"


def trace_symbol(model: str) -> str:
    return f"aot_{model}_trace"


def has_fault_record(lowered: LoweredModel) -> bool:
    """Only accelerator steps fail at run time (a CPU kernel is a void call), so only a
    model with one keeps a fault record."""
    return any(step.backend != "cpu" for step in lowered.steps)


def _io_in_pool_declarations(lowered: LoweredModel) -> list[str]:
    name = lowered.name
    return [
        "",
        "/* Built with --io-in-pool: inputs and outputs live in the workspace pools. Write",
        " * inputs into aot_<name>_input_buffers[i] and pass these same pointers to run()",
        " * (other pointers are copied in and out). Inputs are overwritten by run(). */",
        f"#define AOT_{name.upper()}_IO_IN_POOL 1",
        f"extern void* const aot_{name}_input_buffers[{max(1, len(lowered.inputs))}];",
        f"extern void* const aot_{name}_output_buffers[{max(1, len(lowered.outputs))}];",
    ]


def _header(lowered: LoweredModel, plan: MemoryPlan, options: CodegenOptions, names: CNames) -> str:
    name = lowered.name
    upper = name.upper()
    guard = names.header_guard
    out = [
        "/* Generated by aot. The public interface of the model library. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        '#include "aot/error.h"',
        '#include "aot/model.h"',
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
    ]
    for kind, tensors in (("INPUT", lowered.inputs), ("OUTPUT", lowered.outputs)):
        for tensor in tensors:
            shape = "x".join(str(d) for d in tensor.shape)
            out.append(
                f"#define AOT_{upper}_{kind}_{tensor.name.upper()}_SIZE {tensor.size_bytes}"
                f" /* {tensor.dtype} {shape} */"
            )
    for pool, size in plan.pool_sizes.items():
        out.append(f"#define AOT_{upper}_POOL_{pool.upper()}_SIZE {size}")
    out.append(f"#define AOT_{upper}_WORKSPACE_SIZE {plan.workspace_size}")
    # Operator state kept between runs (the persistent pool); 0 for a stateless model.
    out.append(f"#define AOT_{upper}_STATE_SIZE {plan.total_size - plan.workspace_size}")
    out.append("")
    for struct, tensors in (("inputs", lowered.inputs), ("outputs", lowered.outputs)):
        out.append(f"struct aot_{name}_{struct} {{")
        for tensor in tensors:
            qualifier = "const " if struct == "inputs" else ""
            out.append(f"  {qualifier}{names.ctypes[tensor.id]}* {tensor.name};")
        out.append("};")
        out.append("")
    out += [
        "/* Runs one inference. Returns AOT_OK or AOT_ERR_MODEL_BAD_ARGUMENT. Not reentrant:",
        " * the workspace pools are static. */",
        f"int32_t aot_{name}_run(const struct aot_{name}_inputs* inputs,",
        f"{' ' * (len(name) + 17)}const struct aot_{name}_outputs* outputs);",
        "",
        "/* Sets the operator state kept between runs (SVDF's memory) to its initial value",
        " * (zeros unless the model gives one); run() does it before the first inference.",
        " * Does nothing for a model without state. */",
        f"void aot_{name}_reset(void);",
        "",
        "/* The generic description of this model used by the aot runtime application. */",
        f"extern const struct aot_model_desc aot_{name}_model;",
        *(_io_in_pool_declarations(lowered) if options.io_in_pool else []),
        *(
            [
                "",
                "/* Built with --profile: run() times each step with aot_platform_ticks(),",
                " * which the firmware must provide (aot/platform.h). */",
                f"#define AOT_{upper}_PROFILE_STEPS {len(lowered.steps)}",
            ]
            if options.profile
            else []
        ),
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(out)


def _emitted_in_order(lowered: LoweredModel, codes: list[EmittedCode], field: str) -> list[str]:
    """Each distinct function/prototype the steps' code brings, in artifact order."""
    rank = {a.symbol: i for i, a in enumerate(lowered.artifacts)}
    seen: set[str] = set()
    ranked: list[tuple[int, int, str]] = []
    for position, (step, code) in enumerate(zip(lowered.steps, codes, strict=True)):
        for text in getattr(code, field):
            if text not in seen:
                seen.add(text)
                ranked.append((rank.get(step.kernel, len(rank)), position, text))
    return [text for *_, text in sorted(ranked)]


def _includes(codes: list[EmittedCode]) -> list[str]:
    return sorted({f"#include {h}" for code in codes for h in code.includes})


def _internal_header(lowered: LoweredModel, codes: list[EmittedCode], names: CNames) -> str:
    name = lowered.name
    guard = f"AOT_{name.upper()}_INTERNAL_H_"
    out = [
        "/* Generated by aot. Declarations shared by the model library's sources. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
    ]
    if has_fault_record(lowered):
        out += ['#include "aot/model.h"', "", f"extern struct aot_fault {names.fault};", ""]
    for tensor in lowered.constants:
        out.append(
            f"extern const {names.ctypes[tensor.id]} {names.constants[tensor.id]}"
            f"[{max(1, int(np.prod(tensor.shape)))}];"
        )
    out.append("")
    out += _emitted_in_order(lowered, codes, "prototypes")
    out += ["", f"#endif /* {guard} */", ""]
    return "\n".join(out)


def _kernels_source(lowered: LoweredModel, codes: list[EmittedCode]) -> str:
    helpers: set[str] = set()
    for code in codes:
        helpers |= code.helpers
    out = [
        "/* Generated by aot: the model's operators as plain C99 functions. */",
        "#include <math.h>",
        "#include <stdint.h>",
        "",
        *_includes(codes),
        f'#include "aot_{lowered.name}_internal.h"',
        "",
    ]
    functions = _emitted_in_order(lowered, codes, "functions")
    if helpers:
        out += [helper_definitions(helpers), ""]
    return "\n".join([*out, *functions])


def _constants_source(
    lowered: LoweredModel, options: CodegenOptions, names: CNames
) -> tuple[str, int]:
    name = lowered.name
    section = names.constants_section
    out = [
        "/* Generated by aot: the model's weights. A linker script can place the section",
        f" * {section} in flash or in a faster memory. */",
        "#include <stdint.h>",
        "",
        f'#include "aot_{name}_internal.h"',
        "",
        COMPILER_MACROS,
    ]
    total = 0
    for tensor in lowered.constants:
        assert tensor.data is not None
        count = max(1, tensor.data.size)
        total += count * np.dtype(tensor.dtype).itemsize
        out.append(
            f"const {names.ctypes[tensor.id]} {names.constants[tensor.id]}[{count}] "
            f'AOT_SECTION("{section}") '
            f"AOT_ALIGNED({max(options.constants_alignment, tensor.alignment)}) = "
            f"{names.initializers[tensor.id]};"
        )
        out.append("")
    return "\n".join(out), total


def _pointers(
    lowered: LoweredModel, plan: MemoryPlan, options: CodegenOptions, names: CNames
) -> tuple[Callable[..., str], Callable[..., str]]:
    """C expressions for a tensor: in its pool, and wherever run() finds it."""
    roots = lowered.memory_roots
    within = lowered.buffer_offsets  # where a tensor starts in its root's buffer

    def pool_pointer(tensor: Tensor, step: int | None = None) -> str:
        buffer = names.buffers[roots[tensor.id]]
        # A step served by a copy (--allow-copies) uses the staging buffer instead.
        placement = plan.placement(buffer if step is None else plan.buffer_for(step, buffer))
        ctype = names.ctypes[tensor.id]
        offset = placement.offset + within[tensor.id]
        return f"({ctype}*)(void*)({names.pools[placement.pool]} + {offset})"

    def pointer(tensor: Tensor, step: int | None = None) -> str:
        # A constant or a caller's tensor that a copy step staged for this step.
        staged = step is not None and (step, names.buffers[tensor.id]) in plan.reads
        if tensor.kind == CONSTANT:
            return pool_pointer(tensor, step) if staged else names.constants[tensor.id]
        if tensor.kind in (INPUT, OUTPUT) and not options.io_in_pool and not staged:
            return f"{'inputs' if tensor.kind == INPUT else 'outputs'}->{tensor.name}"
        return pool_pointer(tensor, step)

    return pool_pointer, pointer


def _step_codes(
    lowered: LoweredModel, plan: MemoryPlan, options: CodegenOptions, names: CNames
) -> list[EmittedCode]:
    """Each step's C, from its backend's emit hook."""
    _, pointer = _pointers(lowered, plan, options, names)
    artifacts = {a.symbol: a for a in lowered.artifacts}
    codes = []
    for step in lowered.steps:
        tensors = [lowered.tensors[t] for t in step.args]
        scratch = None
        if step.scratch_bytes:
            placement = plan.placement(names.scratch[step.index])
            scratch = f"{names.pools[placement.pool]} + {placement.offset}"
        ctx = EmitContext(
            lowered.name,
            tuple(pointer(t, step.index) for t in tensors),
            tuple(names.ctypes[t.id] for t in tensors),
            scratch,
            "AOT_ERR_MODEL",
        )
        if step.kernel not in artifacts:
            raise InternalError(f"no artifact {step.kernel}")
        codes.append(_emit_step(lowered, step, artifacts[step.kernel], ctx))
    return codes


def _emit_step(
    lowered: LoweredModel, step: Step, artifact: Artifact, ctx: EmitContext
) -> EmittedCode:
    backend = lowered.backends[step.backend]
    try:
        code = backend.emit(step, artifact, ctx)
    except AotError:
        raise
    except Exception as exc:
        raise UnsupportedError(
            f"backend {step.backend} failed to emit step {step.index} ({step.label}, "
            f"{type(exc).__name__}); fix the backend, or build without --accelerator "
            f"{step.backend}"
        ) from exc
    if not isinstance(code, EmittedCode):
        raise UnsupportedError(
            f"backend {step.backend}: emit() returned {type(code).__name__}; expected "
            "aot.backends.EmittedCode"
        )
    return code


def _executor_source(
    lowered: LoweredModel,
    plan: MemoryPlan,
    options: CodegenOptions,
    codes: list[EmittedCode],
    names: CNames,
) -> str:
    name = lowered.name
    upper = name.upper()
    out = [
        "/* Generated by aot: the AOT executor, one call per operator. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        *(["#include <string.h>"] if options.io_in_pool or lowered.states else []),
        "",
        *_includes(codes),
        f'#include "aot_{name}.h"',
        f'#include "aot_{name}_internal.h"',
        "",
        COMPILER_MACROS,
    ]
    # Offsets are aligned for every backend's buffers, so the pools must be too.
    pool_alignment = max(
        [options.workspace_alignment]
        + [lowered.backends[s.backend].alignment for s in lowered.steps if s.backend != "cpu"]
    )
    for pool, size in plan.pool_sizes.items():
        if size == 0:
            continue
        out.append(
            f"static uint8_t {names.pools[pool]}[AOT_{upper}_POOL_{pool.upper()}_SIZE] "
            f'AOT_SECTION("{names.pool_sections[pool]}") AOT_ALIGNED({pool_alignment});'
        )
    out.append("")

    pool_pointer, pointer = _pointers(lowered, plan, options, names)
    by_buffer = {names.buffers[t.id]: t for t in lowered.tensors}
    if plan.copies:
        # The port's copy hook (aot/platform.h), declared here so the library needs no
        # runtime header beyond model.h and error.h.
        out += ["void aot_platform_copy(void* dst, const void* src, size_t n);", ""]

    if options.io_in_pool:
        for symbol, tensors in (("input", lowered.inputs), ("output", lowered.outputs)):
            items = ", ".join(f"(void*){pool_pointer(t)}" for t in tensors) or "NULL"
            out.append(
                f"void* const aot_{name}_{symbol}_buffers[{max(1, len(tensors))}] = {{{items}}};"
            )
        out.append("")
    ticks = step_ticks_symbol(name)
    if options.profile:
        out += [
            "/* --profile: ticks of each step in the last run, read by the runtime's PROFILE",
            " * command through the descriptor. The port's timer, declared here so the model",
            " * library needs no runtime header beyond model.h and error.h. */",
            "uint32_t aot_platform_ticks(void);",
            f"static uint32_t {ticks}[{max(1, len(lowered.steps))}];",
            "",
        ]

    trace = trace_symbol(name) if options.trace else None
    if trace:
        most = max([1] + [len(step.outputs) for step in lowered.steps])
        out += [
            "/* --trace: run() stops after step stop_after and records where that step's",
            " * outputs are, for the TRACE command ('aot validate --layers'). */",
            f"static struct aot_trace_output {trace}_outputs[{most}];",
            f"static struct aot_trace {trace} = {{{len(lowered.steps)}u, AOT_TRACE_NONE, "
            f"AOT_TRACE_NONE, 0u, {most}u, {trace}_outputs}};",
            "",
        ]
    fault = names.fault if has_fault_record(lowered) else None
    if fault:
        out += [
            "/* Where the last failing run stopped: the RUN reply's fault record. */",
            f"struct aot_fault {fault};",
            "",
        ]
    out += _reset_source(lowered, pool_pointer, names)
    params = f"const struct aot_{name}_inputs* inputs, const struct aot_{name}_outputs* outputs"
    out.append(f"int32_t aot_{name}_run({params}) {{")
    if fault:
        out.append(
            f"  {fault} = (struct aot_fault){{AOT_FAULT_NONE, AOT_FAULT_NONE, 0u, 0u, 0u, 0u}};"
        )
    checks = ["inputs == NULL", "outputs == NULL"]
    checks += [f"inputs->{t.name} == NULL" for t in lowered.inputs]
    checks += [f"outputs->{t.name} == NULL" for t in lowered.outputs]
    out.append(f"  if ({' || '.join(checks)}) {{")
    out.append("    return AOT_ERR_MODEL_BAD_ARGUMENT;")
    out.append("  }")
    if trace:
        out.append(f"  {trace}.stopped = AOT_TRACE_NONE;")
        out.append(f"  {trace}.num_outputs = 0u;")
    if lowered.states:
        # The state's initial value, also where the startup code does not zero .bss.
        out.append(f"  if (!aot_{name}_state_ready) aot_{name}_reset();")
    if options.io_in_pool:
        for index, tensor in enumerate(lowered.inputs):
            out.append(
                f"  if ((const void*)inputs->{tensor.name} != aot_{name}_input_buffers[{index}]) "
                f"memcpy(aot_{name}_input_buffers[{index}], inputs->{tensor.name}, "
                f"{tensor.size_bytes}u);"
            )
    if options.profile:
        # One timer read between steps: each step's figure is the difference of two
        # reads, so the steps add up to the time from the first read to the last.
        out.append("  uint32_t aot_tick = aot_platform_ticks();")
        out.append("  uint32_t aot_tock;")

    def end(buffer: str) -> str:
        """A copy's source or destination: a tensor where run() finds it (the caller's,
        a constant, its pool) or a staging buffer in its pool."""
        if buffer in by_buffer:
            return pointer(by_buffer[buffer])
        placement = plan.placement(buffer)
        return f"{names.pools[placement.pool]} + {placement.offset}"

    def copies(before: int) -> list[str]:
        lines = []
        for copy in plan.copies_before(before):
            when = f"for step {before}" if before < len(lowered.steps) else "after the last step"
            lines.append(f"  /* {copy.name}: {copy.size} bytes {when} */")
            lines.append(f"  aot_platform_copy({end(copy.dst)}, {end(copy.src)}, {copy.size}u);")
        return lines

    for step, code in zip(lowered.steps, codes, strict=True):
        out += copies(step.index)
        out.append(f"  /* step {step.index}: {step.operator} */")
        if fault and step.backend != "cpu":
            out.append(f"  {fault}.step = {step.index}u;")
        out += [f"  {line}" for line in code.call]
        if options.profile:
            out.append(
                f"  aot_tock = aot_platform_ticks(); {ticks}[{step.index}] = aot_tock - aot_tick; "
                "aot_tick = aot_tock;"
            )
        if trace:
            out += _trace_stop(trace, step, [lowered.tensors[t] for t in step.outputs], pointer)
    out += copies(len(lowered.steps))
    for next_id, state_id in lowered.state_updates:
        state, next_state = lowered.tensors[state_id], lowered.tensors[next_id]
        out.append(f"  /* next {state.source}: kept for the next run */")
        # pointer(): a next state may also be a model output (a resource variable's sum).
        out.append(f"  memcpy({pool_pointer(state)}, {pointer(next_state)}, {state.size_bytes}u);")
    if options.io_in_pool:
        for index, tensor in enumerate(lowered.outputs):
            out.append(
                f"  if ((void*)outputs->{tensor.name} != aot_{name}_output_buffers[{index}]) "
                f"memcpy(outputs->{tensor.name}, aot_{name}_output_buffers[{index}], "
                f"{tensor.size_bytes}u);"
            )
    out.append("  return AOT_OK;")
    out.append("}")
    out.append("")
    out += _descriptor(lowered, plan, options, names)
    return "\n".join(out)


def _trace_stop(
    trace: str, step: Step, outputs: list[Tensor], pointer: Callable[..., str]
) -> list[str]:
    """--trace: return after this step when asked, recording where it wrote. Before the
    state updates and the copies out of the pools, so a stopped run changes no state."""
    out = [f"  if ({trace}.stop_after == {step.index}u) {{"]
    for index, tensor in enumerate(outputs):
        out.append(
            f"    {trace}_outputs[{index}] = (struct aot_trace_output){{"
            f"(const void*)({pointer(tensor, step.index)}), {tensor.size_bytes}u}};"
        )
    out += [
        f"    {trace}.num_outputs = {len(outputs)}u;",
        f"    {trace}.stopped = {step.index}u;",
        "    return AOT_OK;",
        "  }",
    ]
    return out


def _reset_source(
    lowered: LoweredModel, pool_pointer: Callable[..., str], names: CNames
) -> list[str]:
    """aot_<name>_reset(): each state to its initial value (zeros, or the model's data)."""
    name = lowered.name
    out: list[str] = []
    body: list[str] = []
    for index, state in enumerate(lowered.states):
        if state.data is None:
            body.append(f"  memset({pool_pointer(state)}, 0, {state.size_bytes}u);")
            continue
        symbol = f"aot_{name}_state_initial_{index}"
        out.append(
            f"static const {names.ctypes[state.id]} {symbol}[{max(1, int(np.prod(state.shape)))}]"
            f" = {names.initializers[state.id]};"
        )
        body.append(f"  memcpy({pool_pointer(state)}, {symbol}, {state.size_bytes}u);")
    if lowered.states:
        out.append(f"static uint8_t aot_{name}_state_ready;")
        out.append("")
    out.append(f"void aot_{name}_reset(void) {{")
    out += body
    if lowered.states:
        out.append(f"  aot_{name}_state_ready = 1u;")
    out += ["}", ""]
    return out


def _descriptor(
    lowered: LoweredModel, plan: MemoryPlan, options: CodegenOptions, names: CNames
) -> list[str]:
    name = lowered.name
    out: list[str] = []

    def infos(symbol: str, tensors: list[Tensor]) -> None:
        out.append(f"static const struct aot_tensor_info {symbol}[{max(1, len(tensors))}] = {{")
        for tensor in tensors:
            shape = ", ".join(str(d) for d in tensor.shape) or "1"
            out.append(
                f'  {{"{tensor.name}", (aot_dtype_t){MODEL_DTYPES[tensor.dtype]}, '
                f"{len(tensor.shape)}u, {{{shape}}}, {tensor.size_bytes}u}},"
            )
        out.append("};")

    for tensor in [*lowered.inputs, *lowered.outputs]:
        if tensor.dtype not in MODEL_DTYPES:
            from aot.errors import UnsupportedError

            raise UnsupportedError(
                f"model {'input' if tensor.kind == INPUT else 'output'} '{tensor.name}' has "
                f"type {tensor.dtype}; aot supports {', '.join(MODEL_DTYPES)} at the model "
                "boundary"
            )
    infos(f"aot_{name}_input_infos", lowered.inputs)
    infos(f"aot_{name}_output_infos", lowered.outputs)
    out.append("")
    out.append(f"static int32_t aot_{name}_run_generic(void* const* in, void* const* out) {{")
    out.append(f"  struct aot_{name}_inputs inputs;")
    out.append(f"  struct aot_{name}_outputs outputs;")
    for index, tensor in enumerate(lowered.inputs):
        out.append(f"  inputs.{tensor.name} = ({names.ctypes[tensor.id]}*)in[{index}];")
    for index, tensor in enumerate(lowered.outputs):
        out.append(f"  outputs.{tensor.name} = ({names.ctypes[tensor.id]}*)out[{index}];")
    if not lowered.inputs:
        out.append("  (void)in;")
    out.append(f"  return aot_{name}_run(&inputs, &outputs);")
    out.append("}")
    out.append("")
    constants_bytes = sum(t.size_bytes for t in lowered.constants)
    out += [
        f"const struct aot_model_desc aot_{name}_model = {{",
        f'  "{name}",',
        f"  {len(lowered.inputs)}u,",
        f"  {len(lowered.outputs)}u,",
        f"  aot_{name}_input_infos,",
        f"  aot_{name}_output_infos,",
        f"  aot_{name}_run_generic,",
        f"  {plan.workspace_size}u,",
        f"  {constants_bytes}u,",
        f"  {f'aot_{name}_input_buffers' if options.io_in_pool else 'NULL'},",
        f"  {f'aot_{name}_output_buffers' if options.io_in_pool else 'NULL'},",
        f"  {len(lowered.steps) if options.profile else 0}u,",
        f"  {step_ticks_symbol(name) if options.profile else 'NULL'},",
        f"  {plan.total_size - plan.workspace_size}u,",
        f"  aot_{name}_reset,",
        f"  {'&' + names.fault if has_fault_record(lowered) else 'NULL'},",
        f"  {'&' + trace_symbol(name) if options.trace else 'NULL'},",
        "};",
        "",
    ]
    return out


def generate_sources(
    lowered: LoweredModel, plan: MemoryPlan, options: CodegenOptions | None = None
) -> GeneratedSources:
    options = options or CodegenOptions()
    names = c_names(lowered, plan)
    name = lowered.name
    constants, constants_bytes = _constants_source(lowered, options, names)
    codes = _step_codes(lowered, plan, options, names)
    header = _header(lowered, plan, options, names)
    internal = _internal_header(lowered, codes, names)
    executor = _executor_source(lowered, plan, options, codes, names)
    kernels = _kernels_source(lowered, codes)  # last: its helpers come from the printer
    files = {
        f"include/aot_{name}.h": header,
        f"src/aot_{name}_internal.h": internal,
        f"src/aot_{name}_kernels.c": kernels,
        f"src/aot_{name}_constants.c": constants,
        f"src/aot_{name}.c": executor,
    }
    return GeneratedSources(files=files, constants_bytes=constants_bytes)
