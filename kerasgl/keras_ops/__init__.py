"""keras.ops operations that Keras 3 records as graph nodes in functional models (`x + 3.0`,
`keras.ops.mean(x, axis=1)`), one module per keras.ops module as Keras groups them
(keras/src/ops/): numpy/, nn/, math/, linalg.py, image/, core.py. "Where is keras.ops.X?" has
one answer: the module of Keras's own (`keras.src.ops.<module>`), then the family inside it
(docs/layers.md lists every operation with its module; tests/test_architecture.py checks that
each lives under its Keras module).

node.py holds the base class (OpNode, a Layer whose arguments are bound from the node's call)
and the registry OP_CLASSES, which the graph consults first for a node from an ops module.
Importing this package registers every op node.
"""
from . import node  # noqa: F401
from . import core, image, linalg, math, nn, numpy  # noqa: F401,E402
