"""The `kerasgl` command.

    kerasgl predict model.h5 input.npy -o out.npy [--batch-size 32] [--storage-dtype float16]
                    [--activation-dtype float16]
    kerasgl summary model.keras [--expand-nested] [--storage-dtype float16]
                    [--activation-dtype float16]
    kerasgl info [--peak]
    kerasgl demo
    kerasgl tune [--dry-run]
    kerasgl gl-objects [...]
    kerasgl profile model.keras [input.npy] [--batch-size 8] [--trace t.json] [--plot p.png]
    kerasgl serve model.keras [--port 8501] [...]   (TF Serving's REST API, KServe v2; kerasgl/serving/)
    kerasgl generate PRESET "prompt" [--max-length 64] [--sampler greedy|top_k|top_p] [--seed 1]

predict reads one .npy (one-input model) or a .npz (several inputs, by input name, else in input
order: arr_0, arr_1, ... as np.savez names them; `--array NAME` picks them by name) and writes
.npy (one output), .npz (one array per output, named by the output layer), or .txt / .csv (one
output as text); kerasgl/cli_io.py. Without -o it prints each output's shape and values.

`kerasgl --version` and `python -m kerasgl` work as usual. A bad argument, a file the command
cannot use, or a kerasgl error prints one line on stderr and exits non-zero, never a traceback;
output piped into a reader that stops early (`| head`) ends the command quietly.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

from . import cli_io
from .cli_io import CLIError, named_outputs as _named_outputs
from .errors import KerasGLError

EXIT_ERROR = 1


def cmd_predict(args) -> int:
    import kerasgl as kg
    cli_io.check_paths(args.input, args.output)      # before the model's load: fail fast
    with kg.load_model(args.model, **cli_io.dtype_options(args)) as model:
        x = cli_io.read_inputs(args.input, model, args.array)
        outputs = model.predict(x, batch_size=args.batch_size, verbose=args.verbose)
        if args.output:
            print(f"wrote {cli_io.write_outputs(args.output, model, outputs)}")
        else:
            with np.printoptions(precision=6, suppress=True, threshold=200):
                for name, array in _named_outputs(model, outputs).items():
                    print(f"{name}: shape {array.shape} {array.dtype}")
                    print(array)
    return 0


def cmd_summary(args) -> int:
    import kerasgl as kg
    with kg.load_model(args.model, **cli_io.dtype_options(args)) as model:
        model.summary(expand_nested=args.expand_nested)
    return 0


def cmd_info(args) -> int:
    import kerasgl as kg
    from . import settings
    print(f"kerasgl {kg.__version__}")
    print(kg.info())
    from .runtime import context
    print(f"device choice: {context.device_choice().reason}")
    print(device_peak_line(measure=args.peak))
    print("settings (docs/settings.md):")
    print(settings.table())
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
    # The device's peaks (kerasgl/profiler/peak.py), measured again with the new choices in force.
    from .profiler import peak
    measured = peak.measure()
    if not args.dry_run:
        peak.save(measured)
    print(f"device peak: {measured}")
    return 0


def device_peak_line(measure: bool) -> str:
    """`kerasgl info`'s line on the device's peaks: cached ones (kerasgl/profiler/peak.py), or
    measured now when asked (`--peak`); never measured unasked, so that info stays fast."""
    from .profiler import peak
    found = peak.device_peak(refresh=True) if measure else peak.cached()
    if found is None:
        return "device peak: not measured yet (`kerasgl info --peak` or `kerasgl tune`)"
    return f"device peak: {found}" + ("" if measure else f" (cached {found.measured_at})")


def kg_info_line() -> str:
    from .runtime import context
    info = context.info()
    return f"{info.renderer} ({info.version})"


def cmd_profile(args) -> int:
    from .profiler import command   # imported only here: the profiler's command
    return command.run(args)


def cmd_gl_objects(args, rest) -> int:
    from . import gl_dump   # imported only here: it is a diagnostic tool
    return gl_dump.main(rest)


def cmd_generate(args) -> int:
    import kerasgl as kg
    from .kerashub import samplers, streaming   # imported only here: KerasHub's text side
    with kg.load_model(args.preset, **cli_io.dtype_options(args)) as model:
        if not isinstance(model, kg.kerashub.HubCausalLM) or model.tokenizer is None:
            raise CLIError(f"{args.preset}: not a KerasHub causal LM preset saved with its "
                           "tokenizer")
        stream = streaming.TextStream(model.tokenizer, _write_now)
        text = model.generate(args.prompt, max_length=args.max_length,
                              sampler=samplers.SAMPLERS[args.sampler](seed=args.seed),
                              on_step=stream)
        stream.finish(text)
        print()
    return 0


def _write_now(text: str) -> None:
    """Streamed text, shown as it comes (stdout is block-buffered when piped)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_serve(args, rest) -> int:
    try:
        from .serving import server   # imported only here: the server's packages are an extra
    except ImportError as exc:
        print(f"kerasgl serve needs the serve extra ({exc}): pip install 'kerasgl[serve]' "
              "from a package index, or, in a clone of the repository, "
              ".venv/bin/pip install '.[serve]'", file=sys.stderr)
        return EXIT_ERROR
    return server.main(rest)


STORAGE_DTYPES = ("float32", "float16")      # load_model's storage_dtype (docs/float16.md)


def add_storage_dtype(parser) -> None:
    """--storage-dtype: load_model's storage_dtype, for the commands that load a model (and
    `kerasgl serve`'s, kerasgl/serving/options.py)."""
    parser.add_argument("--storage-dtype", default="float32", choices=STORAGE_DTYPES,
                        help="how the large weight matrices are stored on the GPU: float16 "
                             "halves their memory, results move slightly (default float32; "
                             "docs/float16.md)")


ACTIVATION_DTYPES = ("float32", "float16")   # load_model's activation_dtype (docs/float16.md)


def add_activation_dtype(parser) -> None:
    """--activation-dtype: load_model's activation_dtype, for the commands that load a model
    (and `kerasgl serve`'s, kerasgl/serving/options.py)."""
    parser.add_argument("--activation-dtype", default="float32", choices=ACTIVATION_DTYPES,
                        help="how the tensors between layers are kept on the GPU: float16 "
                             "halves their memory and traffic, results move slightly (default "
                             "float32; docs/float16.md)")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (a batch size, a repeat count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (1 or more), got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, with its error as one line (and where to read more) instead of the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _describe_subcommands(sub) -> None:
    """Every subcommand's --help opens with what it does: its one-line help, where it has no
    description of its own."""
    for action in sub._choices_actions:
        parser = sub.choices.get(action.dest)
        if parser is not None and parser.description is None and action.help:
            parser.description = action.help[0].upper() + action.help[1:] + "."


def build_parser() -> argparse.ArgumentParser:
    import kerasgl
    parser = _Parser(prog="kerasgl", description="Run Keras models on an OpenGL 4.3 GPU.")
    parser.add_argument("--version", action="version", version=f"kerasgl {kerasgl.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("predict", help="run a model on inputs from a .npy/.npz file")
    p.add_argument("model", help=".keras or .h5 model file")
    p.add_argument("input", help=".npy (one input) or .npz (several, by input name or order)")
    p.add_argument("-o", "--output", help="write the outputs to this .npy (one), .npz (several), "
                                          ".txt or .csv (one, as text: a row per sample)")
    p.add_argument("--array", action="append", metavar="NAME",
                   help="the array of the .npz to feed (repeat it for each input, in input order)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="samples per GPU run (default 32)")
    p.add_argument("--verbose", type=int, default=None, choices=(0, 1, 2),
                   help="0 silent, 1 progress bar, 2 one line (default: a bar on a terminal)")
    add_storage_dtype(p)
    add_activation_dtype(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("summary", help="print a model's layers, shapes, parameters and shaders")
    p.add_argument("model")
    p.add_argument("--expand-nested", action="store_true", help="list the layers of nested models")
    add_storage_dtype(p)
    add_activation_dtype(p)
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("info", help="the GPU, its OpenGL version and limits, kerasgl's settings")
    p.add_argument("--peak", action="store_true", help="measure the device's FMA throughput and "
                   "memory bandwidth now (a few seconds) and cache them; without it, cached "
                   "figures only")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("demo", help="classify digits with the small model shipped in the package")
    p.add_argument("--repeats", type=positive_int, default=20,
                   help="predict calls timed for steady state")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("tune", help="time the kernel variants on this GPU and cache the fastest "
                                    "(kerasgl/autotune.py)")
    p.add_argument("--dry-run", action="store_true", help="print the timings and the device's "
                   "peaks, write nothing")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("profile", help="profile a model's predict: time per layer and kernel, "
                                       "GPU and CPU, memory (docs/profiling.md)")
    p.add_argument("model", help=".keras or .h5 model file")
    p.add_argument("input", nargs="?", default=None,
                   help=".npy / .npz input (default: random data at --batch-size samples)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="samples per GPU run (and of the random input; default 1 without INPUT)")
    p.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    p.add_argument("--plot", metavar="OUT.png", help="draw time per layer and memory "
                                                     "(needs matplotlib: kerasgl[plots])")
    p.add_argument("--runs", type=positive_int, default=1, help="profiled predict calls")
    p.add_argument("--sort-by", default="gpu_time",
                   choices=("gpu_time", "cpu_time", "calls", "name"))
    p.add_argument("--limit", type=positive_int, default=None, help="rows per table")
    p.add_argument("--no-warm-up", action="store_true",
                   help="profile the first calls (compiles, recordings) instead of the steady state")
    p.add_argument("--cpu-only", action="store_true", help="no GPU timer queries")
    add_storage_dtype(p)
    add_activation_dtype(p)
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("generate", help="continue a prompt with a KerasHub causal LM preset "
                                        "saved with its tokenizer, streaming the text "
                                        "(docs/kerashub.md; pip install 'kerasgl[kerashub]')")
    p.add_argument("preset", help="a KerasHub preset folder (GPT-2, Gemma, Llama, Mistral)")
    p.add_argument("prompt")
    p.add_argument("--max-length", type=positive_int, default=None,
                   help="tokens in all, prompt included (default: the preset's sequence_length)")
    p.add_argument("--sampler", default="top_k", choices=("greedy", "top_k", "top_p"),
                   help="how the next token is chosen (default KerasHub's top_k)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of top_k / top_p draws: the same seed, the same text")
    add_storage_dtype(p)
    add_activation_dtype(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("serve", help="serve models over TensorFlow Serving's REST API and the "
                                     "Open Inference Protocol (HTTP, gRPC), with dynamic "
                                     "batching (pip install 'kerasgl[serve]')",
                       add_help=False)
    p.set_defaults(func=None)

    p = sub.add_parser("gl-objects", help="GL objects before and after a workload (diagnostic)",
                       add_help=False)
    p.set_defaults(func=None)
    _describe_subcommands(sub)
    return parser


def _quiet_failures(main):
    """main() with the failures a user causes as one line: a closed pipe ends quietly (the
    reader has what it wanted, as with `cat | head`), and an unusable file or value, from
    kerasgl's checks or numpy's, prints `kerasgl <command>: <what>` and exits 1."""
    @functools.wraps(main)
    def run(argv=None) -> int:
        argv = list(sys.argv[1:] if argv is None else argv)
        command = next((a for a in argv if not a.startswith("-")), "")
        try:
            status = main(argv)
            sys.stdout.flush()             # a closed pipe shows here, not at exit
            return status
        except BrokenPipeError:
            # Python flushes stdout again at exit: point it at /dev/null so that flush is silent.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 141                     # 128 + SIGPIPE, what a shell reports for `cat`
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except (CLIError, KerasGLError, ValueError, OSError) as exc:
            what = str(exc) if isinstance(exc, CLIError) else f"{type(exc).__name__}: {exc}"
            print(f"{'kerasgl ' + command if command else 'kerasgl'}: {what}", file=sys.stderr)
            return EXIT_ERROR
    return run


@_quiet_failures
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] == "gl-objects":
        return cmd_gl_objects(None, argv[1:])
    if argv and argv[0] == "serve":
        return cmd_serve(None, argv[1:])
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
