"""The files of `kerasgl predict`: which inputs it reads, what it writes, and the one-line errors
it gives when a file is not one it can use.

Inputs: a .npy (one-input model) or a .npz (several inputs: by input name, else in input order as
np.savez names them arr_0, arr_1, ...; `--array NAME` picks arrays of an .npz by name, in input
order). Outputs: .npy (one output), .npz (any number, one array per output), .txt or .csv (one
output as text: a row per sample, its values flattened, space- or comma-separated). A file name
with any other suffix is refused before the model is loaded, so that nothing is written under a
name that says otherwise (np.save would add ".npy" to it).
"""
from __future__ import annotations

import os

import numpy as np

INPUT_SUFFIXES = (".npy", ".npz")
OUTPUT_SUFFIXES = (".npy", ".npz", ".txt", ".csv")


class CLIError(Exception):
    """A file or argument the command cannot use: printed as one line, exit status 1."""


def suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def check_paths(input_path: str, output_path: str | None) -> None:
    """Refuse, before any work, an input that is not .npy / .npz or an output of another kind."""
    if suffix(input_path) not in INPUT_SUFFIXES:
        raise CLIError(f"{input_path} is not a .npy or .npz file (numpy's np.save / np.savez write "
                       "them); predict reads its inputs from one.")
    if output_path is not None and suffix(output_path) not in OUTPUT_SUFFIXES:
        raise CLIError(f"cannot write {output_path!r}: name the output file .npy (one output), "
                       ".npz (any number), .txt or .csv (one output as text).")


def _load(path: str):
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CLIError(f"no input file {path} (predict reads its inputs from a .npy or .npz "
                       "file that np.save / np.savez wrote)") from None
    except (ValueError, OSError, EOFError) as exc:
        raise CLIError(f"cannot read {path} as {suffix(path)}: {exc}") from None


def read_inputs(path: str, model, chosen: list[str] | None = None):
    """The model's input(s) from the file: one array, or a list in input order."""
    loaded = _load(path)
    if isinstance(loaded, np.ndarray):
        if chosen:
            raise CLIError(f"--array names arrays of an .npz file; {path} holds one array.")
        return loaded
    with loaded:
        names = [spec.name for spec in model.inputs]
        keys = list(loaded.keys())
        if chosen:
            unknown = [k for k in chosen if k not in keys]
            if unknown:
                raise CLIError(f"{path} has no array {unknown[0]!r}; it holds {keys}.")
            if len(chosen) != len(names):
                raise CLIError(f"model '{model.name}' takes {len(names)} input(s) {names}; "
                               f"--array named {len(chosen)}.")
            arrays = [loaded[k] for k in chosen]
        elif set(names) <= set(keys):
            arrays = [loaded[name] for name in names]
        elif len(keys) == len(names):
            ordered = sorted(keys, key=lambda k: (0, int(k[4:])) if k.startswith("arr_")
                             and k[4:].isdigit() else (1, k))
            arrays = [loaded[k] for k in ordered]
        else:
            example = " ".join(f"--array {k}" for k in keys[:len(names)])
            raise CLIError(f"{path} holds arrays {keys}; model '{model.name}' takes "
                           f"{len(names)} input(s) {names}. Name the array(s) to use, in input "
                           f"order: {example}")
        return arrays[0] if len(arrays) == 1 else arrays


def named_outputs(model, outputs) -> dict:
    if isinstance(outputs, dict):
        return outputs
    listed = outputs if isinstance(outputs, list) else [outputs]
    names = [spec.name for spec in model.outputs]
    if len(set(names)) != len(names):
        names = [f"output_{i}" for i in range(len(names))]
    return dict(zip(names, listed))


def write_outputs(path: str, model, outputs) -> str:
    """Write the outputs in the format the suffix names; returns what was written, in words."""
    kind = suffix(path)
    named = named_outputs(model, outputs)
    if kind == ".npz":
        np.savez(path, **named)
        return f"{path} (.npz: " + ", ".join(f"{k} {a.shape} {a.dtype}" for k, a in named.items()) + ")"
    if len(named) > 1:
        raise CLIError(f"model '{model.name}' has {len(named)} outputs; name the output file "
                       "*.npz to hold them all.")
    array = next(iter(named.values()))
    if kind == ".npy":
        np.save(path, array)
        return f"{path} (.npy: shape {array.shape} {array.dtype})"
    rows = array.reshape(array.shape[0], -1) if array.ndim > 1 else array.reshape(-1, 1)
    separator = "," if kind == ".csv" else " "
    np.savetxt(path, rows, fmt="%.9g" if array.dtype.kind == "f" else "%d", delimiter=separator)
    flattened = f", each sample's {array.shape[1:]} flattened" if array.ndim > 2 else ""
    words = "comma-separated" if kind == ".csv" else "space-separated"
    return (f"{path} (text: {rows.shape[0]} rows of {rows.shape[1]} {words} values{flattened}; "
            f"output shape {array.shape})")


def dtype_options(args) -> dict:
    """load_model's storage_dtype and activation_dtype from a command's options (kerasgl
    predict, summary, profile, generate)."""
    return {"storage_dtype": getattr(args, "storage_dtype", "float32"),
            "activation_dtype": getattr(args, "activation_dtype", "float32")}
