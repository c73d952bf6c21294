"""TensorFlow Serving's REST API, as JSON: predict requests in, predictions, model status and
metadata out, errors as {"error": "..."} with TF Serving's HTTP status codes.

The API (tensorflow.org/tfx/serving/api_rest):

    POST /v1/models/NAME[/versions/N]:predict
        {"signature_name": ..., "instances": [...]}  row format: one entry per example, either the
            input's value (one-input models) or an object keyed by input name
        {"signature_name": ..., "inputs": ...}       columnar format: the input's whole batch, or
            an object of them keyed by input name
      -> {"predictions": [...]} for a row request: one entry per example, an object keyed by
            output name when the model has several outputs
      -> {"outputs": ...} for a columnar request: the output's batch, or an object of them
    GET /v1/models/NAME[/versions/N]            -> {"model_version_status": [...]}
    GET /v1/models/NAME[/versions/N]/metadata   -> {"model_spec": ..., "metadata": {"signature_def"}}

Status codes follow TF Serving's mapping of its error codes (http_server.cc): INVALID_ARGUMENT
-> 400, NOT_FOUND -> 404, UNAVAILABLE -> 503 (a full batching queue), UNIMPLEMENTED -> 501,
CANCELLED -> 499 (the client went away), DEADLINE_EXCEEDED -> 504, INTERNAL -> 500
(failures.py). NaN and Infinity are accepted as JSON tokens, as TF
Serving accepts them, and then refused as input values (validation.py).
"""
from __future__ import annotations

import json
import re

import numpy as np

from .failures import RequestError
from .validation import check_names

SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
_TF_DTYPES = {"float32": "DT_FLOAT", "int32": "DT_INT32", "bool": "DT_BOOL", "string": "DT_STRING"}

PREDICT_PATH = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+))?:(classify|regress|predict)")
STATUS_PATH = re.compile(r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+))?(?:/(metadata))?")


def servable_not_found(name: str, version: str | None) -> RequestError:
    """TF Serving's words for an unknown model or version (404)."""
    wanted = f"Specific({name}, {version})" if version else f"Latest({name})"
    return RequestError(404, f"Servable not found for request: {wanted}")


# -------------------------------------------------------------------------------------------------
# Requests
# -------------------------------------------------------------------------------------------------
def parse_predict(body: bytes, input_names: list[str], model_name: str,
                  bool_inputs: set = frozenset()) -> tuple[str, dict]:
    """("row" or "columnar", {input name: the JSON value of its whole batch}) from a predict body.
    The values are still JSON (nested lists); validation.py makes arrays of them. Only the inputs
    named in `bool_inputs` may hold true / false."""
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"JSON Parse error: {exc}") from None
    if not isinstance(request, dict):
        raise RequestError(400, f"The request body must be a JSON object, got {_json_type(request)}.")
    signature = request.get("signature_name", SIGNATURE)
    if signature not in (SIGNATURE, ""):
        raise RequestError(400, f'Serving signature name: "{signature}" not found in signature def '
                                f"(model '{model_name}' has \"{SIGNATURE}\" only)")
    if "instances" in request and "inputs" in request:
        raise RequestError(400, 'Not both of "instances" and "inputs" can be specified in the '
                                "request.")
    if "instances" in request:
        columns = _rows_to_columns(request["instances"], input_names, model_name)
        fmt = "row"
    elif "inputs" in request:
        columns = _columnar(request["inputs"], input_names, model_name)
        fmt = "columnar"
    else:
        raise RequestError(400, 'Missing "inputs" or "instances" key.')
    if b"true" in body or b"false" in body:        # JSON booleans: numpy would take them as 1, 0
        for name, value in columns.items():
            if name not in bool_inputs and _holds_bool(value):
                raise RequestError(400, f"Input '{name}' of model '{model_name}' holds true/false; "
                                        "it takes numbers.")
    return fmt, columns


def _rows_to_columns(instances, names: list[str], model_name: str) -> dict:
    if not isinstance(instances, list) or not instances:
        raise RequestError(400, '"instances" must be a non-empty list: one entry per example.')
    named = len(names) > 1 or isinstance(instances[0], dict)
    if not named:
        return {names[0]: instances}
    columns = {name: [] for name in names}
    for row, instance in enumerate(instances):
        if not isinstance(instance, dict):
            raise RequestError(400, f"Instance {row} is {_json_type(instance)}; model '{model_name}' "
                                    f"takes inputs {names}: each instance must be an object keyed "
                                    "by input name.")
        check_names(instance, names, model_name, f"instance {row}")
        for name in names:
            columns[name].append(instance[name])
    return columns


def _columnar(inputs, names: list[str], model_name: str) -> dict:
    if isinstance(inputs, dict):
        check_names(inputs, names, model_name, '"inputs"')
        return {name: inputs[name] for name in names}
    if len(names) > 1:
        raise RequestError(400, f"Model '{model_name}' takes inputs {names}: \"inputs\" must be an "
                                "object keyed by input name.")
    return {names[0]: inputs}


def _holds_bool(value) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, list):
        return any(_holds_bool(v) for v in value)
    return False


def _json_type(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


# -------------------------------------------------------------------------------------------------
# Responses
# -------------------------------------------------------------------------------------------------
def predict_response(fmt: str, output_names: list[str], outputs: list[np.ndarray]) -> bytes:
    """The JSON of a predict answer: {"predictions": ...} for a row request, {"outputs": ...} for
    a columnar one, the output's name left out when there is one output (as TF Serving does)."""
    if fmt == "row":
        if len(outputs) == 1:
            answer = {"predictions": outputs[0].tolist()}
        else:
            lists = [o.tolist() for o in outputs]
            answer = {"predictions": [dict(zip(output_names, row)) for row in zip(*lists)]}
    elif len(outputs) == 1:
        answer = {"outputs": outputs[0].tolist()}
    else:
        answer = {"outputs": {name: o.tolist() for name, o in zip(output_names, outputs)}}
    return json.dumps(answer).encode()


def status_response(version: str, problem: str | None = None) -> bytes:
    """GetModelStatusResponse as JSON: the one version served, AVAILABLE; UNLOADING (error
    UNAVAILABLE, naming `problem`) once the models are unavailable and the server is going."""
    state, status = ("AVAILABLE", {"error_code": "OK", "error_message": ""}) if problem is None \
        else ("UNLOADING", {"error_code": "UNAVAILABLE", "error_message": problem})
    return json.dumps({"model_version_status": [{"version": version, "state": state,
                                                 "status": status}]}, indent=1).encode()


def _tensor_info(spec, graph_name: str) -> dict:
    dims = [{"size": str(-1 if d is None else int(d)), "name": ""} for d in spec.shape]
    return {"dtype": _TF_DTYPES.get(spec.dtype, "DT_FLOAT"),
            "tensor_shape": {"dim": dims, "unknown_rank": False}, "name": graph_name}


def metadata_response(name: str, version: str, inputs: dict, outputs: dict) -> bytes:
    """GetModelMetadataResponse as JSON: the serving_default signature's inputs and outputs
    ({name: TensorSpec}) with their dtypes and shapes (-1: any size)."""
    signature = {
        "inputs": {n: _tensor_info(s, f"{SIGNATURE}_{n}:0") for n, s in inputs.items()},
        "outputs": {n: _tensor_info(s, f"{n}:0") for n, s in outputs.items()},
        "method_name": PREDICT_METHOD,
    }
    return json.dumps({
        "model_spec": {"name": name, "signature_name": "", "version": version},
        "metadata": {"signature_def": {"signature_def": {SIGNATURE: signature}}},
    }, indent=1).encode()
