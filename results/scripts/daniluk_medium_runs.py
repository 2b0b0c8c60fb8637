"""The "medium" Daniluk runs that chapter 03 reads: longer than the chapter's reduced runs, far
smaller than the paper's (which need a GPU and the unavailable Wikipedia corpus).

    python results/scripts/daniluk_medium_runs.py [NAME ...]              # train (default: all) and analyse
    python results/scripts/daniluk_medium_runs.py --analyse-only [NAME ...]  # analyse finished runs again

Each run is its preset's reduced configuration with these changes: every WikiText-2 article cut to
its first 1,000 tokens instead of 100 (all 600 training articles, about 10x the reduced run's tokens;
60 validation and 60 test articles), batch 64 and Adam at 0.001 as in the paper, one epoch, one CPU
thread. For the window models, ``analysis.json`` holds the test set's mean attention weight by window slot
(mlm.analysis.history.window_attention_profile) and the test perplexity with the window cut to its m most recent
slots at evaluation time. The run folders
go to runs/daniluk2017-wt2-medium/NAME; their JSON files are copied to results/daniluk2017-wt2-medium/NAME.
"""

import shutil
import sys
from pathlib import Path

from mlm.analysis.history import window_attention_profile
from mlm.configs import get_preset
from mlm.evaluation import evaluate
from mlm.training import build_batches, train
from mlm.utils import atomic_write_json

ROOT = Path(__file__).resolve().parents[2]
MEDIUM = ["data.max_document_tokens=1000", "data.batch_size=64", "train.lr=0.001", "train.epochs=1",
          "train.threads=1"]
RUNS = {"lstm": "daniluk2017-wt2-lstm", "attention-L10": "daniluk2017-wt2-attention-L10",
        "kv-L10": "daniluk2017-wt2-kv-L10", "kvp-L5": "daniluk2017-wt2-kvp-L5", "ngram4": "daniluk2017-wt2-ngram4",
        "kvp-L15": "daniluk2017-wt2-kvp-L15"}


def analyse(run, out: Path) -> None:
    """Attention profile and window-truncation perplexities of a finished window model on its test set."""
    model, cfg = run.model, run.config
    if cfg.model.head != "window":
        return
    test = build_batches(cfg, run.corpus, "test")
    window = cfg.model.window_size
    cuts = [m for m in (1, 2, 3, 5, 10, 15) if m <= window]
    truncated = {}
    for m in cuts:
        model.head.eval_window = m
        truncated[m] = evaluate(model, test).perplexity
    model.head.eval_window = None
    atomic_write_json(out / "analysis.json", {"profile": window_attention_profile(model, test),
                                              "test_ppl_by_window": truncated})


if __name__ == "__main__":
    args = sys.argv[1:]
    analyse_only = "--analyse-only" in args
    names = [a for a in args if a != "--analyse-only"] or list(RUNS)
    for name in names:
        cfg = get_preset(RUNS[name], "reduced", MEDIUM)
        run_dir = ROOT / "runs" / "daniluk2017-wt2-medium" / name
        if analyse_only and not (run_dir / "result.json").exists():
            continue
        before = (run_dir / "result.json").read_bytes() if analyse_only else None
        run = train(cfg, run_dir=run_dir, progress=False)  # a finished run is loaded, not retrained
        if before is not None:
            (run_dir / "result.json").write_bytes(before)  # keep the training run's timings
        result = run.result
        print(name, f"valid {result['best_valid_ppl']:.1f} test {result.get('test_ppl', float('nan')):.1f}", flush=True)
        out = ROOT / "results" / "daniluk2017-wt2-medium" / name
        out.mkdir(parents=True, exist_ok=True)
        for f in ("config.json", "metrics.jsonl", "result.json"):
            shutil.copy(run_dir / f, out / f)
        analyse(run, out)
