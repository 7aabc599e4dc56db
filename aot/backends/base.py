"""The Backend API: what an accelerator team writes to put operators on its hardware.

A backend is one Python class. The compiler calls its hooks in fixed phases:

==============  ============================  ==================================================
phase           hook                          receives -> returns
==============  ============================  ==================================================
prepare         ``prepare(model, board)``     the imported model and the board -> the build's
                                              context for this backend (anything; None by
                                              default), handed to every later hook
partition       ``passes_before()``           Relax passes run on the imported module first
partition       ``patterns(ctx)``             :class:`OperatorPattern` s (name, operator kinds,
                                              a predicate on :class:`OperatorInfo`); fused with
                                              Relax's ``FuseOpsByPattern`` and merged into one
                                              function per region by ``MergeCompositeFunctions``
partition       ``passes_after()``            Relax passes run after partitioning
lower           ``lower(region, ctx)``        :class:`Region` and a :class:`LowerContext` ->
                                              :class:`Artifact` (TIR or the backend's own data:
                                              command streams, parameters; never C text; the
                                              runtime files the step needs)
emit            ``emit(step, artifact, ctx)`` the step, its artifact, an :class:`EmitContext`
                                              (C pointers of the step's buffers) ->
                                              :class:`EmittedCode` (C functions, the
                                              statements in ``run()``, headers)
project         ``runtime(ctx)``              -> :class:`RuntimeFiles`: driver / device-model
                                              sources and headers every build of it needs
report          ``report(ctx)``               -> what its own compiler said, for metadata.json
==============  ============================  ==================================================

A backend keeps no state between these hooks: what ``prepare`` found travels as its
return value (the ``ctx`` of ``patterns``, ``runtime`` and ``report``, and
``LowerContext.prepared``), and what one ``lower`` call needs of the earlier ones is in
``LowerContext.earlier``. A hook written before contexts existed (``patterns(self)``,
``runtime(self)``, ``report(self)``) is still called, without one (:func:`call_hook`).

Memory: ``alignment`` is what every buffer the backend's steps touch is aligned to; which
memories its target reaches is board data (``accelerators:`` in the board YAML, see
``docs/boards.md``), read through :meth:`Backend.reachable_memories`. The memory planner
puts every buffer (constants too) into a pool that all of its readers' and writers'
targets reach: a pool's ``targets`` names those targets (``PoolSpec.targets``). A step's
target touches all its operands unless its artifact names those only its CPU-side code
touches (``Artifact.cpu_operands``); the model's inputs and outputs are the caller's
memory, reached by the CPU unless the board says otherwise (``Backend.io_copies``).
``aot/backends/regions.py`` has helpers for a backend that runs a region operator by
operator (operand layout with scratch slices, the C frame of a step function).

Backends register by name in the ``aot.backends`` entry-point group (the value is the
class), so ``aot build --accelerator NAME`` finds an out-of-tree package without a change
to aot. The CPU backend (``aot/backends/cpu.py``) is the reference: it takes every operator
no accelerator took, and lowers it through TIR to aot's C printer.

This module is at the bottom of the house: it imports no stage, only ``aot.naming``,
``aot.operators`` (the operators' typed parameters) and ``aot.errors``; the stages import
it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from aot import naming
from aot.errors import AotError, ConfigError, InternalError, UnsupportedError
from aot.operators import OperatorParams
from aot.registry import Registry

CPU_TARGET = "cpu"

# The importer's operator attributes (aot.naming): re-exported as part of the backend API.
OPERATOR_KIND_ATTR = naming.OPERATOR_KIND_ATTR
OPERATOR_PARAMS_ATTR = naming.OPERATOR_PARAMS_ATTR


@dataclass(frozen=True)
class TensorInfo:
    """One operand of an operator as a predicate or a lowering hook sees it."""

    shape: tuple[int, ...]
    dtype: str
    # The value when it is a constant (weights, bias, requantization tables), else None.
    data: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class OperatorInfo:
    """One imported operator, the unit a pattern claims.

    ``kind`` is the importer's operator kind (``conv2d_int8``, ``depthwise_conv2d_int8``,
    ``fully_connected_int8``, ``add_int8``, ...; ``aot operators`` lists them) and
    ``params`` its parameters as the kind's frozen dataclass from aot/operators/params.py:
    :class:`~aot.operators.ConvParams` for the two convolutions (``strides``,
    ``dilation``, ``padding`` (top, left), ``input_zp``, ``output_zp``, ``act_min``,
    ``act_max``, ``multiplier`` and ``shift`` when per-tensor, ``zero_point_in_bias``,
    ``depth_multiplier``), ``FullyConnectedParams``, ``AddParams``, ``PoolParams``, else
    ``GenericParams`` (an operator the importer did not annotate: ``GenericParams()``,
    no operands). ``aot.operators.operator_params(op, ConvParams)`` gives them checked
    for the family, or None. ``inputs`` are in the call's order (activation, weights,
    bias, requantization tables; ``params.operands`` names them); ``source`` is the
    source model's operator (``CONV_2D #3``) when the importer knows it. ``function`` is
    the operator's TIR PrimFunc (for a backend that lowers through TIR with its own
    schedule). Inside a :class:`Region`, ``wiring`` says where each input comes from:
    ``("param", i)``, the region's i-th parameter, or ``("op", k)``, the result of the
    region's k-th operator.
    """

    kind: str
    params: OperatorParams
    inputs: tuple[TensorInfo, ...]
    output: TensorInfo
    source: Any = None  # aot.frontend.model.SourceOperator | None
    function: Any = field(default=None, compare=False, repr=False)
    wiring: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.params, OperatorParams):
            raise InternalError(
                f"OperatorInfo({self.kind!r}): params is a {type(self.params).__name__}; "
                "expected the kind's dataclass (aot.operators.params_of(kind, values), or "
                "GenericParams() for an operator without the importer's parameters)"
            )


Predicate = Callable[[OperatorInfo], bool]


@dataclass(frozen=True)
class OperatorPattern:
    """What a backend takes: operators of these kinds for which ``check`` holds.

    ``name`` is registered with Relax's pattern registry as ``<backend>.<name>``. A
    backend that needs a multi-operator pattern may override :meth:`Backend.fusion_patterns`
    and return Relax ``FusionPattern`` s directly.
    """

    name: str
    kinds: tuple[str, ...]
    check: Predicate | None = None


@dataclass(frozen=True)
class Region:
    """A partitioned function one backend takes: what :meth:`Backend.lower` receives.

    ``operators`` are in execution order; ``params`` the function's parameters (model
    tensors it reads: activations and constants) and ``outputs`` what it writes, both as
    :class:`TensorInfo`. ``function`` is the Relax function (with its ``Composite``
    functions inside) and ``module`` the IRModule holding the PrimFuncs it calls.
    """

    symbol: str  # C-safe name for this region, unique in the model (aot.naming)
    backend: str
    operators: tuple[OperatorInfo, ...]
    params: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    function: Any = field(default=None, compare=False, repr=False)
    module: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class BackendConstant:
    """Read-only data a backend's step needs besides the model's own constants (command
    streams, packed weights). It becomes a constant buffer of the step (after the region's
    params), so the planner places it where the step's target reaches, like the weights."""

    name: str
    data: np.ndarray  # 1-D, any integer dtype; emitted as a const array of that dtype
    alignment: int = 16


@dataclass(frozen=True)
class Artifact:
    """What lowering keeps for one step; no C text.

    The CPU backend's artifact holds a TIR PrimFunc (``tir``); an accelerator's holds its
    own data in ``payload`` (for example a command stream description). ``scratch_bytes``
    is working memory the step needs only while it runs (planned like any buffer, passed
    as the last pointer); ``elementwise`` allows its output to be computed in place over
    its last-used input of the same size.
    """

    symbol: str
    tir: Any = field(default=None, compare=False, repr=False)
    payload: Any = field(default=None, compare=False, repr=False)
    constants: tuple[BackendConstant, ...] = ()
    scratch_bytes: int = 0
    elementwise: bool = False
    # Region parameters (indices) the backend's code never reads, e.g. weights its own
    # compiler re-encoded into a constant: dropped from the step's arguments, and a model
    # constant no step reads any more is not emitted.
    unused_params: tuple[int, ...] = ()
    # Region operands (numbered as the region has them: its params, then its outputs) that
    # only the step's CPU-side code touches: it copies them to or from memory its
    # accelerator reaches (Ethos-U's glue copies the feature maps into Vela's arena). The
    # planner gives those the CPU's reach; every other operand, and the backend
    # constants, are touched by the backend's target. ``cpu_scratch``: the CPU-side code
    # touches the scratch too (it stages operands there).
    cpu_operands: tuple[int, ...] = ()
    cpu_scratch: bool = False
    # Its output shares a buffer with an input (an in-place step, Backend.in_place_shift):
    # the code must not promise the compiler that they never alias (no restrict).
    aliased: bool = False
    # Sources and headers this step's code needs (a kernel's C file), beside those the
    # backend's runtime() gives every build; aot copies each file once.
    runtime: RuntimeFiles | None = None


@dataclass(frozen=True)
class LowerContext:
    """What :meth:`Backend.lower` knows beyond its region: what the backend's own
    ``prepare`` returned, and the artifacts it returned for the earlier regions of this
    build (regions are lowered in execution order), so it needs no state of its own to
    number its steps or to pair regions with its compiler's subgraphs."""

    prepared: Any = None
    earlier: tuple[Artifact, ...] = ()


def call_hook(hook: Callable[..., Any], ctx: Any) -> Any:
    """``hook(ctx)``, or ``hook()`` for a hook that declares no parameter for the build's
    context (one written before contexts existed)."""
    import inspect

    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: assume the new form
        return hook(ctx)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes = any(
        p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters
    )
    return hook(ctx) if takes else hook()


def fault_symbol(model: str) -> str:
    """The model's ``struct aot_fault`` (aot/model.h), defined by the executor of a model
    with accelerator steps: a failing step's driver fills it in (all but ``step``)."""
    return f"aot_{model}_fault"


@dataclass(frozen=True)
class EmitContext:
    """What emit knows about one step's buffers: a C expression per argument (the region's
    params, then its outputs, then its backend constants), the scratch pointer (or None)
    and the model's name (the prefix of every symbol)."""

    model: str
    args: tuple[str, ...]
    arg_types: tuple[str, ...]  # C element types, e.g. "int8_t"
    scratch: str | None
    error_prefix: str  # the aot error macro prefix, e.g. "AOT_ERR_MODEL"


@dataclass(frozen=True)
class EmittedCode:
    """A step's C: ``functions`` (definitions, into the kernels file), ``prototypes``
    (into the library's internal header), ``call`` (statements inside ``run()``; they may
    ``return`` an ``int32_t`` aot error code on failure), ``includes`` (headers the
    kernels and executor files include, e.g. a driver's) and ``helpers`` (names of the C
    printer's helper functions the functions use)."""

    call: tuple[str, ...]
    functions: tuple[str, ...] = ()
    prototypes: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    helpers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RuntimeFiles:
    """Sources and headers a backend adds to the firmware (its driver or device model).

    Sources are copied into the model library (``model/src/backends/<name>/``), headers
    into ``model/include/``; ``include_dirs`` (absolute, for user-supplied drivers) and
    ``defines`` are added to the build."""

    sources: tuple[Path, ...] = ()
    headers: tuple[Path, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    defines: Mapping[str, str] = field(default_factory=dict)


class Backend:
    """Subclass this to add an accelerator. Only :meth:`patterns`, :meth:`lower` and
    :meth:`emit` are required; every other hook has a default that does nothing."""

    name: ClassVar[str] = ""  # the --accelerator name and registry key
    description: ClassVar[str] = ""
    # The compute unit its steps run on (a pool's ``targets`` entry); defaults to name.
    target_name: ClassVar[str | None] = None
    alignment: ClassVar[int] = 16  # bytes, for every buffer its steps touch
    # The operator kinds lower()/emit() handle; None: every kind its patterns name.
    lowers: ClassVar[tuple[str, ...] | None] = None
    # A model input or output (the caller's memory, reached by the CPU unless the board
    # says otherwise) that one of this backend's steps touches directly: True, aot copies
    # it into / out of a pool the target reaches (a copy step, as with --allow-copies);
    # False, the build fails unless --io-in-pool or --allow-copies is given.
    io_copies: ClassVar[bool] = False
    # False: every claimed operator is a region (a step) of its own, never merged with
    # its neighbours (a kernel library: the planner still plans every tensor).
    merge_regions: ClassVar[bool] = True
    # None: its firmware runs under aot's emulator (QEMU), as a device model or plain C.
    # Else why it cannot and what can run it, the end of 'aot run's refusal ("QEMU has no
    # Ethos-U model; ..."; ``{folder}`` becomes the build folder); recorded in
    # metadata.json, so that run refuses before QEMU starts.
    emulator_note: ClassVar[str | None] = None

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options: Mapping[str, Any] = dict(options or {})

    @property
    def target(self) -> str:
        return self.target_name or self.name

    # -- partition ---------------------------------------------------------------------
    def prepare(self, model: Any, board: Any = None) -> Any:
        """Called once per build, after import and before partitioning, with the
        ``ImportedModel`` and the ``Board`` (None when only a library is built). A backend
        whose compiler looks at the whole model first (Ethos-U: Vela) does it here and
        returns what it found: the build's context for this backend, handed to
        ``patterns``, ``lower`` (as ``LowerContext.prepared``), ``runtime`` and ``report``.
        None by default."""
        return None

    def patterns(self, ctx: Any = None) -> Sequence[OperatorPattern]:
        """The operators this backend takes (see :class:`OperatorPattern`); ``ctx`` is what
        ``prepare`` returned (None where no model is at hand: ``aot backends``)."""
        raise NotImplementedError(f"backend {self.name} defines no patterns()")

    def passes_before(self) -> Sequence[Any]:
        """Relax passes to run on the imported module before partitioning."""
        return ()

    def passes_after(self) -> Sequence[Any]:
        """Relax passes to run on the partitioned module."""
        return ()

    def can_lower(self, info: OperatorInfo) -> bool:
        """Whether :meth:`lower` can handle this operator kind. A pattern that claims an
        operator for which this is False is a bug in the backend, reported at build time
        (default: the kinds in ``lowers``, else every kind one of its patterns names)."""
        if self.lowers is not None:
            return info.kind in self.lowers
        return any(info.kind in p.kinds for p in call_hook(self.patterns, None))

    # -- lower -------------------------------------------------------------------------
    def lower(self, region: Region, ctx: Any = None) -> Artifact:
        """Turn a region into an :class:`Artifact` (no C text). ``ctx`` is a
        :class:`LowerContext`: what ``prepare`` returned and this backend's earlier
        artifacts; the symbol may be left empty (lowering fills it with
        ``region.symbol``)."""
        raise NotImplementedError(f"backend {self.name} defines no lower()")

    # -- emit --------------------------------------------------------------------------
    def emit(self, step: Any, artifact: Artifact, ctx: EmitContext) -> EmittedCode:
        """The C for one step (see :class:`EmittedCode`)."""
        raise NotImplementedError(f"backend {self.name} defines no emit()")

    # -- project -----------------------------------------------------------------------
    def runtime(self, ctx: Any = None) -> RuntimeFiles:
        """Driver or device-model files every firmware with this backend's steps needs
        (none by default); a step's own files travel in its ``Artifact.runtime``."""
        return RuntimeFiles()

    # -- memory ------------------------------------------------------------------------
    def reachable_memories(self, board: Any) -> tuple[str, ...] | None:
        """The board memories this backend's target reads and writes: the board's
        ``accelerators`` entry for this name (None: every memory, as for the CPU)."""
        if board is None:
            return None
        for accelerator in getattr(board, "accelerators", ()):
            if accelerator.name == self.name:
                return tuple(accelerator.memories)
        return None

    def implementation(self, artifact: Artifact) -> str | None:
        """What ran a step, for metadata.json's operators (e.g. the C kernel's name);
        None: nothing more to say than the backend's name."""
        return None

    def in_place_shift(self, artifact: Artifact, source: int, output: int) -> int | None:
        """How many bytes before argument ``source`` argument ``output`` may start in one
        buffer, the step's code run as it is, for an in-place step
        (aot.planning.in_place_rows); None (the default): not shown, never shared.
        The step then gets the artifact with ``aliased`` set."""
        return None

    def report(self, ctx: Any = None) -> Mapping[str, Any]:
        """What the backend's own compiler said about this build (``ctx``: what
        ``prepare`` returned), for metadata.json's ``backends`` entry (e.g. Vela's
        summary); empty by default."""
        return {}

    def describe(self) -> list[str]:
        """What ``aot backends`` prints about what the backend takes."""
        return [f"{p.name}: {', '.join(p.kinds)}" for p in self.patterns()]


def hook_failure(backend: str, hook: str, exc: BaseException) -> UnsupportedError:
    """The one-line error for a backend hook that raised: the backend's fault, not aot's
    (``-v`` prints the traceback). The exception's own text stays out: a plug-in's
    message may be several lines or say nothing to a user."""
    return UnsupportedError(
        f"backend {backend} failed in {hook} ({type(exc).__name__}); fix the backend, or "
        f"build without --accelerator {backend} ('aot -v ...' shows the traceback)"
    )


@contextmanager
def backend_hook(backend: Backend, hook: str) -> Iterator[None]:
    """Run one of ``backend``'s hooks: an exception that is not an :class:`AotError`
    becomes :func:`hook_failure` (an AotError the backend raised on purpose passes)."""
    try:
        yield
    except AotError:
        raise
    except Exception as exc:
        raise hook_failure(backend.name, hook, exc) from exc


backends: Registry[type[Backend]] = Registry(
    "accelerator backend",
    "aot.backends",
    "install the package that provides it ('aot backends' lists what is installed)",
)


def get_backend(name: str, options: Mapping[str, Any] | None = None) -> Backend:
    """An instance of the backend registered as ``name`` (built-in or entry point)."""
    cls = backends.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConfigError(
            f"the aot.backends entry point '{name}' is not a subclass of aot.backends.Backend; "
            "fix the package that declares it"
        )
    return cls(options)


@dataclass(frozen=True)
class PreparedBackends:
    """The build's backends in priority order (the accelerators, then the kernel
    backend), each with what its prepare() returned: its context for the later hooks (no
    backend keeps state between stages)."""

    backends: tuple[Backend, ...]
    contexts: Mapping[str, Any]


def prepare_backends(backends: Sequence[Backend], model: Any, board: Any) -> PreparedBackends:
    """Each backend's prepare() for the imported ``model`` on ``board``."""
    contexts: dict[str, Any] = {}
    for backend in backends:
        with backend_hook(backend, "prepare()"):
            contexts[backend.name] = backend.prepare(model, board)
    return PreparedBackends(tuple(backends), contexts)


@dataclass(frozen=True)
class PartitionHooks:
    """What partitioning asks of one backend, asked once: its passes before and after
    fusion and its operator patterns, with its context."""

    backend: Backend
    context: Any
    passes_before: tuple[Any, ...]
    patterns: tuple[Any, ...]  # OperatorPatterns, checked by the partition stage
    passes_after: tuple[Any, ...]


def partition_hooks(
    backends: Sequence[Backend], contexts: Mapping[str, Any]
) -> tuple[PartitionHooks, ...]:
    """The partition hooks of every backend, in priority order."""
    asked = []
    for backend in backends:
        context = contexts.get(backend.name)
        with backend_hook(backend, "passes_before()"):
            before = tuple(backend.passes_before())
        with backend_hook(backend, "patterns()"):
            patterns = tuple(call_hook(backend.patterns, context))
        with backend_hook(backend, "passes_after()"):
            after = tuple(backend.passes_after())
        asked.append(PartitionHooks(backend, context, before, patterns, after))
    return tuple(asked)


def prepared_partition_hooks(
    backends: Sequence[Backend], model: Any, board: Any
) -> tuple[PartitionHooks, ...]:
    """Each backend prepared for the imported ``model`` on ``board`` (its context), then
    asked for its partition hooks: everything partitioning needs of the backends, asked
    once."""
    return partition_hooks(backends, prepare_backends(backends, model, board).contexts)


def check_claims(claims: Sequence[tuple[Backend, OperatorInfo]]) -> None:
    """Every operator a backend's patterns claimed, its lowering must handle
    (``can_lower``): otherwise a one-line error naming the backend."""
    for backend, info in claims:
        with backend_hook(backend, "can_lower()"):
            claimable = backend.can_lower(info)
        if not claimable:
            raise UnsupportedError(
                f"backend {backend.name} claims a {info.kind} operator its lowering cannot "
                f"handle; fix that backend's patterns() (or its can_lower()), or build "
                f"without --accelerator {backend.name}"
            )


@dataclass(frozen=True)
class FinishedBackends:
    """What the backends give a lowered model's library: the runtime files of each one
    that took a step (the others' drivers are not needed), in priority order, and what
    each backend's own compiler said (e.g. Vela's summary), when it says anything."""

    runtimes: Mapping[str, RuntimeFiles]
    reports: Mapping[str, Mapping[str, Any]]


def finish_backends(
    backends: Sequence[Backend], contexts: Mapping[str, Any], lowered: Any
) -> FinishedBackends:
    """The runtime() and report() hooks of ``backends`` (with their ``contexts``) for
    ``lowered``."""
    used = {step.backend for step in lowered.steps}
    runtimes: dict[str, RuntimeFiles] = {}
    reports: dict[str, Mapping[str, Any]] = {}
    for backend in backends:
        if backend.name in used:
            with backend_hook(backend, "runtime()"):
                runtimes[backend.name] = call_hook(backend.runtime, contexts.get(backend.name))
    for backend in backends:
        with backend_hook(backend, "report()"):
            said = dict(call_hook(backend.report, contexts.get(backend.name)))
        if said:
            reports[backend.name] = said
    return FinishedBackends(runtimes, reports)
