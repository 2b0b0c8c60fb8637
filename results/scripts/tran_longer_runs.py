"""Longer Recurrent Memory Network runs behind chapter 04's "Longer runs" (results/README.md).

Trains each preset on the *whole* training set with the given epochs, copies what the run wrote
(config.json, metrics.jsonl, result.json; no checkpoints) to ``results/OUT/LABEL/`` and, for RM/RMR
models, stores the test-set attention analysis of section 5 as ``attention.json`` (average weight
per memory position, the attention of 100 sampled test words, distant-attention examples with the
top-5 predictions, and the Table 3 pair frequencies), so the chapter can show them without the
weights.

    python results/scripts/tran_longer_runs.py OUT EPOCHS DECAY_START PRESET[:LABEL]...
    python results/scripts/tran_longer_runs.py tran2016-ptb-128-whole 2 1 tran2016-ptb-rm-tm-g:rm-tm-g tran2016-ptb-lstm1:lstm1 tran2016-ptb-rmr-notm-g:rmr-notm-g
"""
import json
import shutil
import sys
from pathlib import Path

import torch

import mlm
from mlm.analysis.memory_block import (average_by_position, collect_memory_attention, distant_examples,
                                       pair_frequency_by_distance, sample_words)
from mlm.training import build_batches
from mlm.utils import atomic_write_json

ROOT = Path(__file__).resolve().parents[2]


def main(out: str, epochs: int, decay_start: int, specs: list[str]) -> None:
    torch.set_num_threads(1)
    for spec in specs:
        preset, _, label = spec.partition(":")
        label = label or preset
        cfg = mlm.get_preset(preset, "full", {"train.epochs": epochs, "train.decay_start": decay_start,
                                              "train.threads": 1})
        run_dir = ROOT / "runs" / f"{out}-{label}"
        run = mlm.train(cfg, run_dir=run_dir, progress=False)
        target = ROOT / "results" / out / label
        target.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "metrics.jsonl", "result.json"):
            shutil.copyfile(run_dir / name, target / name)
        if cfg.model.head in ("rm", "rmr"):
            test = build_batches(cfg, run.corpus, "test")
            collected = collect_memory_attention(run.model, test)
            vocab = run.corpus.vocab
            picks = sample_words(collected, 100, seed=0)
            analysis = {
                "positions": len(collected.targets),
                "average_by_position": average_by_position(collected),
                "sampled_weights": collected.weights[picks].tolist(),
                "distant_examples": distant_examples(collected, vocab, count=8),
                "pair_frequency_by_distance": {str(d): v for d, v in pair_frequency_by_distance(
                    collected, run.corpus.ids("train")).items()},
            }
            atomic_write_json(target / "attention.json", analysis)
        print(f"{label}: valid {run.result['best_valid_ppl']:.1f}, test {run.result['test_ppl']:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
