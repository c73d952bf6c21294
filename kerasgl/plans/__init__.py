"""Execution plans: a predict call recorded once per input shape and replayed, with buffers shared
between intermediates whose lifetimes do not overlap."""
