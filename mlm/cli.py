"""Command line: ``python -m mlm {train,presets,book,data,bench,complete,sweep,reproduce,unpack,table} ...``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mlm.configs import ConfigError, get_preset, list_presets
from mlm.launch import LAUNCHERS, SlurmOptions


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("preset", help="preset name (python -m mlm presets lists them)")
    p.add_argument("--size", default="full", choices=["full", "reduced"],
                   help="full: the paper's configuration; reduced: CPU minutes")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.lr=0.5 (repeatable)")


def cmd_train(args) -> int:
    from mlm.training import train

    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.device:
        overrides.append(f"train.device={args.device}")
    cfg = get_preset(args.preset, args.size, overrides)
    run_dir = Path(args.run_dir or Path("runs") / f"{cfg.name}-{cfg.size}-seed{cfg.train.seed}")
    print(cfg)
    print(f"run folder: {run_dir}")
    run = train(cfg, run_dir=run_dir, resume=not args.restart, progress=not args.no_progress,
                max_epochs=args.max_epochs)
    r = run.result
    print(f"best valid ppl {r['best_valid_ppl']:.2f} (epoch {r['best_epoch']})", end="")
    if "test_ppl" in r:
        print(f", test ppl {r['test_ppl']:.2f}; {r['parameters']:,} parameters, "
              f"{r['train_tokens_per_second']:,.0f} train tokens/s, {r['train_seconds'] / 60:.1f} min training")
    else:
        print(f"; stopped after {r['epochs_run']} epochs, run the same command again to resume")
    return 0


def cmd_presets(args) -> int:
    if not args.name:
        for name in list_presets():
            print(f"{name:<28} {get_preset(name).description}")
        return 0
    cfg = get_preset(args.name, args.size)
    print(cfg.to_json() if args.json else cfg)
    return 0


def cmd_book(args) -> int:
    from mlm.book import run_book

    try:
        runs = run_book(args.chapters, size=args.size, output=args.output, timeout=args.timeout,
                        device=args.device, seed=args.seed, data_dir=args.data_dir, inplace=args.inplace,
                        progress=not args.no_progress, smoke=args.smoke)
    except ValueError as err:  # the arguments: --smoke's count, or --smoke with --inplace
        raise SystemExit(f"error: {err}") from None
    return 0 if all(r.status == "ok" for r in runs) else 1


def cmd_data(args) -> int:
    from mlm.data.corpora import REGISTRY, DataError, find_file, locate_corpus, resolve_data_dir

    root = resolve_data_dir(args.data_dir)
    names = [args.corpus] if args.corpus else list(REGISTRY)
    status = 0
    for name in names:
        if name == "holmes":  # the MSR sentence completion novels and questions (mlm.data.holmes)
            status = max(status, _data_holmes(args))
            continue
        spec = REGISTRY.get(name)
        if spec is None:
            print(f"unknown corpus {name!r}; known: {', '.join(REGISTRY)}", file=sys.stderr)
            return 2
        folder = root / spec.folder
        if args.action == "where":
            print(f"{name}: {folder}")
            for f in spec.files:
                path = find_file(folder, f.name)
                print(f"  {f.name:<20} {'found: ' + str(path) if path else 'missing'}")
            continue
        try:
            paths = locate_corpus(name, args.data_dir, download=(args.action == "fetch"))
            print(f"{name}: ok ({', '.join(str(p) for p in paths.values())})")
        except DataError as err:
            print(f"{name}: {err}", file=sys.stderr)
            status = 1
    return status


def _data_holmes(args) -> int:
    from mlm.data.corpora import DataError, find_file
    from mlm.data.holmes import NOVELS, NOVELS_FOLDER, QUESTION_FILES, holmes_folder, locate_novels, locate_questions

    folder = holmes_folder(args.data_dir)
    if args.action == "where":
        found = sum(find_file(folder / NOVELS_FOLDER, n) is not None for n in NOVELS)
        print(f"holmes: {folder}\n  {NOVELS_FOLDER}/  {found} of {len(NOVELS)} novels found")
        for name in QUESTION_FILES:
            path = find_file(folder, name)
            print(f"  {name:<20} {'found: ' + str(path) if path else 'missing'}")
        return 0
    try:
        download = args.action == "fetch"
        novels, questions = locate_novels(args.data_dir, download), locate_questions(args.data_dir, download)
        print(f"holmes: ok ({len(novels)} novels, {', '.join(str(p) for p in questions.values())})")
        return 0
    except DataError as err:
        print(f"holmes: {err}", file=sys.stderr)
        return 1


def cmd_complete(args) -> int:
    import torch

    from mlm.completion import complete, format_question, uniform_unk_penalty
    from mlm.data.holmes import load_questions
    from mlm.training import load_run

    if args.threads:
        torch.set_num_threads(args.threads)
    run = load_run(args.path, device=args.device, weights=args.weights, data_dir=args.data_dir)
    questions = load_questions(run.config.data.data_dir)
    try:
        penalty = uniform_unk_penalty(run.corpus) if args.unk_penalty == "uniform" else float(args.unk_penalty)
    except ValueError:
        print(f"--unk-penalty must be a number of nats or 'uniform', got {args.unk_penalty!r}", file=sys.stderr)
        return 2
    result = complete(run.model, run.corpus.vocab, questions, scope=args.scope, unk_penalty=penalty)
    print(f"{run.config.name} ({run.config.size}, {run.run_dir}), vocabulary {len(run.corpus.vocab):,} words")
    oov = result.notes["oov"]
    print(f"question words outside the vocabulary: {oov['token_oov_rate']:.1%} of tokens, "
          f"{oov['candidate_oov_rate']:.1%} of candidates ({oov['answer_oov']} correct answers)")
    for q, d in list(zip(questions, result.details))[:args.show]:
        print(format_question(q, d))
    print(result)
    if args.json:
        from mlm.utils import atomic_write_json

        atomic_write_json(Path(args.json), {"run": str(run.run_dir), "name": run.config.name, **result.to_dict()})
    return 0


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``NAME=KEY=VALUE[,KEY=VALUE...]`` (``bench --variant``) -> (name, overrides)."""
    name, _, settings = text.partition("=")
    if not name or "=" not in settings:
        raise ConfigError(f"--variant {text!r}: give NAME=KEY=VALUE[,KEY=VALUE...], "
                          "e.g. fast=train.fused_optimizer=true,train.compile=reduce-overhead")
    return name, settings.split(",")


def cmd_bench(args) -> int:
    from mlm.bench import bench_concurrent, bench_isolated, bench_preset, format_bench, labelled
    from mlm.utils import choose_device

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    device = [f"train.device={args.device}"] if args.device else []
    if args.barrier:  # one of bench_concurrent's processes
        folder, count = args.barrier.rsplit(":", 1)
        rows = [bench_preset(args.presets[0], args.size, [*args.overrides, *device], batches=args.batches,
                             seconds=args.seconds, barrier=(Path(folder), int(count)))]
        Path(args.out).write_text(json.dumps(rows) + "\n")
        return 0
    if args.manifest:
        if args.presets or args.reference:
            raise ConfigError("--manifest benches the runs the manifest names: give no presets or --reference")
        from mlm.reproduce import bench_specs

        # --set: added to every run, as reproduce --set adds it (the speed switches a batch will train with)
        targets = [(s.preset, s.size, [*s.all_overrides(), *args.overrides], s.id.removesuffix(f"/seed{s.seed}"))
                   for s in bench_specs(args.manifest, args.only)]
        print(f"benching {len(targets)} model(s) of {args.manifest}, one run each", flush=True)
    elif not args.presets:
        raise ConfigError("name the presets to bench, or a manifest with --manifest")
    else:
        targets = [(p, args.size, list(args.overrides), None) for p in args.presets]
    variants = [("default", []), *map(parse_variant, args.variant)]
    on_gpu = choose_device(args.device or "auto").type == "cuda"
    rows = []
    for count in args.concurrent or [1]:
        for preset, size, overrides, label in targets:
            for variant, extra in variants:
                settings = [*overrides, *device, *extra]
                if count > 1:
                    row = bench_concurrent(preset, count, size, settings, args.batches, args.threads,
                                           args.seconds or 20.0, label)
                elif args.manifest and not on_gpu:
                    row = bench_isolated(preset, size, settings, args.batches, args.threads, label)
                else:  # a GPU's peak memory is counted per model by CUDA: no child process needed
                    row = labelled(bench_preset(preset, size, settings, batches=args.batches, seconds=args.seconds),
                                   preset, label)
                rows.append({**row, "variant": variant, "concurrent": count})
                write_rows(rows, args.out)  # row by row: a bench stopped early keeps what it measured
                if args.manifest or count > 1:
                    print(f"  {row['preset']} ({variant}, {count} at once): {row['train_tokens_per_second']:,.0f} "
                          "training tokens/s", flush=True)
    if args.reference:
        rows += [bench_preset(p, args.size, [*args.overrides, *device], batches=args.batches, reference=True)
                 for p in args.presets if get_preset(p).model.head != "identity"]
        write_rows(rows, args.out)
    print(format_bench(rows))
    return 0


def write_rows(rows: list[dict], out: str | None) -> None:
    """Write ``bench``'s rows to ``out`` (if given) as a JSON list."""
    if out:
        from mlm.utils import atomic_write_json

        atomic_write_json(Path(out), rows)


def cmd_sweep(args) -> int:
    from mlm.sweep import format_sweep, parse_grid, sweep

    overrides = list(args.overrides)
    if args.device:
        overrides.append(f"train.device={args.device}")
    summary = sweep(args.preset, parse_grid(args.grid), size=args.size, overrides=overrides, out=args.out,
                    progress=not args.no_progress)
    print(format_sweep(summary))
    return 0


def cmd_reproduce(args) -> int:
    from mlm.reproduce import main

    if Path(args.manifest).suffix == ".json":
        args.manifest = str(Path(args.manifest).resolve())  # the post-step command runs in --root
    if args.store_from:
        return store_from_root(args)
    if args.twin:
        raise ConfigError("--twin LABEL goes with --store-from ROOT")
    status = main(args)
    if args.list and status == 0 and Path(args.manifest).suffix != ".json":  # the claims' verdicts now
        from mlm.reproduce import load_manifest, select
        from mlm.evidence import format_claims

        results = Path(args.root) / "results"
        groups = ({s.group for s in select(load_manifest(args.manifest, results), args.only)} if args.only
                  else None)
        claims = format_claims(Path(args.manifest).stem, results, groups)
        if claims:
            print(claims)
    return status


def store_from_root(args) -> int:
    """``reproduce MANIFEST --store-from ROOT``: the manifest's runs (as this root's results and ROOT's decide a
    staged manifest's runs) stored here from ROOT (:func:`mlm.store.store_from`)."""
    from mlm.reproduce import Layout, load_manifest, select
    from mlm.store import store_from

    specs = {}
    for results in (Path(args.root) / "results", Path(args.store_from) / "results"):
        specs.update({s.id: s for s in select(load_manifest(args.manifest, results), args.only)})
    if not specs:
        print(f"no run of {args.manifest} matches {args.only}", file=sys.stderr)
        return 2
    store_from(list(specs.values()), args.manifest, Layout(Path(args.root)), Path(args.store_from), args.twin,
               args.device)
    return 0


def cmd_unpack(args) -> int:
    from mlm.archive import unpack
    from mlm.reproduce import unpacked_names

    for line in unpack(args.archive, Path(args.root) / "results", unpacked_names(), args.replace):
        print(line)
    return 0


def cmd_table(args) -> int:
    from mlm.table import main

    return main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mlm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a preset (resumes from its run folder)")
    _add_config_args(p)
    p.add_argument("--run-dir", help="run folder (default runs/PRESET-SIZE-seedN)")
    p.add_argument("--restart", action="store_true", help="ignore an existing checkpoint and start over")
    p.add_argument("--max-epochs", type=int, help="stop after this many more epochs (resume later)")
    p.add_argument("--data-dir", help="folder holding the corpora (default $MLM_DATA_DIR, then $XDG_CACHE_HOME/mlm or ~/.cache/mlm)")
    p.add_argument("--device", help="cuda, mps or cpu (default: auto)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("presets", help="list presets, or print one")
    p.add_argument("name", nargs="?")
    p.add_argument("--size", default="full", choices=["full", "reduced"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("book", help="execute the chapters with papermill")
    p.add_argument("chapters", nargs="*", help="chapter numbers or names (default: all)")
    p.add_argument("--size", default="reduced", choices=["full", "reduced"])
    p.add_argument("--output", default="book_output", help="folder for executed notebooks and summary.json")
    p.add_argument("--timeout", type=float, default=3600, help="seconds one chapter may take (default 3600)")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir")
    p.add_argument("--inplace", action="store_true", help="also replace chapters/NN_*.ipynb with the executed notebooks")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--smoke", type=int, metavar="TOKENS",
                   help="check the code path only: every training reads TOKENS tokens for one epoch (numbers "
                        "meaningless; not with --inplace)")
    p.set_defaults(func=cmd_book)

    p = sub.add_parser("data", help="where the corpora are; verify or fetch them")
    p.add_argument("action", choices=["where", "verify", "fetch"])
    p.add_argument("corpus", nargs="?", help="ptb, wikitext-2 or holmes (default: ptb and wikitext-2)")
    p.add_argument("--data-dir")
    p.set_defaults(func=cmd_data)

    p = sub.add_parser("sweep", help="train a grid of settings, pick the best by validation perplexity")
    _add_config_args(p)
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="values to try for one key, e.g. --grid train.lr=0.002,0.003 (repeatable; the product is run)")
    p.add_argument("--out", help="sweep folder (default runs/sweeps/PRESET-SIZE); holds one run per point + sweep.json")
    p.add_argument("--device", help="cuda, mps or cpu (default: auto)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("bench", help="training/evaluation tokens per second of presets")
    p.add_argument("presets", nargs="*")
    p.add_argument("--manifest", help="bench the runs a reproduce manifest names, one per model (on a CPU each in "
                   "its own process)")
    p.add_argument("--only", action="append", metavar="PATTERN",
                   help="with --manifest: the settings whose GROUP/RUN matches this shell pattern (repeatable)")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    p.add_argument("--size", default="full", choices=["full", "reduced"])
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config value for every preset (with --manifest: for every run, as reproduce --set)")
    p.add_argument("--batches", type=int, default=30)
    p.add_argument("--device", help="cuda, mps or cpu (default: each preset's, auto)")
    p.add_argument("--reference", action="store_true",
                   help="also time the slow step-by-step reference of each memory head")
    p.add_argument("--out", help="also write the rows as JSON here")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=KEY=VALUE[,KEY=VALUE...]",
                   help="also bench each preset with these settings, e.g. fast=train.fused_optimizer=true "
                        "(repeatable; rows say their variant, the default first)")
    p.add_argument("--concurrent", action="append", type=int, metavar="N",
                   help="bench N copies at once, each its own process, as reproduce --jobs N shares a GPU "
                        "(repeatable, e.g. --concurrent 1 --concurrent 14; default 1)")
    p.add_argument("--seconds", type=float,
                   help="time each mode for this long, passing over the batches again (default: one pass; "
                        "20 s for --concurrent N > 1)")
    p.add_argument("--barrier", help=argparse.SUPPRESS)  # FOLDER:COUNT, for bench_concurrent's processes
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("complete", help="MSR sentence completion accuracy of a trained run")
    p.add_argument("path", help="run folder (or its best.pt / checkpoint.pt)")
    p.add_argument("--scope", default="sentence", choices=["sentence", "from-blank"],
                   help="score the whole sentence (the paper) or the words from the blank on")
    p.add_argument("--weights", default="best", choices=["best", "last"],
                   help="best.pt (best validation perplexity) or the last checkpoint")
    p.add_argument("--unk-penalty", default="0", metavar="NATS",
                   help="subtracted per <unk> word; 'uniform': log(training words outside the vocabulary)")
    p.add_argument("--show", type=int, default=0, metavar="N", help="print the first N questions with their scores")
    p.add_argument("--json", help="also write accuracy and per-question scores here")
    p.add_argument("--data-dir", help="folder holding msr_sentence_completion/ (default: the run's)")
    p.add_argument("--device", help="cuda, mps or cpu (default: the run's)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: torch's default)")
    p.set_defaults(func=cmd_complete)

    from mlm.reproduce import manifest_names

    p = sub.add_parser("reproduce", help="train a manifest's runs (resuming interrupted ones) into results/")
    p.add_argument("manifest", help=f"{', '.join(manifest_names())} (mlm/manifests/) or a .json manifest")
    p.add_argument("--list", action="store_true", help="show each run's state: done, running, partial, missing")
    p.add_argument("--only", action="append", metavar="PATTERN",
                   help="runs whose GROUP/RUN[/seedK] matches this shell pattern (repeatable)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (on a CPU at most one per core)")
    p.add_argument("--cores", type=int, help="CPU cores to share among the runs (default: all this process may use)")
    p.add_argument("--device", help="cuda, mps or cpu (default: each run's, auto)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config value for every run, e.g. --set train.precision=bf16 (kept in command.txt)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the command of each run to train (and, for Slurm, the sbatch file), run nothing")
    p.add_argument("--post-only", action="store_true", help="only run the post-steps of finished runs")
    p.add_argument("--root", default=".", help="folder holding runs/ and results/ (default: here)")
    p.add_argument("--speeds", metavar="JSON", action="append",
                   help="training speeds on a GPU from `bench ... --out JSON` (per setting with --manifest, or per "
                        "preset, e.g. results/bench-h200.json; repeatable, earlier files first): GPU hours with "
                        "--list; what fits with --budget-minutes")
    p.add_argument("--budget-minutes", type=float, metavar="MIN",
                   help="a batch in a time budget: start only the runs that the --speeds say will end within MIN "
                        "minutes sharing the device (docs/cluster.md), stop what still runs then, list what is left")
    p.add_argument("--archive", metavar="PATH.tar.gz",
                   help="also put every run this call stores into this archive (its results' small files, no "
                        "checkpoints), rewritten as each run ends; python -m mlm unpack puts it into results/")
    p.add_argument("--store-from", metavar="ROOT",
                   help="train nothing: store here the finished runs of another --root (a campaign of its own), "
                        "with the manifest's post-steps, checking each is the manifest's run (mlm/store.py)")
    p.add_argument("--twin", metavar="LABEL",
                   help="with --store-from: a run stored here from another kind of machine moves to "
                        "results/machine-check/LABEL/ as the new run's twin (a measured machine shift)")
    cluster = p.add_argument_group("launching through submitit (docs/cluster.md)")
    cluster.add_argument("--launcher", default="jobs", choices=LAUNCHERS,
                         help="jobs: here, --jobs at a time (default); slurm: one Slurm job array, a task per "
                              "run, requeued and resumed when preempted; local: submitit's local executor")
    cluster.add_argument("--partition", help="Slurm partition (default: the cluster's)")
    cluster.add_argument("--account", help="Slurm account, where the cluster wants one")
    cluster.add_argument("--time", type=int, default=SlurmOptions.time,
                         help=f"minutes per job; a longer run is requeued and resumes (default {SlurmOptions.time})")
    cluster.add_argument("--gpus-per-job", type=int, default=SlurmOptions.gpus_per_job,
                         help=f"GPUs of each task (default {SlurmOptions.gpus_per_job})")
    cluster.add_argument("--cpus-per-job", type=int, default=SlurmOptions.cpus_per_job,
                         help=f"CPU cores (and torch threads) of each task (default {SlurmOptions.cpus_per_job})")
    cluster.add_argument("--parallelism", type=int, default=SlurmOptions.parallelism,
                         help=f"tasks of the array running at once (default {SlurmOptions.parallelism})")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("unpack", help="put the results of a batch's archive (reproduce --archive) into results/")
    p.add_argument("archive", help="a .tar.gz that reproduce --archive wrote")
    p.add_argument("--root", default=".", help="folder holding results/ (default: here)")
    p.add_argument("--replace", action="store_true", help="replace stored results that differ from the archive's")
    p.set_defaults(func=cmd_unpack)

    p = sub.add_parser("table", help="the paper-versus-ours table of whatever results/ holds (Markdown + PNG)")
    p.add_argument("manifests", nargs="*", help="manifests whose runs are listed, missing ones marked (default: all)")
    p.add_argument("--results", default="results", help="the results folder (default: results)")
    p.add_argument("--out", help="Markdown file to write (default: RESULTS/TABLE.md; '-' prints only)")
    p.add_argument("--figure", help="PNG to write (default: beside --out, TABLE.png)")
    p.add_argument("--readme", help="the file whose claims block is regenerated (default: RESULTS/README.md; "
                                    "'-' leaves it)")
    p.set_defaults(func=cmd_table)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from mlm.utils import SMOKE_ENV

    if os.environ.get(SMOKE_ENV) and args.func in (cmd_train, cmd_sweep, cmd_reproduce, cmd_bench):
        # a smoke run's numbers must never be stored or read as results
        print(f"error: {SMOKE_ENV} is set, which cuts every training to a smoke run whose numbers mean nothing; "
              f"unset it (only `python -m mlm book --smoke N` uses it, for the chapters it runs)", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"configuration error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        from mlm.archive import ArchiveError
        from mlm.data.corpora import DataError
        from mlm.training import CheckpointError, TrainingDiverged

        if isinstance(err, (DataError, CheckpointError, TrainingDiverged, ArchiveError)):
            print(f"error: {err}", file=sys.stderr)
            return 1
        raise
