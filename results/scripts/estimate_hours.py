"""Estimated hours per run of a ``reproduce`` manifest on this machine, from short timing runs.

    OMP_NUM_THREADS=1 MLM_DATA_DIR=../shared/data python results/scripts/estimate_hours.py cpu [--batches 8] [--only PATTERN]

For every distinct configuration of the manifest (seeds share one), times ``--batches`` training steps
and as many evaluation batches with ``mlm.bench.bench_preset`` on one thread, counts the tokens of one
epoch (padding included, as the batches are computed), and prints

    hours  = epochs x (train tokens / train speed + valid tokens / eval speed) + test tokens / eval speed
    tokens = epochs x training tokens    (what a GPU estimate needs: tokens / GPU tokens per second)

with every count and speed in scored tokens (padding excluded: the speeds already pay for it; dividing the
padded count by them, as this script once did, counted the padding twice).

with ``epochs`` the run's expected epoch count (``RunSpec.epochs``, else ``train.epochs``). The numbers
go into the manifest's ``hours`` and ``tokens`` fields by hand. A short timing on a shared machine is
noisy: read the hours as +-30%.
"""

import argparse
import json

import torch

from mlm.bench import bench_preset
from mlm.reproduce import load_manifest, select
from mlm.training import build_batches, load_data


def epoch_tokens(cfg, corpus, split: str) -> int:
    """The scored tokens of one pass over ``split`` (padding is computed but not counted, as in the speeds of
    :func:`mlm.bench.bench_preset`, which already pay for it)."""
    return sum(batch.num_tokens for batch in build_batches(cfg, corpus, split))


def estimate(spec, batches: int) -> dict:
    cfg = spec.config(["train.threads=1"])
    corpus = load_data(cfg)
    train = epoch_tokens(cfg, corpus, "train")
    valid = epoch_tokens(cfg, corpus, "valid")
    test = epoch_tokens(cfg, corpus, "test")
    speed = bench_preset(spec.preset, spec.size, [*spec.all_overrides(), "train.threads=1"], batches=batches)
    epochs = spec.epochs or cfg.train.epochs
    seconds = (epochs * (train / speed["train_tokens_per_second"] + valid / speed["eval_tokens_per_second"])
               + test / speed["eval_tokens_per_second"])
    return {"run": spec.id, "preset": spec.preset, "epochs": epochs, "parameters": speed["parameters"],
            "train_tokens_per_epoch": train, "train_tok_s": speed["train_tokens_per_second"],
            "eval_tok_s": speed["eval_tokens_per_second"], "hours": seconds / 3600, "tokens": epochs * train}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("manifest")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--only", action="append")
    parser.add_argument("--out", help="also write the rows as JSON lines here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seen = {}
    for spec in select(load_manifest(args.manifest), args.only):
        key = (spec.preset, spec.size, spec.overrides, spec.epochs)
        if key in seen:
            continue
        row = seen[key] = estimate(spec, args.batches)
        print(f"{row['run']:<48} {row['parameters']:>10,} {row['train_tok_s']:>8,.0f} tok/s  {row['epochs']:>3} ep "
              f"x {row['train_tokens_per_epoch']:>9,} = {row['tokens'] / 1e6:6.1f}M tokens  {row['hours']:5.2f} h",
              flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
