"""Speed of the Daniluk heads against the plain LSTM of the same size and the step-by-step reference.

    OMP_NUM_THREADS=1 python results/scripts/daniluk_bench.py [--batches 10] [--out results/bench-daniluk-cpu.json]

Full-size presets on WikiText-2's document batches (64 x 20). "Same size" means the same LSTM (the same
hidden size) with the identity head, so the ratio is the cost of the head. The key-value and key-value-
predict heads also shrink the softmax's input to a half or a third of the LSTM output, which makes
them cheaper than that LSTM at the softmax; the table shows both effects together, as a user would see them.
The rows of each group are measured one after another in one process.
"""

import argparse
import json

from mlm.bench import bench_preset, format_bench

GROUPS = [  # (preset, reference too?)
    "daniluk2017-wt2-attention-L15", "daniluk2017-wt2-kv-L15", "daniluk2017-wt2-kvp-L15", "daniluk2017-wt2-ngram4",
]

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--size", default="full")
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = []
    for preset in GROUPS:
        group = [bench_preset(preset, args.size, ["model.head=identity"], batches=args.batches),
                 bench_preset(preset, args.size, batches=args.batches),
                 bench_preset(preset, args.size, batches=args.batches, reference=True)]
        group[0]["preset"] = f"LSTM of {preset}"
        base = group[0]["train_tokens_per_second"]
        for row in group:
            row["train_time_vs_lstm"] = base / row["train_tokens_per_second"]
        group[2]["reference_vs_fast"] = group[1]["train_tokens_per_second"] / group[2]["train_tokens_per_second"]
        print(format_bench(group), flush=True)
        rows += group
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)
