"""``aot operators``: the operators each frontend supports, with dtypes and limits."""

from __future__ import annotations

import argparse
import json

from aot.cli.common import add_json_option
from aot.errors import ConfigError

HELP = "list the operators each frontend supports, with dtypes and limits"

DESCRIPTION = """\
List every operator aot can import, per frontend, with the dtypes it takes and its
limits (padding modes, strides, ranks, broadcasting, fused activations, opset versions).
The lists come from the importers' own tables, so they are what 'aot build' accepts;
docs/operators.md is the same text ('aot operators --markdown').

frontends (the --frontend of 'aot build'; 'auto' picks one per model):
  tflite-int8    aot's integer importer: .tflite with quantized inputs and outputs,
                 bit-exact with TFLite; also lists what TensorFlow Lite Micro offers
                 that it does not support yet
  onnx-int8      aot's integer ONNX importer: QDQ and QOperator .onnx models,
                 bit-exact with onnxruntime
  relax-tflite   TVM's TFLite frontend: float .tflite models
  relax-onnx     TVM's ONNX frontend: .onnx models (float32 and float64)

examples:
  aot operators                          every frontend, as tables
  aot operators --frontend tflite-int8   one frontend
  aot operators CONV_2D                  one operator in every frontend that has it
  aot operators --json                   machine-readable, for scripts
  aot operators --markdown > docs/operators.md   regenerate the documentation page

A '*' marks operators aot's tests check against the reference runtime (LiteRT or
onnxruntime); the others are accepted by the frontend and compile when they lower to
static-shape kernels. An unsupported operator stops 'aot build' with its name and
position in the graph.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from aot.frontend.operators import FRONTEND_NAMES

    parser = subparsers.add_parser(
        "operators",
        help=HELP,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name", nargs="?", metavar="OPERATOR", help="show only this operator (any case)"
    )
    parser.add_argument(
        "--frontend",
        choices=FRONTEND_NAMES,
        help="show one frontend only (default: all)",
    )
    output = parser.add_mutually_exclusive_group()
    add_json_option(output)
    output.add_argument(
        "--markdown",
        action="store_true",
        help="print the whole docs/operators.md page (every frontend)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from aot.frontend import operators

    if args.markdown:
        if args.name or args.frontend:
            raise ConfigError("--markdown prints the whole page; drop OPERATOR and --frontend")
        print(operators.render_markdown(), end="")
        return 0
    selected = operators.tables(args.frontend)
    if args.name:
        selected = operators.find(args.name, selected)
        if not selected:
            where = f"the {args.frontend} frontend" if args.frontend else "any frontend"
            raise ConfigError(
                f"no operator named {args.name} in {where}; 'aot operators' lists them all"
            )
    if args.json:
        print(json.dumps([operators.table_to_json(t) for t in selected], indent=2))
    else:
        print(operators.render_text(selected))
    return 0
