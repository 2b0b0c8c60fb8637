"""Speed of the Daniluk heads against the plain LSTM and against their step-by-step references.

    OMP_NUM_THREADS=1 python results/scripts/daniluk_bench.py --size reduced --rounds 3 --out results/bench-daniluk-cpu.json

WikiText-2's document batches (training steps with the preset's batch shape). Two baselines:

* the paper's LSTM (``daniluk2017-wt2-lstm``), the model every head is compared with at a similar
  parameter count (Figure 2c), trained the same way: the ratio the issue's 1.3x target is about;
* the same LSTM as the head's model (same hidden size, identity head): the cost of the head itself,
  mixed with the softmax reading a narrower vector for the key-value(-predict) and N-gram heads.

Every configuration is measured ``--rounds`` times, the rounds interleaved so that a slow moment of a
shared machine hits all configurations alike; the table keeps the median tokens per second.
"""

import argparse
import json
import statistics

from mlm.bench import bench_preset

HEADS = ["daniluk2017-wt2-attention-L15", "daniluk2017-wt2-kv-L15", "daniluk2017-wt2-kvp-L15", "daniluk2017-wt2-ngram4"]


def configurations():
    yield "LSTM (daniluk2017-wt2-lstm)", "daniluk2017-wt2-lstm", [], False
    for preset in HEADS:
        yield f"LSTM of the same width as {preset}", preset, ["model.head=identity"], False
        yield preset, preset, [], False
        yield f"{preset} (reference)", preset, [], True


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="reduced")
    parser.add_argument("--out")
    args = parser.parse_args()
    configs = list(configurations())
    samples = {label: [] for label, *_ in configs}
    rows = {}
    for _ in range(args.rounds):
        for label, preset, overrides, reference in configs:
            row = bench_preset(preset, args.size, overrides, batches=args.batches, reference=reference)
            samples[label].append((row["train_tokens_per_second"], row["eval_tokens_per_second"]))
            rows[label] = row
    lstm = statistics.median(t for t, _ in samples[configs[0][0]])
    out = []
    print(f"{'configuration':<58}{'params':>12}{'train tok/s':>12}{'eval tok/s':>12}{'vs LSTM':>9}{'vs width':>9}")
    same_width = None
    for label, preset, overrides, reference in configs:
        train = statistics.median(t for t, _ in samples[label])
        evaluation = statistics.median(e for _, e in samples[label])
        if overrides:
            same_width = train
        row = {**rows[label], "label": label, "train_tokens_per_second": train, "eval_tokens_per_second": evaluation,
               "rounds": args.rounds, "train_time_vs_lstm": lstm / train,
               "train_time_vs_same_width_lstm": (same_width / train) if same_width and not overrides else None}
        out.append(row)
        vs_width = f"{row['train_time_vs_same_width_lstm']:.2f}x" if row["train_time_vs_same_width_lstm"] else ""
        print(f"{label:<58}{row['parameters']:>12,}{train:>12,.0f}{evaluation:>12,.0f}{lstm / train:>8.2f}x{vs_width:>9}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
