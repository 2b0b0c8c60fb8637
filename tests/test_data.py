"""Vocabulary, corpus files (finding, checking, downloading, reading), the three batchers,
the synthetic corpus, and the real corpora's standard counts."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
import torch

from conftest import FAKE_NAMES, FAKE_PTB, sha256_text
from mlm.configs import get_preset
from mlm.data import corpora, load_corpus
from mlm.data.batching import DocumentBatches, SentenceBatches, StreamBatches, truncate_lines
from mlm.data.corpora import (DataError, default_cache_dir, download_allowed, download_file, locate_corpus,
                              read_lines, resolve_data_dir, verify_file)
from mlm.data.synthetic import synthetic_corpus, synthetic_lines
from mlm.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from mlm.training import build_batches

pytestmark = pytest.mark.usefixtures("no_data_env")

PAD_ID, EOS_ID, UNK_ID, BOS_ID = 0, 1, 2, 3


# =============================================================================================
# Vocabulary
# =============================================================================================
def test_vocab_special_ids_come_first_in_fixed_order():
    """<pad>=0, <eos>=1, <unk>=2, <bos>=3, then words by descending frequency, ties alphabetical."""
    vocab = Vocabulary.build([["b", "a", "c"], ["c", "b"], ["c"]])
    assert vocab.itos[:4] == [PAD, EOS, UNK, BOS]
    assert (vocab.pad_id, vocab.eos_id, vocab.unk_id, vocab.bos_id) == (0, 1, 2, 3)
    assert vocab.itos[4:] == ["c", "b", "a"]
    assert vocab.counts[vocab.stoi["c"]] == 3 and vocab.counts[vocab.eos_id] == 3


def test_vocab_without_bos_has_no_bos_id():
    """with_bos=False leaves <bos> out and asking for its id is an error."""
    vocab = Vocabulary.build([["x"]], with_bos=False)
    assert BOS not in vocab and vocab.itos == [PAD, EOS, UNK, "x"]
    with pytest.raises(ValueError):
        vocab.bos_id


def test_vocab_encode_maps_unknown_words_to_unk_and_decode_inverts():
    vocab = Vocabulary.build([["the", "cat"], ["the", "dog"]])
    ids = vocab.encode(["the", "zebra", "dog"])
    assert ids == [vocab.stoi["the"], vocab.unk_id, vocab.stoi["dog"]]
    assert vocab.decode(ids) == ["the", UNK, "dog"]
    assert vocab.decode(torch.tensor(vocab.encode(["cat", "the"]))) == ["cat", "the"]
    assert vocab.encode_tensor(["cat"]).dtype == torch.long


def test_vocab_dict_round_trip():
    """from_dict(to_dict()) gives the same ids, counts and fingerprint."""
    vocab = Vocabulary.build([["the", "cat"], ["a", "cat"]])
    copy = Vocabulary.from_dict(vocab.to_dict())
    assert copy.itos == vocab.itos and copy.stoi == vocab.stoi and copy.counts == vocab.counts
    assert copy.fingerprint() == vocab.fingerprint()


def test_vocab_fingerprint_changes_with_words():
    """The fingerprint tells vocabularies apart (word set and word order)."""
    a = Vocabulary.build([["the", "cat"], ["the"]])
    b = Vocabulary.build([["the", "dog"], ["the"]])
    c = Vocabulary([PAD, EOS, UNK, "cat", "the"])
    d = Vocabulary([PAD, EOS, UNK, "the", "cat"])
    assert len({a.fingerprint(), b.fingerprint(), c.fingerprint(), d.fingerprint()}) == 4


def test_vocab_rejects_duplicates_and_missing_specials():
    with pytest.raises(ValueError):
        Vocabulary([PAD, EOS, UNK, "a", "a"])
    with pytest.raises(ValueError):
        Vocabulary([PAD, EOS, "a"])


# =============================================================================================
# Reading and checking files
# =============================================================================================
def test_read_lines_plain_and_gzip_agree(write_fake_corpus, tmp_path):
    """A .txt and its .txt.gz read to the same token lists (empty lines kept as [])."""
    plain = write_fake_corpus(gz=False, root=tmp_path / "plain") / "ptb" / "ptb.test.txt"
    packed = write_fake_corpus(gz=True, root=tmp_path / "gz") / "ptb" / "ptb.test.txt.gz"
    expected = [["a", "cat"], [], ["the", "<unk>", "end"]]
    assert read_lines(plain) == expected
    assert read_lines(packed) == expected


def test_read_lines_rejects_non_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xe9 au lait\n")
    with pytest.raises(DataError, match="UTF-8"):
        read_lines(path)


def test_read_lines_rejects_corrupt_gzip(tmp_path):
    """A .gz that is not gzip gives a DataError naming the file."""
    path = tmp_path / "ptb.train.txt.gz"
    path.write_bytes(b"this is not gzip data")
    with pytest.raises(DataError, match="ptb.train.txt.gz"):
        read_lines(path)


@pytest.mark.parametrize("gz", [False, True])
def test_verify_file_checks_uncompressed_sha256(write_fake_corpus, gz):
    """The right sha256 (of the uncompressed bytes) passes; a wrong one is a DataError naming the file."""
    folder = write_fake_corpus(gz=gz) / "ptb"
    path = folder / (FAKE_NAMES["valid"] + (".gz" if gz else ""))
    verify_file(path, sha256_text(FAKE_PTB["valid"]))
    with pytest.raises(DataError) as info:
        verify_file(path, "0" * 64)
    assert str(path) in str(info.value)
    assert "0" * 64 in str(info.value)


def test_verify_file_notices_a_changed_file(write_fake_corpus):
    """A file that was fine and is then modified fails verification (no stale cache)."""
    path = write_fake_corpus() / "ptb" / FAKE_NAMES["valid"]
    good = sha256_text(FAKE_PTB["valid"])
    verify_file(path, good)
    path.write_text(FAKE_PTB["valid"] + "more words\n")
    with pytest.raises(DataError):
        verify_file(path, good)


def test_locate_corpus_without_download_names_missing_files_and_folder(tmp_path):
    """With downloads off, a missing corpus is a DataError listing each file and the folder."""
    with pytest.raises(DataError) as info:
        locate_corpus("ptb", tmp_path, download=False)
    message = str(info.value)
    for name in FAKE_NAMES.values():
        assert name in message
    assert str(tmp_path / "ptb") in message
    assert corpora.ENV_DATA_DIR in message  # says how to point elsewhere
    assert not (tmp_path / "ptb").exists()  # nothing created when downloads are off


def test_locate_corpus_lists_only_the_missing_files(write_fake_corpus):
    data_dir = write_fake_corpus(splits=("train",))
    with pytest.raises(DataError) as info:
        locate_corpus("ptb", data_dir, download=False)
    message = str(info.value)
    assert "ptb.valid.txt" in message and "ptb.test.txt" in message
    assert "ptb.train.txt" not in message


def test_locate_corpus_respects_no_download_env(tmp_path, monkeypatch):
    """MLM_NO_DOWNLOAD=1 forbids downloads, even when download=True is given (as every config does)."""
    monkeypatch.setenv(corpora.ENV_NO_DOWNLOAD, "1")
    assert download_allowed(None) is False and download_allowed(True) is False
    with pytest.raises(DataError, match="switched off"):
        locate_corpus("ptb", tmp_path, download=True)
    monkeypatch.setenv(corpora.ENV_NO_DOWNLOAD, "0")
    assert download_allowed(None) is True and download_allowed(True) is True and download_allowed(False) is False


def test_no_download_env_wins_over_a_config(tmp_path, monkeypatch):
    """A training config (data.download=True by default) cannot download when MLM_NO_DOWNLOAD=1."""
    from mlm.training import load_data

    cfg = get_preset("zaremba2014-small", overrides=[f"data.data_dir={tmp_path}"])
    assert cfg.data.download is True
    monkeypatch.setattr(corpora, "download_file", lambda *a, **k: pytest.fail("tried to download"))
    monkeypatch.setenv(corpora.ENV_NO_DOWNLOAD, "1")
    with pytest.raises(DataError, match="switched off"):
        load_data(cfg)


def test_locate_and_load_fake_corpus(write_fake_corpus, fake_registry, tmp_path):
    """Verified fake files are found (plain or .gz) and load into lines, documents and a vocabulary."""
    for gz in (False, True):
        data_dir = write_fake_corpus(gz=gz, root=tmp_path / f"data-{gz}")
        paths = locate_corpus("ptb", data_dir, download=False)
        assert set(paths) == {"train", "valid", "test"}
        assert paths["train"].name == "ptb.train.txt" + (".gz" if gz else "")
    corpus = load_corpus("ptb", data_dir, download=False)
    assert corpus.lines["test"] == [["a", "cat"], [], ["the", "<unk>", "end"]]
    assert corpus.num_tokens("train") == 12 + 3
    assert corpus.num_tokens("test") == 5 + 3
    assert corpus.documents["train"] == [0]
    assert corpus.vocab.itos[4] == "the"


def test_load_corpus_rejects_wrong_checksum(write_fake_corpus):
    """The real registry's checksums reject fake files: corrupt data is never used silently."""
    data_dir = write_fake_corpus()
    with pytest.raises(DataError, match="checksum mismatch"):
        load_corpus("ptb", data_dir, download=False)
    assert (data_dir / "ptb" / "ptb.train.txt").read_text() == FAKE_PTB["train"]  # nothing deleted


def test_load_corpus_rejects_open_vocabulary_valid_file(tmp_path, monkeypatch):
    """A valid file with words absent from train is a DataError for PTB (wrong file)."""
    folder = tmp_path / "ptb"
    folder.mkdir()
    texts = dict(FAKE_PTB, valid="the zebra\n")
    for split, text in texts.items():
        (folder / FAKE_NAMES[split]).write_text(text)
    spec = corpora.CorpusSpec("ptb", "ptb", "fake", tuple(
        corpora.CorpusFile(s, FAKE_NAMES[s], sha256_text(texts[s]), ("",)) for s in ("train", "valid", "test")))
    monkeypatch.setitem(corpora.REGISTRY, "ptb", spec)
    with pytest.raises(DataError, match="zebra"):
        load_corpus("ptb", tmp_path, download=False)


def test_unknown_corpus_lists_known_ones():
    with pytest.raises(DataError, match="wikitext-2"):
        locate_corpus("no-such-corpus", download=False)


def test_resolve_data_dir_order(tmp_path, monkeypatch):
    """Explicit argument, then $MLM_DATA_DIR, then $XDG_CACHE_HOME/mlm."""
    explicit, env, xdg = tmp_path / "explicit", tmp_path / "env", tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.delenv(corpora.ENV_DATA_DIR, raising=False)
    assert resolve_data_dir() == xdg / "mlm"
    assert default_cache_dir() == xdg / "mlm"
    monkeypatch.setenv(corpora.ENV_DATA_DIR, str(env))
    assert resolve_data_dir() == env
    assert resolve_data_dir("") == env
    assert resolve_data_dir(explicit) == explicit
    assert resolve_data_dir(str(explicit)) == explicit


def test_default_cache_without_xdg_is_home_cache(monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == Path.home() / ".cache" / "mlm"


# =============================================================================================
# Downloading (from a local HTTP server)
# =============================================================================================
def _files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_download_file_good_checksum(http_root, tmp_path):
    """A verified download lands at its destination and leaves no temporary file."""
    served, url = http_root
    (served / "a.txt").write_text(FAKE_PTB["train"])
    dest = tmp_path / "out" / "ptb.train.txt"
    assert download_file((f"{url}/a.txt",), dest, sha256_text(FAKE_PTB["train"]), timeout=5) == dest
    assert dest.read_text() == FAKE_PTB["train"]
    assert _files_in(dest.parent) == ["ptb.train.txt"]


def test_download_file_wrong_checksum_leaves_nothing(http_root, tmp_path):
    """A checksum mismatch is a DataError and leaves neither the file nor a .part file."""
    served, url = http_root
    (served / "a.txt").write_text("tampered content\n")
    dest = tmp_path / "out" / "ptb.train.txt"
    with pytest.raises(DataError, match="checksum mismatch"):
        download_file((f"{url}/a.txt",), dest, sha256_text(FAKE_PTB["train"]), timeout=5)
    assert _files_in(dest.parent) == []


def test_download_file_unreachable_url(closed_port_url, tmp_path):
    """Connection refused is a DataError naming the URL; no file is left behind."""
    dest = tmp_path / "out" / "f.txt"
    with pytest.raises(DataError) as info:
        download_file((closed_port_url,), dest, "0" * 64, timeout=5)
    assert closed_port_url in str(info.value)
    assert _files_in(dest.parent) == []


def test_download_file_interrupted_leaves_nothing(http_root, tmp_path):
    """A connection that drops mid-file is a DataError and leaves no partial file."""
    served, url = http_root
    (served / "a.txt").write_text(FAKE_PTB["train"] * 50)
    dest = tmp_path / "out" / "ptb.train.txt"
    with pytest.raises(DataError, match="checksum mismatch"):  # the short body fails the check
        download_file((f"{url}/truncated/a.txt",), dest, sha256_text(FAKE_PTB["train"] * 50), timeout=5)
    assert _files_in(dest.parent) == []
    # the same file in full from a second URL is accepted
    download_file((f"{url}/truncated/a.txt", f"{url}/a.txt"), dest, sha256_text(FAKE_PTB["train"] * 50), timeout=5)
    assert _files_in(dest.parent) == ["ptb.train.txt"]


def test_download_file_interrupted_chunked_is_a_data_error(http_root, tmp_path):
    """A chunked response that drops mid-chunk is a DataError too, and the next URL is tried."""
    served, url = http_root
    (served / "a.txt").write_text(FAKE_PTB["train"])
    dest = tmp_path / "out" / "ptb.train.txt"
    try:
        download_file((f"{url}/chunked-truncated/a.txt", f"{url}/a.txt"), dest, sha256_text(FAKE_PTB["train"]),
                      timeout=5)
    finally:
        assert not [n for n in _files_in(dest.parent) if n.endswith(".part")]
    assert dest.read_text() == FAKE_PTB["train"]


def test_download_file_falls_back_to_next_url(http_root, tmp_path):
    """A 404 on the first URL is skipped and the second URL is used."""
    served, url = http_root
    (served / "good.txt").write_text(FAKE_PTB["valid"])
    dest = tmp_path / "out" / "ptb.valid.txt"
    download_file((f"{url}/missing.txt", f"{url}/good.txt"), dest, sha256_text(FAKE_PTB["valid"]), timeout=5)
    assert dest.read_text() == FAKE_PTB["valid"]
    assert _files_in(dest.parent) == ["ptb.valid.txt"]


def test_locate_corpus_downloads_missing_files_then_loads(http_root, tmp_path, fake_registry):
    """locate_corpus(download=True) fetches only the missing files, verifies them, and they load."""
    served, url = http_root
    for split, name in FAKE_NAMES.items():
        (served / name).write_text(FAKE_PTB[split])
    fake_registry({split: (f"{url}/{name}",) for split, name in FAKE_NAMES.items()})
    data_dir = tmp_path / "data"
    (data_dir / "ptb").mkdir(parents=True)
    (data_dir / "ptb" / "ptb.train.txt.gz").write_bytes(gzip.compress(FAKE_PTB["train"].encode()))
    paths = locate_corpus("ptb", data_dir, download=True)
    assert paths["train"].name == "ptb.train.txt.gz"  # already there: not downloaded again
    assert _files_in(data_dir / "ptb") == ["ptb.test.txt", "ptb.train.txt.gz", "ptb.valid.txt"]
    corpus = load_corpus("ptb", data_dir, download=False)
    assert corpus.lines["valid"] == [line.split() for line in FAKE_PTB["valid"].splitlines()]


def test_locate_corpus_failed_download_explains_what_to_do(closed_port_url, tmp_path, fake_registry):
    """A failed download gives the missing-files message (folder, names) plus the cause."""
    fake_registry({split: (closed_port_url,) for split in FAKE_NAMES})
    with pytest.raises(DataError) as info:
        locate_corpus("ptb", tmp_path, download=True)
    message = str(info.value)
    assert "download failed" in message and str(tmp_path / "ptb") in message
    assert "ptb.train.txt" in message
    assert _files_in(tmp_path / "ptb") == []


# =============================================================================================
# Batching
# =============================================================================================
def random_lines(n: int, seed: int = 0, max_len: int = 9, vocab: int = 30, empty: bool = True) -> list[list[int]]:
    """Lines of word ids >= 4 (above the specials), some empty."""
    rng = random.Random(seed)
    lo = 0 if empty else 1
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(lo, max_len))] for _ in range(n)]


def stream_of(lines) -> list[int]:
    out = [EOS_ID]
    for line in lines:
        out += list(line) + [EOS_ID]
    return out


def n_tokens(lines) -> int:
    return sum(len(line) + 1 for line in lines)


@pytest.mark.parametrize("batch_size,bptt", [(1, 5), (3, 4), (4, 7), (7, 3)])
def test_stream_scores_every_token_once(batch_size, bptt):
    """Sum of masks == words + lines; the masked inputs/targets, row by row, are the stream and its shift."""
    lines = random_lines(23, seed=batch_size)
    batches = StreamBatches(lines, EOS_ID, PAD_ID, batch_size, bptt)
    assert batches.num_tokens == n_tokens(lines) == sum(int(b.mask.sum()) for b in batches)
    inputs = torch.cat([b.inputs for b in batches], dim=1)  # (batch, row_len)
    targets = torch.cat([b.targets for b in batches], dim=1)
    mask = torch.cat([b.mask for b in batches], dim=1)
    stream = stream_of(lines)
    assert inputs[mask].tolist() == stream[:-1]  # row-major order
    assert targets[mask].tolist() == stream[1:]
    assert (targets[~mask] == PAD_ID).all()
    assert all(b.inputs.shape[1] <= bptt and b.reset is None for b in batches)


def test_stream_targets_continue_across_batch_boundaries():
    """Each batch's first input in a row is the previous batch's last target in that row."""
    lines = random_lines(30, seed=1)
    batches = list(StreamBatches(lines, EOS_ID, PAD_ID, 3, 5))
    assert len(batches) > 2
    for prev, nxt in zip(batches, batches[1:]):
        for r in range(3):
            if nxt.mask[r, 0]:
                assert nxt.inputs[r, 0] == prev.targets[r, -1]
    for b in batches:  # within a batch, targets are the inputs shifted by one
        m = b.mask[:, 1:] & b.mask[:, :-1]
        assert torch.equal(b.inputs[:, 1:][m], b.targets[:, :-1][m])


def test_stream_state_is_carried():
    assert StreamBatches([[5]], EOS_ID, PAD_ID, 1, 2).carry_state is True
    assert SentenceBatches([[5]], BOS_ID, EOS_ID, PAD_ID, 1).carry_state is False
    assert DocumentBatches([[5]], [0], EOS_ID, PAD_ID, 1, 2).carry_state is True


def test_sentence_rows_start_with_bos_and_count_words_plus_eos():
    """Every row starts with <bos>; scored targets are each sentence's words then <eos>."""
    lines = random_lines(17, seed=2)
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4)
    assert batches.num_tokens == n_tokens(lines)
    rows = []
    for b in batches:
        assert (b.inputs[:, 0] == BOS_ID).all()
        for r in range(b.inputs.size(0)):
            m = b.mask[r]
            rows.append((b.inputs[r][m].tolist(), b.targets[r][m].tolist()))
    assert rows == [([BOS_ID] + line, line + [EOS_ID]) for line in lines]


def test_sentence_padding_is_masked_and_holds_pad():
    lines = [[5, 6, 7, 8, 9], [5], [], [6, 6]]
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4, pad_to=8)
    (b,) = list(batches)
    assert b.inputs.shape == (4, 8)
    assert b.mask.sum(1).tolist() == [6, 2, 1, 3]
    assert (b.inputs[~b.mask] == PAD_ID).all() and (b.targets[~b.mask] == PAD_ID).all()
    assert (b.targets[b.mask] != PAD_ID).all()
    # without pad_to, the batch is as wide as its longest sentence
    (b2,) = list(SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4))
    assert b2.inputs.shape == (4, 6)


@pytest.mark.parametrize("max_len", [1, 3, 5])
def test_sentence_truncation_counts(max_len):
    """With max_len, a sentence of n words scores min(n + 1, max_len) targets (its prefix)."""
    lines = random_lines(20, seed=3)
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=6, max_len=max_len)
    assert batches.num_tokens == sum(min(len(line) + 1, max_len) for line in lines)
    b = next(iter(batches))
    assert b.inputs.size(1) <= max_len
    line = lines[0]
    assert b.targets[0][b.mask[0]].tolist() == (line + [EOS_ID])[:max_len]


def test_sentence_drop_empty():
    lines = [[5], [], [6, 7]]
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=5, drop_empty=True)
    assert batches.num_tokens == 2 + 3 and next(iter(batches)).inputs.size(0) == 2


def test_sentence_buckets_sort_by_length():
    """buckets=True: row lengths never decrease, within and across batches (in order)."""
    lines = random_lines(40, seed=4, max_len=15)
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=6, buckets=True)
    lengths = [int(n) for b in batches for n in b.mask.sum(1)]
    assert lengths == sorted(lengths) and len(lengths) == 40
    assert lengths != [len(line) + 1 for line in lines]  # the input was not already sorted
    assert batches.num_tokens == n_tokens(lines)


def test_sentence_shuffle_is_seeded():
    """Same seed: same batch order; the order changes between epochs and differs from unshuffled."""
    lines = random_lines(60, seed=5)

    def orders(seed, epochs=3):
        batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4, shuffle=True, seed=seed)
        index = {id(b): i for i, b in enumerate(batches.batches)}
        return [[index[id(b)] for b in batches] for _ in range(epochs)]

    a, b = orders(7), orders(7)
    assert a == b
    assert a[0] != a[1]
    assert a[0] != list(range(15))
    assert orders(8) != a
    assert sorted(a[0]) == list(range(15))


def test_batches_state_dict_restores_shuffle_order():
    """Saving and loading the batcher's state reproduces the next epoch's order."""
    lines = random_lines(40, seed=6)
    a = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4, shuffle=True, seed=1)
    list(a)
    state = a.state_dict()
    expected = [b.inputs.tolist() for b in a]
    b = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4, shuffle=True, seed=1)
    b.load_state_dict(state)
    assert [x.inputs.tolist() for x in b] == expected


def test_batches_move_to_a_device_once_with_their_token_counts():
    """``Batches.to`` moves every batch in place and keeps the counts made on the host (a device that holds no
    data, "meta", would fail to count again); the shuffled order and its state are unchanged."""
    lines = random_lines(40, seed=6)
    batches = SentenceBatches(lines, BOS_ID, EOS_ID, PAD_ID, batch_size=4, shuffle=True, seed=1)
    counts = [b.num_tokens for b in batches.batches]
    assert batches.to("meta") is batches
    assert {b.inputs.device.type for b in batches} == {"meta"}
    assert [b.num_tokens for b in batches.batches] == counts and batches.num_tokens == n_tokens(lines)


def _documents(lines, starts):
    bounds = list(zip(starts, starts[1:] + [len(lines)]))
    return [stream_of(lines[a:b]) for a, b in bounds]


@pytest.mark.parametrize("batch_size,bptt", [(1, 4), (3, 5), (4, 3), (8, 6)])
def test_document_windows(batch_size, bptt):
    """Per row: windows of one document are consecutive, reset is True exactly at a document's first
    window, the masked inputs/targets of those windows are the document and its shift, and every
    document appears exactly once (total scored == words + lines)."""
    lines = random_lines(40, seed=batch_size * 10 + bptt)
    starts = [0, 3, 4, 11, 20, 21, 33]
    docs = _documents(lines, starts)
    batches = list(DocumentBatches(lines, starts, EOS_ID, PAD_ID, batch_size, bptt))
    assert sum(b.num_tokens for b in batches) == n_tokens(lines)
    found = []
    for r in range(batch_size):
        used = [b.mask[r].any().item() for b in batches]
        n_used = sum(used)
        assert used == [True] * n_used + [False] * (len(batches) - n_used)  # no gaps in a row
        segments = []  # (inputs, targets) per document, split where reset is True
        for b in batches[:n_used]:
            m = b.mask[r]
            if b.reset[r]:
                segments.append(([], []))
            else:
                assert segments, "a row's first window must reset"
                assert segments[-1][1][-1] == b.inputs[r, 0].item()  # continues the previous window
            segments[-1][0].extend(b.inputs[r][m].tolist())
            segments[-1][1].extend(b.targets[r][m].tolist())
            if not m.all():  # padding only at a document's end: the next window must reset
                assert b.targets[r][m].tolist()[-1] == EOS_ID
        for inputs, targets in segments:
            assert inputs[1:] == targets[:-1]
            found.append([inputs[0]] + targets)
    assert sorted(found) == sorted(docs)


def test_document_reset_only_at_document_start():
    """A long document spans several windows in one row; only its first window resets."""
    lines = [[5] * 10, [6] * 10]
    batches = list(DocumentBatches(lines, [0, 1], EOS_ID, PAD_ID, batch_size=2, bptt=4))
    assert [b.reset.tolist() for b in batches] == [[True, True], [False, False], [False, False]]
    assert [b.inputs[0, 0].item() for b in batches] == [EOS_ID, 5, 5]


def test_truncate_lines():
    lines = [[1, 2], [3], [4, 5, 6]]
    assert truncate_lines(lines, None) == lines
    assert truncate_lines(lines, 5) == [[1, 2], [3]]
    assert truncate_lines(lines, 1) == [[1, 2]]  # never empty


# =============================================================================================
# Synthetic corpus
# =============================================================================================
def test_synthetic_value_follows_key_at_the_gap():
    """Each sentence is k<i>, gap fillers (min_gap..max_gap), v<i>, tail fillers."""
    lines = synthetic_lines(300, num_keys=5, num_fillers=12, min_gap=2, max_gap=6, tail=3, seed=4)
    gaps = set()
    for words in lines:
        assert words[0].startswith("k")
        key = words[0][1:]
        values = [i for i, w in enumerate(words) if w.startswith("v")]
        assert len(values) == 1
        gap = values[0] - 1
        assert 2 <= gap <= 6
        assert words[values[0]] == f"v{key}"
        assert len(words) == gap + 2 + 3
        assert all(w.startswith("w") for i, w in enumerate(words) if i not in (0, values[0]))
        gaps.add(gap)
    assert gaps == set(range(2, 7))


def test_synthetic_is_deterministic():
    assert synthetic_lines(50, seed=3) == synthetic_lines(50, seed=3)
    assert synthetic_lines(50, seed=3) != synthetic_lines(50, seed=4)
    a, b = synthetic_corpus(200, 20, seed=1), synthetic_corpus(200, 20, seed=1)
    assert a.lines == b.lines and a.vocab.itos == b.vocab.itos
    assert a.lines["valid"] != a.lines["test"]


def test_synthetic_corpus_documents_and_bad_gap():
    corpus = synthetic_corpus(100, 30, sentences_per_document=10)
    assert corpus.documents["train"] == list(range(0, 100, 10))
    assert corpus.documents["valid"] == [0, 10, 20]
    assert corpus.vocab.bos_id == BOS_ID
    with pytest.raises(ValueError):
        synthetic_lines(5, min_gap=4, max_gap=2)


# =============================================================================================
# The real corpora (skipped when not available)
# =============================================================================================
def test_ptb_standard_counts(shared_data):
    """PTB: 929,589 / 73,760 / 82,430 tokens; 10,000 types incl. <eos>, plus <pad> and <bos>."""
    corpus = load_corpus("ptb", shared_data, download=False)
    assert [corpus.num_tokens(s) for s in ("train", "valid", "test")] == [929_589, 73_760, 82_430]
    assert len(corpus.vocab) == 10_002
    assert corpus.vocab.itos[:4] == [PAD, EOS, UNK, BOS]
    assert corpus.documents == {"train": [0], "valid": [0], "test": [0]}


def test_ptb_valid_all_protocols_score_the_same_tokens(shared_data):
    """stream, sentence and document batches of PTB valid all score 73,760 targets."""
    corpus = load_corpus("ptb", shared_data, download=False)
    for protocol in ("stream", "sentence", "document"):
        cfg = get_preset("zaremba2014-small", overrides=[f"data.protocol={protocol}", "data.max_len=35"])
        assert build_batches(cfg, corpus, "valid").num_tokens == 73_760, protocol


def test_wikitext2_standard_counts(shared_data):
    """WikiText-2: 600 / 60 / 60 articles, 2,088,628 / 217,646 / 245,569 tokens, 33,278 types + 2."""
    corpus = load_corpus("wikitext-2", shared_data, download=False)
    assert [len(corpus.documents[s]) for s in ("train", "valid", "test")] == [600, 60, 60]
    assert [corpus.num_tokens(s) for s in ("train", "valid", "test")] == [2_088_628, 217_646, 245_569]
    assert len(corpus.vocab) == 33_278 + 2
