"""The `kerasgl` command.

    kerasgl predict model.h5 input.npy -o out.npy [--batch-size 32]
    kerasgl summary model.keras [--expand-nested]
    kerasgl info
    kerasgl demo
    kerasgl tune [--dry-run]
    kerasgl gl-objects [...]

predict reads one .npy (one-input model) or a .npz (several inputs, by input name, else in input
order: arr_0, arr_1, ... as np.savez names them) and writes one .npy (one output) or a .npz (one
array per output, named by the output layer). Without -o it prints each output's shape and values.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

EXIT_ERROR = 1


def _read_inputs(path: str, model):
    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.ndarray):
        return loaded
    with loaded:
        names = [spec.name for spec in model.inputs]
        keys = list(loaded.keys())
        if set(names) <= set(keys):
            return [loaded[name] for name in names]
        if len(keys) != len(names):
            raise SystemExit(f"kerasgl predict: {path} holds arrays {keys}; model '{model.name}' "
                             f"takes inputs {names}.")
        ordered = sorted(keys, key=lambda k: int(k[4:]) if k.startswith("arr_") and k[4:].isdigit() else k)
        arrays = [loaded[k] for k in ordered]
        return arrays[0] if len(arrays) == 1 else arrays


def _named_outputs(model, outputs) -> dict:
    if isinstance(outputs, dict):
        return outputs
    listed = outputs if isinstance(outputs, list) else [outputs]
    names = [spec.name for spec in model.outputs]
    if len(set(names)) != len(names):
        names = [f"output_{i}" for i in range(len(names))]
    return dict(zip(names, listed))


def _write_outputs(path: str, model, outputs) -> None:
    if isinstance(outputs, (list, dict)):
        if not path.endswith(".npz"):
            raise SystemExit(f"kerasgl predict: model '{model.name}' has {len(outputs)} outputs; "
                             "name the output file *.npz to hold them all.")
        np.savez(path, **_named_outputs(model, outputs))
        return
    if path.endswith(".npz"):
        np.savez(path, **_named_outputs(model, outputs))
    else:
        np.save(path, outputs)


def cmd_predict(args) -> int:
    import kerasgl as kg
    with kg.load_model(args.model) as model:
        x = _read_inputs(args.input, model)
        outputs = model.predict(x, batch_size=args.batch_size, verbose=args.verbose)
        if args.output:
            _write_outputs(args.output, model, outputs)
            print(f"wrote {args.output}")
        else:
            with np.printoptions(precision=6, suppress=True, threshold=200):
                for name, array in _named_outputs(model, outputs).items():
                    print(f"{name}: shape {array.shape} {array.dtype}")
                    print(array)
    return 0


def cmd_summary(args) -> int:
    import kerasgl as kg
    with kg.load_model(args.model) as model:
        model.summary(expand_nested=args.expand_nested)
    return 0


def cmd_info(args) -> int:
    import kerasgl as kg
    print(f"kerasgl {kg.__version__}")
    print(kg.info())
    return 0


def cmd_demo(args) -> int:
    from . import demo
    return demo.main(repeats=args.repeats)


def cmd_tune(args) -> int:
    from . import autotune
    print(f"Timing kernel variants on {kg_info_line()} (each compiled once first)...")
    if args.dry_run:
        chosen = autotune.measure(report=print)
    else:
        chosen = autotune.measure_and_save(report=print)
    print("choices: " + ", ".join(f"{k}={v}" for k, v in chosen.items()))
    return 0


def kg_info_line() -> str:
    from .runtime import context
    info = context.info()
    return f"{info.renderer} ({info.version})"


def cmd_gl_objects(args, rest) -> int:
    from . import gl_dump   # imported only here: it is a diagnostic tool
    return gl_dump.main(rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kerasgl", description="Run Keras models on an OpenGL 4.3 GPU.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("predict", help="run a model on inputs from a .npy/.npz file")
    p.add_argument("model", help=".keras or .h5 model file")
    p.add_argument("input", help=".npy (one input) or .npz (several, by input name or order)")
    p.add_argument("-o", "--output", help="write the outputs to this .npy (one) or .npz (several)")
    p.add_argument("--batch-size", type=int, default=None, help="samples per GPU run (default 32)")
    p.add_argument("--verbose", type=int, default=None, choices=(0, 1, 2),
                   help="0 silent, 1 progress bar, 2 one line (default: a bar on a terminal)")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("summary", help="print a model's layers, shapes, parameters and shaders")
    p.add_argument("model")
    p.add_argument("--expand-nested", action="store_true", help="list the layers of nested models")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("info", help="the GPU, its OpenGL version and limits")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("demo", help="classify digits with the small model shipped in the package")
    p.add_argument("--repeats", type=int, default=20, help="predict calls timed for steady state")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tune", help="time the kernel variants on this GPU and cache the fastest "
                                    "(kerasgl/autotune.py)")
    p.add_argument("--dry-run", action="store_true", help="print the timings, write nothing")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("gl-objects", help="GL objects before and after a workload (diagnostic)",
                       add_help=False)
    p.set_defaults(func=None)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] == "gl-objects":
        return cmd_gl_objects(None, argv[1:])
    args = parser.parse_args(argv)
    if getattr(args, "verbose", 0) is None:
        args.verbose = "auto"
    from .errors import KerasGLError
    try:
        return args.func(args) or 0
    except KerasGLError as exc:
        print(f"kerasgl {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except FileNotFoundError as exc:
        print(f"kerasgl {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
