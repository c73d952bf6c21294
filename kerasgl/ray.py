"""Batch inference with Ray Data: `kerasgl.ray.Predictor`, a callable class for map_batches.

    import ray, kerasgl.ray
    ds = ray.data.read_images("s3://bucket/images/", size=(224, 224))
    scored = ds.map_batches(kerasgl.ray.Predictor, fn_constructor_kwargs={"path": "model.keras"},
                            concurrency=4, num_gpus=1, batch_size=64)

Ray starts `concurrency` actors; each loads the model once, in its own process, and runs every
batch it is given. Columns in, columns out:

- a batch with one column feeds a one-input model whatever the column is called ("data" for
  ray.data.from_numpy); otherwise the columns are the inputs by name, or by `input_columns`
  ({input name: column}, or one column's name for a one-input model: "image" for read_images),
  and the other columns are passed through untouched (the files' paths, an id);
- the outputs come back as columns named by output (the model's output layers, or the keys of a
  model built with dict outputs).

With num_gpus=1 Ray gives each actor its GPU through CUDA_VISIBLE_DEVICES, and kerasgl opens the
EGL device that is that GPU (kerasgl/runtime/egl_devices.py), so N actors use N GPUs. Inside the
actor the model lives on a kg.Worker: Ray may call an actor's methods from more than one thread,
and the GL context must stay on one. Ray is the `ray` extra (pip install 'kerasgl[ray]'); this
module imports nothing of it (Ray imports the class in its actors).
"""
from __future__ import annotations

import numpy as np

from .errors import ShapeError
from .model import check_activation_dtype, check_storage_dtype
from .runtime import context
from .worker import Worker


class Predictor:
    """Loads the model at `path` once per Ray actor and predicts each batch (a dict of numpy
    columns, Ray Data's "numpy" batch format) to a dict of output columns. `batch_size`: examples
    per GPU run inside the actor (default: the whole batch Ray hands over, as one run).
    `storage_dtype`: load_model's ("float16" stores the large weight matrices as halves:
    docs/float16.md). `activation_dtype`: load_model's too ("float16" keeps the tensors between
    layers as halves)."""

    def __init__(self, path, batch_size: int | None = None, input_columns=None,
                 storage_dtype: str = "float32", activation_dtype: str = "float32"):
        self.path, self.batch_size = str(path), batch_size
        storage_dtype = check_storage_dtype(storage_dtype)    # before the worker: nothing to free
        activation_dtype = check_activation_dtype(activation_dtype)
        self._worker = Worker(name="kerasgl-ray")
        try:
            self._model = self._worker.load_model(path, storage_dtype=storage_dtype,
                                                  activation_dtype=activation_dtype)
            self._inputs = self._model.input_names
            self._outputs = self._model.output_names
            self._columns = self._columns_of(input_columns)
            # Which GPU this actor got, and why (kept for logs: `kerasgl info` says the same).
            self.device = self._worker.call(context.device_choice)
        except BaseException:
            self._worker.close()
            raise

    def _columns_of(self, input_columns) -> list:
        """The column each input is read from."""
        if isinstance(input_columns, str):
            if len(self._inputs) != 1:
                raise ShapeError(f"Model {self.path} takes inputs {self._inputs}: give "
                                 "input_columns as a dict {input name: column}.")
            input_columns = {self._inputs[0]: input_columns}
        unknown = sorted(set(input_columns or {}) - set(self._inputs))
        if unknown:
            raise ShapeError(f"input_columns names {unknown}, not inputs of model {self.path} "
                             f"({self._inputs}).")
        return [(input_columns or {}).get(name, name) for name in self._inputs]

    def _arrange(self, batch: dict) -> list:
        if len(self._inputs) == 1 and len(batch) == 1:
            return [np.asarray(next(iter(batch.values())))]
        missing = [column for column in self._columns if column not in batch]
        if missing:
            raise ShapeError(f"Model {self.path} takes inputs {self._inputs}, read from columns "
                             f"{self._columns}; the batch has columns {list(batch)} (lacking "
                             f"{missing}). Name the columns after the inputs, pass input_columns, "
                             "or give a one-input model a single column.")
        return [np.asarray(batch[column]) for column in self._columns]

    def __call__(self, batch: dict) -> dict:
        inputs = self._arrange(batch)
        rows = len(inputs[0])
        out = self._model.predict(inputs if len(inputs) > 1 else inputs[0],
                                  batch_size=self.batch_size or max(1, rows))
        if isinstance(out, dict):
            columns = {name: out[name] for name in self._outputs}
        else:
            columns = dict(zip(self._outputs, out if isinstance(out, list) else [out]))
        fed_by_one_column = len(self._inputs) == 1 and len(batch) == 1
        passed = {} if fed_by_one_column else {k: v for k, v in batch.items()
                                               if k not in self._columns}
        return {**passed, **columns}

    def close(self) -> None:
        """Free the model and the actor's GL context, waiting for the worker's thread to end."""
        self._worker.close()

    def __ray_shutdown__(self) -> None:
        """Ray calls this as an actor of this class ends gracefully (its handles gone, or
        __ray_terminate__), on the actor's own thread, after its last call: the time to close."""
        self.close()

    def __del__(self):
        # Ray Data ends its map actors by dropping the instance (the last reference goes on the
        # actor's thread), so this is where such an actor closes. A garbage collection may run it
        # on any thread instead, the worker's own included (a job's allocation can trigger one),
        # and that thread cannot wait for itself: the shutdown is queued there, never waited on.
        worker = getattr(self, "_worker", None)
        if worker is None:
            return
        try:
            worker.close(wait=not worker.on_worker_thread())
        except RuntimeError:      # at interpreter exit no job can be queued any more
            pass


__all__ = ["Predictor"]
