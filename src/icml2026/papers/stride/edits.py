"""The edit language of STRIDE (Sec. 3.1 of arXiv:2603.03573): actions, execution, shortest scripts, text.

An action ``a_t = (op, p, v)`` acts on the *current* sequence ``x_{t-1}`` of length ``L`` (0-based indices,
re-read after every action -- the paper's dynamic convention; the official GFP reward code applies edits in
descending wild-type positions instead, which we do not mix in):

- ``INSERT(p, v)``: insert ``v`` before position ``p`` (``p == L`` appends), ``0 <= p <= L``;
- ``DELETE(p)``: remove ``x[p]``, ``0 <= p < L``;
- ``REPLACE(p, v)``: set ``x[p] = v``, ``0 <= p < L``.

The textual format is the official data format, which writes the old token too::

    INSERT <v> at position <p>
    DELETE <old> at position <p>
    REPLACE <old> with <new> at position <p>

actions joined by `` ; ``; a completion is ``<edit_traj> a_1 ; ... ; a_T </edit_traj> x_out``. A written old
token that differs from ``x[p]`` makes the script *unexecutable* (:class:`UnexecutableEdit`).

Sequences are strings (one character per residue) or lists of tokens (SMILES atoms); results keep the
input's type.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "Edit",
    "UnexecutableEdit",
    "edit_distance",
    "shortest_edit_script",
    "apply_script",
    "render",
    "parse",
    "render_completion",
    "parse_completion",
    "tokenize_smiles",
    "random_edits",
    "bridge_script",
    "TRAJ_OPEN",
    "TRAJ_CLOSE",
]

Op = Literal["INSERT", "DELETE", "REPLACE"]
OPS: tuple[str, ...] = ("INSERT", "DELETE", "REPLACE")
TRAJ_OPEN, TRAJ_CLOSE = "<edit_traj>", "</edit_traj>"
_MAX_POS_DIGITS = 9  # int() of a 5000-digit string raises in CPython >= 3.11: parse() caps the digits
_BAD_TOKEN = re.compile(r"[\s;]")


class UnexecutableEdit(ValueError):
    """An action whose index is out of range or whose written old token does not match the sequence."""


@dataclass(frozen=True)
class Edit:
    """One action ``(op, pos, ...)``; ``old`` is the written current token (DELETE/REPLACE), ``new`` the
    written new token (INSERT/REPLACE). Tokens are non-empty and contain no whitespace and no ``;``."""

    op: Op
    pos: int
    old: str | None = None
    new: str | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op = {self.op!r}: must be one of {', '.join(OPS)}")
        if isinstance(self.pos, bool) or not isinstance(self.pos, (int, np.integer)) or self.pos < 0:
            raise ValueError(f"pos = {self.pos!r}: must be a non-negative integer")
        object.__setattr__(self, "pos", int(self.pos))
        need_old, need_new = self.op != "INSERT", self.op != "DELETE"
        for name, value, needed in (("old", self.old, need_old), ("new", self.new, need_new)):
            if needed:
                if not isinstance(value, str) or not value or _BAD_TOKEN.search(value):
                    raise ValueError(f"{name} = {value!r}: {self.op} needs a non-empty token without "
                                     "whitespace or ';'")
            elif value is not None:
                raise ValueError(f"{name} = {value!r}: {self.op} takes no {name} token")


def _as_tokens(seq: str | Sequence[str], name: str) -> tuple[list[str], bool]:
    """(tokens, is_string) of a sequence given as a string or a list of string tokens."""
    if isinstance(seq, str):
        return list(seq), True
    if isinstance(seq, (list, tuple)):
        toks = list(seq)
        if not all(isinstance(t, str) and t for t in toks):
            raise ValueError(f"{name}: every token must be a non-empty string")
        return toks, False
    raise ValueError(f"{name}: expected a string or a list of string tokens, got {type(seq).__name__}")


def _dp_table(a: list[str], b: list[str]) -> np.ndarray:
    """Levenshtein table, unit costs: D[i,0]=i, D[0,j]=j, D[i,j]=min(D[i-1,j]+1, D[i,j-1]+1,
    D[i-1,j-1]+[a_i != b_j]) (Sec. 3.2). Row by row; the insertion term along a row is a running minimum,
    D[i,j] = j + min_{k<=j}(E[k] - k) with E the row before insertions."""
    m, n = len(a), len(b)
    ids: dict[str, int] = {}
    ai = np.array([ids.setdefault(t, len(ids)) for t in a], dtype=np.int64)
    bi = np.array([ids.setdefault(t, len(ids)) for t in b], dtype=np.int64)
    d = np.zeros((m + 1, n + 1), dtype=np.int64)
    d[:, 0] = np.arange(m + 1)
    d[0, :] = np.arange(n + 1)
    ar = np.arange(n + 1)
    for i in range(1, m + 1):
        e = np.empty(n + 1, dtype=np.int64)
        e[0] = i
        e[1:] = np.minimum(d[i - 1, :-1] + (bi != ai[i - 1]), d[i - 1, 1:] + 1)
        d[i] = np.minimum.accumulate(e - ar) + ar
    return d


def edit_distance(src: str | Sequence[str], tgt: str | Sequence[str]) -> int:
    """Levenshtein distance (unit costs) between two token sequences, by the DP of Sec. 3.2."""
    a, _ = _as_tokens(src, "src")
    b, _ = _as_tokens(tgt, "tgt")
    return int(_dp_table(a, b)[len(a), len(b)])


def shortest_edit_script(src: str | Sequence[str], tgt: str | Sequence[str]) -> list[Edit]:
    """A minimum-length edit script from ``src`` to ``tgt`` with dynamic indices (Sec. 3.2, Eq. (2)).

    Backtrace from ``(m, n)`` with the official deterministic tie-break (diagonal MATCH/REPLACE first, then
    DELETE, then INSERT), then replay the alignment forward on a copy of ``src`` so that each action's index
    refers to the sequence after the previous actions. ``apply_script(src, script) == tgt`` and
    ``len(script) == edit_distance(src, tgt)``.
    """
    a, _ = _as_tokens(src, "src")
    b, _ = _as_tokens(tgt, "tgt")
    d = _dp_table(a, b)
    i, j = len(a), len(b)
    ops: list[tuple[str, int, int]] = []  # (kind, i-1, j-1), reversed
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i, j] == d[i - 1, j - 1] + (a[i - 1] != b[j - 1]):
            ops.append(("M" if a[i - 1] == b[j - 1] else "R", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and d[i, j] == d[i - 1, j] + 1:
            ops.append(("D", i - 1, -1))
            i -= 1
        else:
            ops.append(("I", -1, j - 1))
            j -= 1
    script: list[Edit] = []
    k = 0  # cursor in the current (partially edited) sequence
    for kind, ia, jb in reversed(ops):
        if kind == "M":
            k += 1
        elif kind == "R":
            script.append(Edit("REPLACE", k, old=a[ia], new=b[jb]))
            k += 1
        elif kind == "D":
            script.append(Edit("DELETE", k, old=a[ia]))
        else:
            script.append(Edit("INSERT", k, new=b[jb]))
            k += 1
    return script


def apply_script(seq: str | Sequence[str], script: Sequence[Edit]) -> str | list[str]:
    """Execute ``script`` on ``seq`` action by action (dynamic indices).

    Raises
    ------
    UnexecutableEdit
        An index out of range, a written old token that differs from the current one, or (for a string
        sequence) a token that is not one character.
    ValueError
        ``seq`` is not a string or list of tokens, or ``script`` holds something other than :class:`Edit`.
    """
    cur, is_str = _as_tokens(seq, "seq")
    if isinstance(script, (str, bytes)) or not all(isinstance(e, Edit) for e in script):
        raise ValueError("script: must be a sequence of Edit")
    for t, e in enumerate(script):
        n = len(cur)
        if e.op == "INSERT":
            if e.pos > n:
                raise UnexecutableEdit(f"action {t}: INSERT at {e.pos} on a sequence of length {n}")
        elif e.pos >= n:
            raise UnexecutableEdit(f"action {t}: {e.op} at {e.pos} on a sequence of length {n}")
        elif cur[e.pos] != e.old:
            raise UnexecutableEdit(f"action {t}: written old token {e.old!r} but position {e.pos} holds "
                                   f"{cur[e.pos]!r}")
        if is_str and e.new is not None and len(e.new) != 1:
            raise UnexecutableEdit(f"action {t}: token {e.new!r} is not one character")
        if e.op == "INSERT":
            cur.insert(e.pos, e.new)  # type: ignore[arg-type]
        elif e.op == "DELETE":
            del cur[e.pos]
        else:
            cur[e.pos] = e.new  # type: ignore[call-overload,assignment]
    return "".join(cur) if is_str else cur


def _render_one(e: Edit) -> str:
    if e.op == "INSERT":
        return f"INSERT {e.new} at position {e.pos}"
    if e.op == "DELETE":
        return f"DELETE {e.old} at position {e.pos}"
    return f"REPLACE {e.old} with {e.new} at position {e.pos}"


def render(script: Sequence[Edit]) -> str:
    """The official textual form of ``script``: actions joined by ``" ; "`` ("" for the empty script)."""
    if isinstance(script, (str, bytes)) or not all(isinstance(e, Edit) for e in script):
        raise ValueError("script: must be a sequence of Edit")
    return " ; ".join(_render_one(e) for e in script)


_TOK = r"([^\s;]+)"
_POS = rf"(\d{{1,{_MAX_POS_DIGITS}}})"
_PATTERNS = (
    (re.compile(rf"INSERT {_TOK} at position {_POS}"), "INSERT"),
    (re.compile(rf"DELETE {_TOK} at position {_POS}"), "DELETE"),
    (re.compile(rf"REPLACE {_TOK} with {_TOK} at position {_POS}"), "REPLACE"),
)


def parse(text: object) -> list[Edit] | None:
    """The script written in ``text`` (the format of :func:`render`, optionally wrapped in
    ``<edit_traj> ... </edit_traj>``), or None if it is malformed. Never raises, never evaluates."""
    if not isinstance(text, str):
        return None
    s = " ".join(text.split())  # whitespace-normalised; patterns then use single spaces
    if s.startswith(TRAJ_OPEN) and s.endswith(TRAJ_CLOSE):
        s = s[len(TRAJ_OPEN):-len(TRAJ_CLOSE)].strip()
    if not s:
        return []
    out: list[Edit] = []
    for part in s.split(";"):
        part = part.strip()
        for pat, op in _PATTERNS:
            m = pat.fullmatch(part)
            if m is not None:
                g = m.groups()
                if op == "INSERT":
                    out.append(Edit("INSERT", int(g[1]), new=g[0]))
                elif op == "DELETE":
                    out.append(Edit("DELETE", int(g[1]), old=g[0]))
                else:
                    out.append(Edit("REPLACE", int(g[2]), old=g[0], new=g[1]))
                break
        else:
            return None
    return out


def render_completion(script: Sequence[Edit], out: str | Sequence[str]) -> str:
    """``<edit_traj> a_1 ; ... </edit_traj> x_out`` (the completion format of Sec. 3.3, without ``<eos>``)."""
    toks, _ = _as_tokens(out, "out")
    body = render(script)
    return f"{TRAJ_OPEN} {body} {TRAJ_CLOSE} {''.join(toks)}" if body else f"{TRAJ_OPEN} {TRAJ_CLOSE} {''.join(toks)}"


def parse_completion(text: object) -> tuple[list[Edit], str] | None:
    """(script, written output) of a completion, or None if it is malformed. Never raises."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    if not s.startswith(TRAJ_OPEN) or s.count(TRAJ_CLOSE) != 1 or s.count(TRAJ_OPEN) != 1:
        return None
    body, _, written = s[len(TRAJ_OPEN):].partition(TRAJ_CLOSE)
    written = written.strip()
    if not written or any(c.isspace() for c in written):
        return None
    script = parse(body)
    if script is None:
        return None
    return script, written


# Atom-level SMILES regex (Schwaller et al., "Molecular Transformer", 2019).
_SMILES_RE = re.compile(
    r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$|%[0-9]{2}|[0-9])"
)


def tokenize_smiles(smiles: str) -> list[str]:
    """Atom-level tokens of ``smiles``; ``"".join(tokens) == smiles`` (ValueError naming ``smiles`` if a
    character is not covered by the regex)."""
    if not isinstance(smiles, str) or not smiles:
        raise ValueError(f"smiles = {smiles!r}: expected a non-empty string")
    toks = _SMILES_RE.findall(smiles)
    if "".join(toks) != smiles:
        raise ValueError(f"smiles = {smiles!r}: contains characters outside the SMILES token regex")
    return toks


def random_edits(
    seq: str | Sequence[str], n_edits: int, alphabet: Sequence[str], rng: np.random.Generator,
    op_weights: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3),
) -> list[Edit]:
    """``n_edits`` uniformly placed random actions (INSERT/DELETE/REPLACE drawn with ``op_weights``), each
    executable on the sequence produced by the previous ones. DELETE/REPLACE on an empty sequence become
    INSERT; a REPLACE always changes the token."""
    cur, _ = _as_tokens(seq, "seq")
    alpha = list(dict.fromkeys(alphabet))
    if len(alpha) < 2:
        raise ValueError("alphabet: needs at least two distinct tokens")
    if isinstance(n_edits, bool) or not isinstance(n_edits, (int, np.integer)) or n_edits < 0:
        raise ValueError(f"n_edits = {n_edits!r}: must be a non-negative integer")
    w = np.asarray(op_weights, dtype=float)
    if w.shape != (3,) or not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise ValueError("op_weights: three non-negative finite weights with a positive sum")
    w = w / w.sum()
    script: list[Edit] = []
    for _ in range(int(n_edits)):
        op = OPS[int(rng.choice(3, p=w))]
        if not cur:
            op = "INSERT"
        if op == "INSERT":
            p = int(rng.integers(0, len(cur) + 1))
            e = Edit("INSERT", p, new=alpha[int(rng.integers(len(alpha)))])
        elif op == "DELETE":
            p = int(rng.integers(len(cur)))
            e = Edit("DELETE", p, old=cur[p])
        else:
            p = int(rng.integers(len(cur)))
            choices = [t for t in alpha if t != cur[p]]
            e = Edit("REPLACE", p, old=cur[p], new=choices[int(rng.integers(len(choices)))])
        script.append(e)
        cur = list(apply_script(cur, [e]))
    return script


def bridge_script(
    src: str | Sequence[str], tgt: str | Sequence[str], alphabet: Sequence[str], rng: np.random.Generator,
    noise_prob: float = 0.4, max_noise: int = 8,
) -> list[Edit]:
    """The official optional "diffusion-like bridge": interleave random noise actions (probability
    ``noise_prob`` per step; op weights INSERT .4 / DELETE .3 / REPLACE .3) with guided repair steps (the
    first action of the current shortest script to ``tgt``). Executes on ``src`` to exactly ``tgt``."""
    if not (0.0 <= float(noise_prob) < 1.0):
        raise ValueError(f"noise_prob = {noise_prob!r}: must be in [0, 1)")
    cur, _ = _as_tokens(src, "src")
    goal, _ = _as_tokens(tgt, "tgt")
    script: list[Edit] = []
    n_noise = 0
    while True:
        if n_noise < max_noise and rng.random() < noise_prob:
            e = random_edits(cur, 1, alphabet, rng, op_weights=(0.4, 0.3, 0.3))[0]
            n_noise += 1
        else:
            rest = shortest_edit_script(cur, goal)
            if not rest:
                break
            e = rest[0]
        script.append(e)
        cur = list(apply_script(cur, [e]))
    return script
