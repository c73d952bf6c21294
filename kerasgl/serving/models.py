"""The models a server serves: each loaded once on the kg.Worker, under a name and version "1",
with its batching queue. The paths come from the command line only; a request names a model by
the name it was given here and can reach nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ShapeError
from ..worker import Worker, WorkerModel
from .batching import Batcher, run_on_worker

VERSION = "1"


@dataclass
class ServedModel:
    name: str
    model: WorkerModel
    batcher: Batcher
    version: str = VERSION

    @property
    def input_specs(self) -> list:
        return list(self.model.inputs)

    @property
    def input_names(self) -> list[str]:
        return self.model.input_names

    @property
    def bool_input_names(self) -> set[str]:
        """The inputs that take JSON true / false (every other input refuses them)."""
        return {spec.name for spec in self.model.inputs if spec.dtype == "bool"}

    @property
    def output_names(self) -> list[str]:
        return self.model.output_names

    @property
    def max_rows(self) -> int:
        """The most examples one request may hold: one batch's (with batching off too, so that
        no request runs larger than the plans warmed up and the queue's bounds assume)."""
        return self.batcher.max_batch_size


def _predict_list(model: WorkerModel):
    """predict(inputs in input order) -> outputs as a list in output order; called on the worker,
    one batch as one GPU run (batch_size = its rows)."""
    names = model.output_names

    def predict(inputs: list) -> list:
        rows = inputs[0].shape[0]
        out = model.predict(inputs if len(inputs) > 1 else inputs[0], batch_size=rows)
        if isinstance(out, dict):
            return [out[name] for name in names]
        return list(out) if isinstance(out, list) else [out]
    return predict


def load(worker: Worker, paths: dict, *, batching: bool, on_batch=None, after_batch=None,
         storage_dtype: str = "float32", activation_dtype: str = "float32",
         **batcher_options) -> dict:
    """{name: ServedModel} for {name: path}, every model loaded on `worker`, each with a Batcher
    of `batcher_options` (checked before: batching.checked_options). A model that fails to load
    frees those loaded before it (and the error propagates). after_batch() runs on the worker
    after each batch. storage_dtype and activation_dtype: load_model's, for every model
    (`serve --storage-dtype`, `--activation-dtype`)."""
    served = {}
    try:
        for name, path in paths.items():
            model = worker.load_model(path, storage_dtype=storage_dtype,
                                      activation_dtype=activation_dtype)
            try:
                batcher = Batcher(
                    run_on_worker(worker, _predict_list(model), after_batch), batching=batching,
                    on_batch=(lambda rows, padded, name=name: on_batch(name, rows, padded))
                    if on_batch else None, **batcher_options)
                if batching:
                    # A plan for every size a batch runs at, none evicted by another
                    # (plans/cache.py).
                    model.plan_cache_size = max(model.plan_cache_size,
                                                len(batcher.allowed_batch_sizes))
            except BaseException:
                model.dispose()          # not yet among `served`, which the handler below frees
                raise
            served[name] = ServedModel(name, model, batcher)
    except BaseException:
        for entry in served.values():
            entry.model.dispose()
        raise
    return served


def warm_up(entry: ServedModel) -> list[int]:
    """Compile the plans of every batch size the batcher runs (Model.warm_up), so that the first
    requests are not the slow ones. Returns the sizes warmed ([] for a model whose inputs have a
    free dimension besides the batch: it warms up on its first requests)."""
    sizes = entry.batcher.allowed_batch_sizes if entry.batcher.batching else (1,)
    warmed = []
    for size in sizes:
        try:
            entry.model.warm_up(size)
        except ShapeError:
            return warmed
        warmed.append(size)
    return warmed
