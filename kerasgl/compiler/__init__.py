"""The model compiler: a ModelSpec becomes a graph of layers (graph.py), fused at load (fusion.py),
with Keras mask propagation (masks.py), fed in batches (feeding.py) and summarised (summary.py)."""
