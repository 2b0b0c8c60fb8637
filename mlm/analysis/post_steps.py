"""The analyses ``python -m mlm reproduce`` runs on a finished run: each writes one JSON file beside the
run's results (``results/GROUP/RUN/``), with the analyses of this package that a chapter calls itself.

A manifest names them per run (:class:`mlm.reproduce.RunSpec` ``post``); a run is done only once their
files exist. They run in the process of ``python -m mlm reproduce MANIFEST --only RUN --post-only``, on the
run's best weights (:func:`run_post_steps`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mlm.analysis.history import window_attention_profile
from mlm.analysis.memory_block import (average_by_position, collect_memory_attention, distant_examples,
                                       pair_frequency_by_distance, sample_words)
from mlm.completion import UnigramLM, complete, uniform_unk_penalty
from mlm.context import HISTORY_CUTS, history_curve
from mlm.data.holmes import load_questions
from mlm.data.tasks import critical_chance
from mlm.evaluation import evaluate
from mlm.long_range import count_scores, run_critical_scores, source_attention
from mlm.training import build_batches, load_run, load_task
from mlm.utils import atomic_write_json


@dataclass(frozen=True)
class PostStep:
    output: str  # the file it writes into results/GROUP/RUN/
    run: Callable  # run(run: mlm.training.RunResult, out: Path) -> None
    doc: str = field(default="")


def _window_analysis(run, out: Path) -> None:
    """Test-set attention profile of a window model, and its test perplexity with the window cut to m slots."""
    model, cfg = run.model, run.config
    test = build_batches(cfg, run.corpus, "test")
    truncated = {}
    for m in (m for m in (1, 2, 3, 5, 10, 15) if m <= cfg.model.window_size):
        model.head.eval_window = m
        truncated[m] = evaluate(model, test).perplexity
    model.head.eval_window = None
    atomic_write_json(out / "analysis.json", {"profile": window_attention_profile(model, test),
                                              "test_ppl_by_window": truncated})


def _memory_attention(run, out: Path) -> None:
    """Tran et al.'s section 5 on the test set: attention by memory position, 100 sampled words,
    distant-attention examples with the top-5 predictions, and the Table 3 pair frequencies."""
    collected = collect_memory_attention(run.model, build_batches(run.config, run.corpus, "test"))
    picks = sample_words(collected, 100, seed=0)
    atomic_write_json(out / "attention.json", {
        "positions": len(collected.targets),
        "average_by_position": average_by_position(collected),
        "sampled_weights": collected.weights[picks].tolist(),
        "distant_examples": distant_examples(collected, run.corpus.vocab, count=8),
        "pair_frequency_by_distance": {str(d): v for d, v in pair_frequency_by_distance(
            collected, run.corpus.ids("train")).items()},
    })


def _completion(run, out: Path) -> None:
    """Accuracy on the 1,040 MSR sentence completion questions (whole-sentence scores), with and without
    the uniform <unk> penalty, beside the unigram baseline of the same vocabulary."""
    questions = load_questions(run.config.data.data_dir)
    plain = complete(run.model, run.corpus.vocab, questions)
    penalty = uniform_unk_penalty(run.corpus)
    shared = complete(run.model, run.corpus.vocab, questions, unk_penalty=penalty)
    unigram = complete(UnigramLM(run.corpus.vocab), run.corpus.vocab, questions)
    atomic_write_json(out / "completion.json", {
        "accuracy": plain.accuracy, "correct": plain.num_correct, "total": plain.total, "ties": plain.ties,
        "accuracy_in_vocab": plain.accuracy_in_vocab, "unk_penalty": penalty,
        "accuracy_with_unk_penalty": shared.accuracy, "unigram_accuracy": unigram.accuracy,
        "oov": plain.notes["oov"], "questions": plain.to_dict()["questions"]})


def _critical_scores(run, out: Path) -> None:
    """Key-value recall (``data.corpus="recall"``): accuracy and loss on the critical tokens of the test split
    by distance d, the test perplexity, the bigram count model's scores on the same tokens and the chance
    level; for the Attentive and Memory Block heads also the weight on the source word."""
    task = load_task(run.config)
    scores, bigram = run_critical_scores(run, task), count_scores(task, n=2)
    found = (source_attention(run.model, task, "test") if run.config.model.head in ("attentive", "rm", "rmr")
             else [])
    reached = [f for f in found if f["reachable"]]
    atomic_write_json(out / "critical.json", {
        "chance": critical_chance(task.spec)[0],
        **scores.to_json(), "test_ppl": scores.overall.perplexity,
        "bigram_totals": bigram.totals,
        "source_attention": {"reached": len(reached), "lines": len(found),
                             "weight": sum(f["weight"] for f in reached) / len(reached),
                             "uniform": sum(f["uniform"] for f in reached) / len(reached),
                             "is_max": sum(f["is_max"] for f in reached) / len(reached)} if reached else None,
    })


def _history_cut(run, out: Path) -> None:
    """Test perplexity with each target's history cut to k input words (k = 1, 2, 5, 10, 20, 50, all),
    :func:`mlm.context.history_curve`, and the seconds it took."""
    start = time.perf_counter()
    curve = history_curve(run.model, build_batches(run.config, run.corpus, "test"), HISTORY_CUTS)
    atomic_write_json(out / "history.json", {"test_ppl_by_history": {"all" if k is None else str(k): ppl
                                                                     for k, ppl in curve.items()},
                                             "seconds": time.perf_counter() - start})


POST_STEPS: dict[str, PostStep] = {
    "history-cut": PostStep("history.json", _history_cut, _history_cut.__doc__),
    "critical-scores": PostStep("critical.json", _critical_scores, _critical_scores.__doc__),
    "window-analysis": PostStep("analysis.json", _window_analysis, _window_analysis.__doc__),
    "memory-attention": PostStep("attention.json", _memory_attention, _memory_attention.__doc__),
    "completion": PostStep("completion.json", _completion, _completion.__doc__),
}


def run_post_steps(names, run_dir: Path, out: Path, device: str | None = None) -> None:
    """Run the post-steps ``names`` on the finished run in ``run_dir`` (its best weights), writing into ``out``."""
    run = load_run(run_dir, device=device)
    for name in names:
        POST_STEPS[name].run(run, out)
