"""GPU operations: each checks shapes, allocates its output through tensor.empty, and dispatches
shaders from `shaders/`. Ops never read Keras configs (that is layers/' job)."""

# Tensor's operators and methods (a + b, x.relu(), x.sum(), ...) are ops: attached here, so that
# they exist whenever the ops do (tensors/ sits below ops/ and does not import it).
from . import tensor_methods  # noqa: E402,F401
