"""The "medium" Daniluk runs that chapter 03 reads: longer than the chapter's reduced runs, far
smaller than the paper's (which need a GPU and the unavailable Wikipedia corpus).

    python results/scripts/daniluk_medium_runs.py [NAME ...]      # default: all five

Each run is its preset's reduced configuration with these changes: every WikiText-2 article cut to
its first 1,000 tokens instead of 100 (all 600 training articles, about 10x the reduced run's tokens;
60 validation and 60 test articles), batch 64 and Adam at 0.001 as in the paper, one epoch, one CPU
thread. The run folders
go to runs/daniluk2017-wt2-medium/NAME; their JSON files are copied to results/daniluk2017-wt2-medium/NAME.
"""

import shutil
import sys
from pathlib import Path

from mlm.configs import get_preset
from mlm.training import train

ROOT = Path(__file__).resolve().parents[2]
MEDIUM = ["data.max_document_tokens=1000", "data.batch_size=64", "train.lr=0.001", "train.epochs=1",
          "train.threads=1"]
RUNS = {"lstm": "daniluk2017-wt2-lstm", "attention-L10": "daniluk2017-wt2-attention-L10",
        "kv-L10": "daniluk2017-wt2-kv-L10", "kvp-L5": "daniluk2017-wt2-kvp-L5", "ngram4": "daniluk2017-wt2-ngram4"}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(RUNS):
        cfg = get_preset(RUNS[name], "reduced", MEDIUM)
        run_dir = ROOT / "runs" / "daniluk2017-wt2-medium" / name
        result = train(cfg, run_dir=run_dir, progress=False).result
        print(name, f"valid {result['best_valid_ppl']:.1f} test {result.get('test_ppl', float('nan')):.1f}", flush=True)
        out = ROOT / "results" / "daniluk2017-wt2-medium" / name
        out.mkdir(parents=True, exist_ok=True)
        for f in ("config.json", "metrics.jsonl", "result.json"):
            shutil.copy(run_dir / f, out / f)
