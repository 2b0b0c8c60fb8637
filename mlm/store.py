"""Store runs trained under another root into this one's ``results/``, keeping a rerun's twin.

A long campaign trains in a folder of its own (``reproduce --root ROOT``, with a frozen copy of the code) while
the book is edited here. ``python -m mlm reproduce MANIFEST --only PATTERN --store-from ROOT`` stores each of
its finished runs here as ``reproduce`` would have stored it: the same files, the command that trained it and,
where the manifest names post-steps the campaign did not run, those steps run on its weights first and their
command added. A run already stored here with other results is refused, unless it was trained on another
kind of machine and ``--twin LABEL`` is given: the stored run then moves to
``results/machine-check/LABEL/GROUP/RUN`` (its command prefixed with what it is, its seed added to
``machine-check.json``), where :func:`mlm.evidence.machine_pairs` reads the pair as a measured machine shift.
Every run is checked before anything is written.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Callable, Sequence

from mlm.analysis.post_steps import run_post_steps
from mlm.configs import ConfigError
from mlm.evidence import MACHINE_CHECK
from mlm.launch import shell
from mlm.reproduce import post_command
from mlm.runspec import COPIED, Layout, RunSpec, post_outputs
from mlm.stored import machine_label

MACHINE_CHECK_MANIFEST = "machine-check.json"  # results/machine-check/machine-check.json: the twins' manifest
# what may differ between the manifest's configuration and a run's config.json without another command: where
# it ran and with how many threads, what the preset says about the paper, settings added since (absent there)
_IGNORED = {"train.threads", "train.device", "data.data_dir", "name", "description", "notes"}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in d.items():
        if key == "paper":
            continue
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def config_differences(spec: RunSpec, stored: dict) -> list[str]:
    """The settings in which a run's ``config.json`` (``stored``) differs from what ``spec`` trains."""
    expected, got = _flat(spec.config().to_dict()), _flat(stored)
    return sorted(f"{k}: {got[k]!r} (the manifest: {expected.get(k)!r})" for k in got
                  if k not in _IGNORED and expected.get(k) != got[k])


def _read(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")}


def _write(folder: Path, files: dict[str, bytes]) -> None:
    """Each file atomically, ``result.json`` last (a half-written folder is never taken for a finished run)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(files, key=lambda n: n == "result.json"):
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(files[name])
        tmp.replace(folder / name)


def _source_files(spec: RunSpec, manifest: str, source: Layout, device: str | None) -> dict[str, bytes]:
    """What ``results/`` keeps of ``spec``'s finished run under ``source``, its post-steps run first where
    missing, the post-step's command added to the one that trained it."""
    out = source.result_dir(spec)
    if spec.post and not all((out / f).is_file() for f in post_outputs(spec)):
        if not (source.run_dir(spec) / "best.pt").is_file():
            raise ConfigError(f"{spec.id}: the post-steps {', '.join(spec.post)} need the run's weights "
                              f"({source.run_dir(spec) / 'best.pt'}), which are gone; run them where the run trained")
        run_post_steps(spec.post, source.run_dir(spec), out, device)
    names = ["command.txt", *COPIED, *post_outputs(spec)]
    missing = [n for n in names if not (out / n).is_file()]
    if missing:
        raise ConfigError(f"{spec.id}: {out} lacks {', '.join(missing)}")
    files = {n: (out / n).read_bytes() for n in names}
    command = files["command.txt"].decode().rstrip("\n")
    post = post_command(spec, manifest)
    if post and "--post-only" not in command:
        threads = re.match(r"OMP_NUM_THREADS=(\d+) ", command)
        command += "\n" + shell(post, int(threads.group(1)) if threads else None)
    files["command.txt"] = (command + "\n").encode()
    return files


def _twin_entry(spec: RunSpec, label: str) -> dict:
    entry = {"group": f"{MACHINE_CHECK}/{label}/{spec.group}", "name": spec.base, "preset": spec.preset}
    if spec.size != "full":
        entry["size"] = spec.size
    if spec.overrides:
        entry["set"] = list(spec.overrides)
    if spec.seed is not None:
        entry["seeds"] = [spec.seed]
    if spec.post:
        entry["post"] = list(spec.post)
    return entry


def add_twin(manifest: Path, spec: RunSpec, label: str) -> None:
    """Name ``spec``'s twin under ``machine-check/LABEL`` in the twins' JSON manifest (its seed added to the
    entry of the same group and run, or a new entry)."""
    data = json.loads(manifest.read_text()) if manifest.is_file() else {"runs": []}
    new = _twin_entry(spec, label)
    for entry in data["runs"]:
        if entry["group"] == new["group"] and entry["name"] == new["name"]:
            if {k: v for k, v in entry.items() if k != "seeds"} != {k: v for k, v in new.items() if k != "seeds"}:
                raise ConfigError(f"{manifest}: {new['group']}/{new['name']} is named with other settings")
            entry["seeds"] = sorted({*entry.get("seeds", []), *new.get("seeds", [])})
            break
    else:
        data["runs"].append(new)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text("{\"runs\": [" + ",\n          ".join(json.dumps(e) for e in data["runs"]) + "]}\n")


def store_from(specs: Sequence[RunSpec], manifest: str, layout: Layout, source: Path, twin: str | None = None,
               device: str | None = None, echo: Callable[[str], None] = print) -> list[str]:
    """Store here the runs of ``specs`` finished under the root ``source`` (see the module's docstring); returns
    a line per run: added, unchanged, twinned (the stored run kept under ``machine-check/TWIN``) or waiting (not
    finished there). Raises :class:`ConfigError`, writing nothing, if a run's configuration is not the
    manifest's or a stored run would be lost."""
    source_layout, results = Layout(Path(source)), layout.root / "results"
    if Path(source).resolve() == layout.root.resolve():
        raise ConfigError("--store-from names this root itself; give the root the runs trained under")
    plan, report = [], []
    for spec in specs:
        if spec.same_as or not (source_layout.result_dir(spec) / "result.json").is_file():
            report.append(f"waiting {spec.id}" + ("" if spec.same_as else f" (not finished under {source})"))
            continue
        stored_config = json.loads((source_layout.result_dir(spec) / "config.json").read_text())
        differences = config_differences(spec, stored_config)
        if differences:
            raise ConfigError(f"{spec.id} under {source} is not the manifest's run: {'; '.join(differences)}; "
                              "nothing stored")
        files = _source_files(spec, manifest, source_layout, device)
        here = layout.result_dir(spec)
        old = _read(here) if (here / "result.json").is_file() else None
        if old is not None and all(old.get(n) == data for n, data in files.items()):
            report.append(f"unchanged {spec.id}")
            continue
        twin_dir = None
        if old is not None:
            kinds = [machine_label(json.loads(f["result.json"])) for f in (old, files)]
            if twin is None or kinds[0] == kinds[1]:
                why = (f"give --twin LABEL to keep the stored run (trained on {kinds[0]}) as the machine-check "
                       f"twin of this one (on {kinds[1]})" if kinds[0] != kinds[1] else
                       f"both trained on {kinds[0]}, so the stored run is no machine check; remove it to replace it")
                raise ConfigError(f"{here} is stored with other results than {source}'s: {why}; nothing stored")
            twin_dir = results / MACHINE_CHECK / twin / spec.group / spec.name
            if twin_dir.exists():
                raise ConfigError(f"{twin_dir} exists already; nothing stored")
            old["command.txt"] = (f"(trained on {kinds[0]} as {spec.id}, whose stored run is now its rerun on "
                                  f"{kinds[1]}: the same command on two kinds of machine)\n").encode() + old["command.txt"]
        plan.append((spec, files, old, twin_dir))
    for spec, files, old, twin_dir in plan:
        if twin_dir is not None:
            _write(twin_dir, old)
            add_twin(results / MACHINE_CHECK / MACHINE_CHECK_MANIFEST, spec, twin)
            shutil.rmtree(layout.result_dir(spec))
        _write(layout.result_dir(spec), files)
        report.append(f"{'twinned' if twin_dir else 'added'} {spec.id}"
                      + (f" (the stored run kept as {twin_dir.relative_to(results)})" if twin_dir else ""))
    for line in report:
        echo(line)
    return report
