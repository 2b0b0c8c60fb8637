"""The numbers behind results/holmes-notes.md: the Holmes subset's statistics, parse time, question
coverage for several vocabulary sizes, and one quick reduced LSTM scored on the MSR questions.

    MLM_DATA_DIR=../shared/data python results/scripts/holmes_notes.py stats
    MLM_DATA_DIR=../shared/data python results/scripts/holmes_notes.py train [TRAIN_TOKENS EPOCHS VOCAB [PRESET]]

``stats`` parses the 53 novels once without and once with a fresh cache folder; ``train`` trains
the Tran et al. baseline preset (default tran2016-ptb-lstm1: 1 x 128, SGD lr 1, sentence protocol)
on the first TRAIN_TOKENS training tokens with one CPU thread, then prints the completion accuracy
(whole-sentence scores) and the time it took. Results are appended to results/holmes-notes.jsonl.
"""
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parents[1] / "holmes-notes.jsonl"


def stats() -> dict:
    from mlm.completion import oov_stats
    from mlm.data.holmes import load_questions
    from mlm.data import holmes

    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        corpus = holmes.load_holmes(vocab_size=None, cache=False)
        no_cache = time.perf_counter() - start
        holmes._load_holmes.cache_clear()
        holmes.load_holmes(vocab_size=None, cache=cache)  # fills the cache
        holmes._load_holmes.cache_clear()
        start = time.perf_counter()
        holmes.load_holmes(vocab_size=None, cache=cache)
        cached = time.perf_counter() - start
    questions = load_questions()
    train = corpus.lines["train"]
    coverage = {}
    for k in (5_000, 10_000, 20_000, 30_000, None):
        vocab = holmes.top_k_vocabulary(train, k)
        coverage[str(k)] = {"vocab": len(vocab), "train_unk_rate": vocab.counts[vocab.unk_id] / sum(map(len, train)),
                            **oov_stats(questions, vocab)}
    # Do the correct question sentences occur in the training novels? (a leak check)
    known = {" ".join(s) for s in train} | {" ".join(s) for s in corpus.lines["valid"]}
    leaked = sum(" ".join(s) in known for s in corpus.lines["test"])
    return {"what": "stats", "parse_seconds_no_cache": no_cache, "load_seconds_cached": cached,
            "corpus": corpus.stats(), "coverage": coverage, "test_sentences_found_in_novels": leaked}


def train(train_tokens: int, epochs: int, vocab: int, preset: str) -> dict:
    from mlm.completion import complete, uniform_unk_penalty
    from mlm.configs import get_preset
    from mlm.training import train as run_training

    cfg = get_preset(preset, "full", [
        "data.corpus=holmes", f"data.vocab_size={vocab}", f"data.max_train_tokens={train_tokens}",
        "data.max_eval_tokens=40000", f"train.epochs={epochs}", "train.decay_start=1", "train.threads=1"])
    start = time.perf_counter()
    run = run_training(cfg, run_dir=None, progress=False)
    train_seconds = time.perf_counter() - start
    start = time.perf_counter()
    result = complete(run.model, run.corpus.vocab)
    score_seconds = time.perf_counter() - start
    sent = complete(run.model, run.corpus.vocab, scope="from-blank")
    penalty = uniform_unk_penalty(run.corpus)
    shared = complete(run.model, run.corpus.vocab, unk_penalty=penalty)
    return {"what": "train", "preset": preset, "train_tokens": run.corpus.num_tokens("train"), "epochs": epochs,
            "vocab": len(run.corpus.vocab), "history": run.history, "test_ppl": run.result.get("test_ppl"),
            "train_seconds": train_seconds, "accuracy": result.accuracy, "correct": result.num_correct,
            "ties": result.ties, "from_blank_accuracy": sent.accuracy, "score_seconds": score_seconds,
            "accuracy_in_vocab": result.accuracy_in_vocab, "in_vocab_questions": len(result.in_vocab),
            "unk_penalty": penalty, "accuracy_with_unk_penalty": shared.accuracy, "ties_with_unk_penalty": shared.ties,
            "oov": result.notes["oov"], "threads": torch.get_num_threads()}


if __name__ == "__main__":
    if sys.argv[1] == "stats":
        row = stats()
    else:
        args = sys.argv[2:]
        row = train(int(args[0]) if args else 1_000_000, int(args[1]) if len(args) > 1 else 1,
                    int(args[2]) if len(args) > 2 else 10_000, args[3] if len(args) > 3 else "tran2016-ptb-lstm1")
    print(json.dumps(row, indent=1))
    with open(OUT, "a") as f:
        f.write(json.dumps(row) + "\n")
