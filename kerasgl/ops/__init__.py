"""GPU operations: each checks shapes, allocates its output through tensor.empty, and dispatches
shaders from `shaders/`. Ops never read Keras configs (that is layers/' job)."""
