"""Tensors and their lifetimes: Tensor, tidy scopes, keep, dispose, memory()."""
