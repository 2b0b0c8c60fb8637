"""``python -m mlm book --size full`` runs: every chapter that trains executes at the papers' sizes.

A real full-size book needs a GPU and hours; here each chapter runs at ``size="full"`` as a smoke run
(``--smoke``: every training reads only a few thousand tokens for one epoch). That exercises what a full-size
run executes, the full-size presets, data, models, plots and the chapter's checks that hold at any size,
and fails when a chapter only works at the reduced size.
"""

import json
import os

import nbformat
import pytest

from mlm.book import run_book
from mlm.configs import get_preset, smoke_config
from mlm.utils import SMOKE_ENV, smoke_tokens

TRAINING_CHAPTERS = ["01", "02", "03", "04", "05"]


@pytest.mark.slow
def test_every_training_chapter_runs_at_full_size(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("MLM_DATA_DIR", str(shared_data))
    runs = run_book(TRAINING_CHAPTERS, size="full", output=tmp_path, timeout=600, progress=False, smoke=2000)
    failed = {r.chapter: r.error for r in runs if r.status != "ok"}
    assert not failed, failed
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["size"] == "full" and summary["smoke_tokens"] == 2000
    for run in runs:
        notebook = nbformat.read(run.output, as_version=4)
        text = json.dumps([c.get("outputs", []) for c in notebook.cells])
        assert "ran at the full size" in text and "Smoke run" in text, run.chapter  # the reader is told
        assert "SMOKE RUN" in text, run.chapter  # every training said it was cut
    # The runs went beside the notebooks, named by the full size, never into the book's runs/ folder.
    folders = sorted(p.name for p in (tmp_path / "smoke-runs").iterdir())
    assert folders and all("-full-" in name for name in folders), folders


def test_a_smoke_run_cuts_data_and_epochs_and_nothing_else(monkeypatch):
    cfg = get_preset("salton2017-ptb-single", "full")
    monkeypatch.delenv(SMOKE_ENV, raising=False)
    assert smoke_tokens() is None and smoke_config(cfg) is cfg  # no smoke: the configuration itself
    monkeypatch.setenv(SMOKE_ENV, "3000")
    cut = smoke_config(cfg)
    assert (cut.data.max_train_tokens, cut.data.max_eval_tokens, cut.train.epochs) == (3000, 3000, 1)
    assert cut.model == cfg.model and cut.train.lr == cfg.train.lr and cut.data.batch_size == cfg.data.batch_size
    reduced = get_preset("salton2017-ptb-single", "reduced")  # a smaller cap is kept
    assert smoke_config(reduced).data.max_train_tokens == min(3000, reduced.data.max_train_tokens)
    articles = smoke_config(get_preset("daniluk2017-wt2-kvp-L15", "full"))  # every article cut to one window
    assert (articles.data.max_document_tokens, articles.data.max_train_tokens, articles.train.epochs) == (20, None, 1)


@pytest.mark.parametrize("value", ["0", "-5", "many", "1e3"])
def test_a_bad_smoke_value_says_what_to_do(monkeypatch, value):
    monkeypatch.setenv(SMOKE_ENV, value)
    with pytest.raises(ValueError, match="positive number of tokens"):
        smoke_tokens()


def test_smoke_notebooks_are_never_written_back(tmp_path):
    with pytest.raises(ValueError, match="without --inplace"):
        run_book(["01"], size="full", output=tmp_path, inplace=True, smoke=100)
    with pytest.raises(ValueError, match="positive number of tokens"):
        run_book(["01"], size="full", output=tmp_path, smoke=0)
    assert not any(tmp_path.iterdir())


def test_the_book_command_refuses_smoke_with_inplace(capsys):
    from mlm.cli import main

    with pytest.raises(SystemExit, match="--inplace"):
        main(["book", "01", "--size", "full", "--smoke", "100", "--inplace"])


def test_a_chapter_run_without_smoke_clears_an_inherited_smoke_setting(tmp_path, monkeypatch):
    """A smoke setting left in the shell must not cut a real run of the book."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_env.py").write_text(
        '# %% tags=["parameters"]\nsize = "reduced"\n\n# %%\nimport os\nfrom mlm.book import record\n'
        'record("01_env", {"smoke": os.environ.get("MLM_SMOKE_TOKENS", "unset")})\n')
    monkeypatch.setenv(SMOKE_ENV, "100")
    runs = run_book(None, output=tmp_path / "out", progress=False, chapters_dir=tmp_path / "chapters",
                    reports_dir=tmp_path / "none")
    assert runs[0].status == "ok" and runs[0].results == {"smoke": "unset"}, runs[0]
    assert os.environ[SMOKE_ENV] == "100"  # the caller's environment itself is left alone


@pytest.mark.parametrize("command", [["train", "zaremba2014-small"], ["reproduce", "cpu", "--list"],
                                     ["bench", "zaremba2014-small"]])
def test_commands_that_train_refuse_a_smoke_setting(monkeypatch, capsys, command):
    from mlm.cli import main

    monkeypatch.setenv(SMOKE_ENV, "100")
    assert main(command) == 2
    assert "unset it" in capsys.readouterr().err


def test_a_smoke_run_is_marked_and_never_read_as_a_result(tmp_path, monkeypatch):
    import io
    import tarfile

    import mlm
    from mlm.archive import ArchiveError, unpack
    from mlm.stored import StoredSetting

    monkeypatch.setenv(SMOKE_ENV, "400")
    cfg = mlm.get_preset("zaremba2014-small", "reduced", overrides={"data.corpus": "synthetic", "train.device": "cpu",
                                                                    "model.hidden_size": 8, "model.embed_size": 8})
    run = mlm.train(cfg, run_dir=tmp_path / "results" / "g" / "r" / "seed0", progress=False)
    assert run.result["smoke_tokens"] == 400 and run.result["epochs_run"] == 1
    assert "SMOKE RUN" in json.loads((tmp_path / "results" / "g" / "r" / "seed0" / "config.json").read_text())["notes"]
    with pytest.raises(ValueError, match="smoke run"):  # the one place stored results are read
        StoredSetting("g", "r").add_seed(tmp_path / "results" / "g" / "r" / "seed0")
    archive = tmp_path / "batch.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = (tmp_path / "results" / "g" / "r" / "seed0" / "result.json").read_bytes()
        info = tarfile.TarInfo("g/r/seed0/result.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ArchiveError, match="smoke run"):
        unpack(archive, tmp_path / "stored", {"result.json"})
