"""The Open Inference Protocol's gRPC messages and service, from grpc_predict_v2.proto.

grpc_predict_v2.desc is the .proto compiled by protoc (a FileDescriptorSet, committed; regenerate
it after editing the .proto, as its header says, and tests/test_open_inference_grpc.py checks the
two agree). It is loaded into a descriptor pool of kerasgl's own rather than protobuf's default
one: the protocol's package is "inference", the same as tritonclient's generated code, so a
process holding both (a test, a notebook with a client) would otherwise meet every message name
twice. Only protobuf is needed at run time.
"""
from __future__ import annotations

import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SERVICE = "inference.GRPCInferenceService"
_FOLDER = os.path.dirname(os.path.abspath(__file__))
DESCRIPTOR_SET = os.path.join(_FOLDER, "grpc_predict_v2.desc")
PROTO = os.path.join(_FOLDER, "grpc_predict_v2.proto")


def _pool() -> descriptor_pool.DescriptorPool:
    with open(DESCRIPTOR_SET, "rb") as handle:
        files = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


POOL = _pool()


def message(name: str):
    """The message class of inference.<name> (a nested one as "Outer.Inner")."""
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"inference.{name}"))


def methods() -> dict:
    """{method name: (request class, response class)} of the service."""
    service = POOL.FindServiceByName(SERVICE)
    return {m.name: (message_factory.GetMessageClass(m.input_type),
                     message_factory.GetMessageClass(m.output_type)) for m in service.methods}
