#!/usr/bin/env python
"""Text generation speed: kerasgl's GPT2CausalLM.generate next to keras_hub's (JAX backend, CPU),
in one run on one machine, on a GPT-2-small-shaped model with random weights.

    python scripts/bench_generate.py                         # 12 layers, 768 wide, batch 1 and 8
    python scripts/bench_generate.py --layers 2 --hidden 128 --vocabulary 1000 --new 8

Both generate greedily with no stop token from prompts of --prompt tokens to --prompt + --new
tokens (the same token ids; the tokens are checked equal), after one warm-up call each (JAX's
compile, kerasgl's shader compiles). Tokens per second count the new tokens of every row;
the time is the median of --repeats calls. The key/value cache's bytes are kerasgl's, measured
with kg.memory() during the call.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402


def options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocabulary", type=int, default=50257)
    parser.add_argument("--prompt", type=int, default=16, help="prompt tokens per row")
    parser.add_argument("--new", type=int, default=32, help="tokens generated per row")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-keras", action="store_true")
    return parser.parse_args()


def prompts(batch: int, prompt: int, length: int, vocabulary: int) -> dict:
    rng = np.random.default_rng(0)
    ids = np.zeros((batch, length), np.int32)
    ids[:, :prompt] = rng.integers(1, vocabulary, (batch, prompt))
    mask = np.zeros((batch, length), bool)
    mask[:, :prompt] = True
    return {"token_ids": ids, "padding_mask": mask}


def timed(generate, inputs, repeats: int):
    """(median seconds, the last call's token ids) after one warm-up call."""
    generate(dict(inputs))
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = generate(dict(inputs))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), np.asarray(out["token_ids"])


def main():
    args = options()
    import keras
    import keras_hub
    import kerasgl as kg

    length = args.prompt + args.new
    keras.utils.set_random_seed(1)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=args.vocabulary, num_layers=args.layers, num_heads=args.heads,
        hidden_dim=args.hidden, intermediate_dim=4 * args.hidden,
        max_sequence_length=max(1024, length))
    causal_lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    causal_lm.compile(sampler="greedy")
    print(f"GPT-2 shape: {args.layers} layers, {args.hidden} wide, {args.heads} heads, "
          f"vocabulary {args.vocabulary} ({causal_lm.count_params():,} parameters); prompts of "
          f"{args.prompt} tokens, {args.new} generated, greedy, median of {args.repeats}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "gpt2.keras")
        causal_lm.save(path)
        with kg.load_model(path) as model:
            for batch in args.batches:
                inputs = prompts(batch, args.prompt, length, args.vocabulary)
                during = []

                def ours(x):
                    return model.generate(x, stop_token_ids=None, sampler="greedy",
                                          on_step=lambda ids, i: during.append(kg.memory()))
                before = kg.memory().num_bytes
                seconds, tokens = timed(ours, inputs, args.repeats)
                cache = max(m.num_bytes for m in during) - before
                row = {"batch": batch, "kerasgl": batch * args.new / seconds, "cache": cache}
                if not args.skip_keras:
                    keras_seconds, expected = timed(
                        lambda x: causal_lm.generate(x, stop_token_ids=None), inputs,
                        args.repeats)
                    row["keras_hub"] = batch * args.new / keras_seconds
                    row["same tokens"] = bool((tokens == expected).all())
                rows.append(row)
    print("| batch | kerasgl tokens/s | keras_hub (JAX, CPU) tokens/s | same tokens | "
          "KV cache |")
    print("|---|---|---|---|---|")
    for row in rows:
        keras_figure = f"{row['keras_hub']:.1f}" if "keras_hub" in row else "-"
        print(f"| {row['batch']} | {row['kerasgl']:.1f} | {keras_figure} | "
              f"{row.get('same tokens', '-')} | {row['cache'] / 2**20:.2f} MiB |")


if __name__ == "__main__":
    main()
