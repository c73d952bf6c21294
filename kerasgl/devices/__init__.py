"""Device policies: what one driver needs that no other may run (llvmpipe/), behind one seam.
Imports nothing of kerasgl above the leaves (errors, settings)."""
