"""The Indirect Retrieval task of the paper (Sec. 3): generator, text prompts, rendered scenes, batches.

A sample with ``N`` objects draws N distinct colours and N distinct shapes (object j = (c_j, s_j)), a random
permutation ``pi`` of the shapes for the association list, N distinct items and a query colour ``c_q``
uniform among the N. The answer is the item of the shape whose colour is ``c_q`` (colour -> shape -> item).

Text prompt: ``c_1 s_1 ... c_N s_N [CTX_END] s_pi1 i_pi1 ... s_piN i_piN [QUE] c_q`` -> ``i*``.
Image prompt: the context ``c_1 s_1 ... c_N s_N`` is replaced by one 64x64 RGB scene (8x8 grid of 8-px cells,
each object drawn as its shape's 6x6 glyph in its colour in a random distinct cell, +-1 px jitter) that a
frozen encoder turns into 64 image tokens. Noise-text prompt: the text context with unattendable noise
tokens inserted at random places so that the context spans 64 positions, as the image does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from icml2026.core.validate import positive_int

__all__ = [
    "GRID",
    "CELL",
    "IMAGE_SIZE",
    "N_IMAGE_TOKENS",
    "Vocab",
    "RetrievalSample",
    "Batch",
    "sample_task",
    "counterfactual_sample",
    "text_prompt",
    "encode_prompt",
    "palette",
    "glyphs",
    "place_objects",
    "draw_scene",
    "render_scene",
    "text_batch",
    "noise_text_batch",
    "image_batch",
    "cell_codes",
]

GRID = 8  # cells per side
CELL = 8  # pixels per cell side
IMAGE_SIZE = GRID * CELL  # 64
N_IMAGE_TOKENS = GRID * GRID  # 64, independent of N
GLYPH = 6  # glyph side in pixels
_GLYPH_SEED = 20260215  # fixed: the glyphs are part of the task definition, not of a run
_MAX_SHAPES = 216  # the paper's controlled scale: 216 colours x 216 shapes x 32 items
_MAX_COLOURS = 216
_SMALL_PALETTE = 56  # palettes up to this size come from the coarse grid {0,85,170,255}^3 (unchanged)


@dataclass(frozen=True)
class Vocab:
    """Token ids: colours, shapes, items, three specials, noise tokens (brief: C=32, S=32, I=24, V_noise=32).

    Layout: ``[colours | shapes | items | [CTX_END] [QUE] [PAD] | noise]``.
    """

    n_colours: int = 32
    n_shapes: int = 32
    n_items: int = 24
    n_noise: int = 32

    def __post_init__(self) -> None:
        positive_int(self.n_colours, "n_colours", minimum=2, maximum=_MAX_COLOURS)
        positive_int(self.n_shapes, "n_shapes", minimum=2, maximum=_MAX_SHAPES)
        positive_int(self.n_items, "n_items", minimum=2, maximum=4096)
        positive_int(self.n_noise, "n_noise", minimum=1, maximum=4096)

    @property
    def colour0(self) -> int:
        return 0

    @property
    def shape0(self) -> int:
        return self.n_colours

    @property
    def item0(self) -> int:
        return self.n_colours + self.n_shapes

    @property
    def ctx_end(self) -> int:
        return self.item0 + self.n_items

    @property
    def que(self) -> int:
        return self.ctx_end + 1

    @property
    def pad(self) -> int:
        return self.ctx_end + 2

    @property
    def noise0(self) -> int:
        return self.ctx_end + 3

    @property
    def size(self) -> int:
        return self.noise0 + self.n_noise

    def max_objects(self) -> int:
        return min(self.n_colours, self.n_shapes, self.n_items, N_IMAGE_TOKENS)

    def token_name(self, tok: int) -> str:
        if tok < self.shape0:
            return f"colour_{tok}"
        if tok < self.item0:
            return f"shape_{tok - self.shape0}"
        if tok < self.ctx_end:
            return f"item_{tok - self.item0}"
        specials = {self.ctx_end: "[CTX_END]", self.que: "[QUE]", self.pad: "[PAD]"}
        if tok in specials:
            return specials[tok]
        if tok < self.size:
            return f"noise_{tok - self.noise0}"
        raise ValueError(f"token id {tok} is outside the vocabulary of size {self.size}")

    def token_id(self, name: str) -> int:
        specials = {"[CTX_END]": self.ctx_end, "[QUE]": self.que, "[PAD]": self.pad}
        if name in specials:
            return specials[name]
        kind, _, idx = name.partition("_")
        bases = {
            "colour": (self.colour0, self.n_colours),
            "shape": (self.shape0, self.n_shapes),
            "item": (self.item0, self.n_items),
            "noise": (self.noise0, self.n_noise),
        }
        if kind not in bases or not idx.isdigit() or int(idx) >= bases[kind][1]:
            raise ValueError(f"token {name!r} is not in the vocabulary")
        return bases[kind][0] + int(idx)


@dataclass(frozen=True)
class RetrievalSample:
    """One Indirect Retrieval instance; indices are within their type (colour 3 = ``colour_3``).

    ``objects[j] = (c_j, s_j)`` in context order; ``associations[k] = (s_pi_k, item)``; ``answer`` the item
    bound (through its shape) to ``query_colour``; ``query_slot`` the context slot of the query colour.
    """

    objects: list[tuple[int, int]]
    associations: list[tuple[int, int]]
    query_colour: int
    answer: int
    query_slot: int
    vocab: Vocab = field(default_factory=Vocab)

    @property
    def n_objects(self) -> int:
        return len(self.objects)

    def item_of_shape(self, shape: int) -> int:
        for s, i in self.associations:
            if s == shape:
                return i
        raise ValueError(f"shape {shape} has no association")

    def shape_of_colour(self, colour: int) -> int:
        for c, s in self.objects:
            if c == colour:
                return s
        raise ValueError(f"colour {colour} is not in the context")


def sample_task(n_objects: int, rng: np.random.Generator, vocab: Vocab | None = None) -> RetrievalSample:
    """Draw one Indirect Retrieval sample with ``n_objects`` objects (the generator of Sec. 3)."""
    vocab = Vocab() if vocab is None else vocab
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    n = positive_int(n_objects, "n_objects", minimum=1, maximum=vocab.max_objects())
    colours = rng.choice(vocab.n_colours, n, replace=False)
    shapes = rng.choice(vocab.n_shapes, n, replace=False)
    items = rng.choice(vocab.n_items, n, replace=False)
    perm = rng.permutation(n)  # association order: a random permutation, never slot order (brief pitfall)
    objects = [(int(c), int(s)) for c, s in zip(colours, shapes, strict=True)]
    item_of = {int(shapes[j]): int(items[j]) for j in range(n)}  # item j belongs to object j's shape
    associations = [(int(shapes[k]), item_of[int(shapes[k])]) for k in perm]
    q = int(rng.integers(n))
    return RetrievalSample(objects, associations, int(colours[q]), item_of[int(shapes[q])], q, vocab)


def counterfactual_sample(base: RetrievalSample, rng: np.random.Generator) -> tuple[RetrievalSample, int]:
    """The counterfactual x' of the interchange intervention (brief, mechanistic analysis).

    Same objects with the context order cyclically rotated and the items re-drawn (from items not used in
    x, so that the x'-answer differs from every x item); the query is another colour c' of x such that its
    slot in x' differs from its slot q in x and from the slot of x's query (so the five outcome classes are
    disjoint). Returns (x', p') with p' the slot in x' of c'. Needs N >= 3 and 2N <= n_items.
    """
    n, vocab = base.n_objects, base.vocab
    if n < 3:
        raise ValueError(f"base has {n} objects: the interchange intervention needs n_objects >= 3")
    if 2 * n > vocab.n_items:
        raise ValueError(f"base has {n} objects: needs 2 * n_objects <= n_items = {vocab.n_items}")
    # Deviation: x' items are drawn outside x's items (the brief only says "re-drawn"), so outcomes are disjoint
    used = {i for _, i in base.associations}
    free = np.array([i for i in range(vocab.n_items) if i not in used])
    options = [
        (q, r) for q in range(n) if q != base.query_slot for r in range(1, n) if (q - r) % n != base.query_slot
    ]  # slot of c' in x' is (q - r) mod n != q, != slot of c
    q, r = options[int(rng.integers(len(options)))]
    objects = base.objects[r:] + base.objects[:r]  # rotation by r: slot j of x moves to slot (j - r) mod n
    new_items = rng.choice(free, n, replace=False)
    item_of = {s: int(new_items[k]) for k, (s, _) in enumerate(base.associations)}
    associations = [(s, item_of[s]) for s, _ in base.associations]
    c_prime, s_prime = base.objects[q]
    p_prime = (q - r) % n
    assert objects[p_prime][0] == c_prime
    return RetrievalSample(objects, associations, c_prime, item_of[s_prime], p_prime, vocab), p_prime


def text_prompt(sample: RetrievalSample) -> list[str]:
    """The token sequence ``c_1 s_1 ... c_N s_N [CTX_END] s_pi1 i_pi1 ... [QUE] c_q`` (answer not included)."""
    out = []
    for c, s in sample.objects:
        out += [f"colour_{c}", f"shape_{s}"]
    out.append("[CTX_END]")
    for s, i in sample.associations:
        out += [f"shape_{s}", f"item_{i}"]
    out += ["[QUE]", f"colour_{sample.query_colour}"]
    return out


def encode_prompt(tokens: list[str], vocab: Vocab) -> np.ndarray:
    """Token names -> int64 ids."""
    return np.array([vocab.token_id(t) for t in tokens], dtype=np.int64)


def _context_ids(sample: RetrievalSample) -> list[int]:
    v = sample.vocab
    out = []
    for c, s in sample.objects:
        out += [v.colour0 + c, v.shape0 + s]
    return out


def _suffix_ids(sample: RetrievalSample) -> list[int]:
    v = sample.vocab
    out = [v.ctx_end]
    for s, i in sample.associations:
        out += [v.shape0 + s, v.item0 + i]
    return out + [v.que, v.colour0 + sample.query_colour]


# ----------------------------------------------------------------------------------------------- scenes
def palette(n_colours: int = 32) -> np.ndarray:
    """``(n_colours, 3)`` uint8 well-separated RGB colours (greedy farthest points of a grid of RGB levels).

    Up to 56 colours the grid is {0,85,170,255}^3; the paper's controlled scale (216 colours) uses the finer
    grid {0,43,85,128,170,213,255}^3. Candidates whose brightest channel is below 170 (coarse grid) or 85
    (fine grid) are excluded so every colour stands out from the black background. Deterministic (no
    randomness): the first colour is white, each next one is the candidate farthest (Euclidean, ties by
    index) from those chosen.
    """
    if not 1 <= n_colours <= _MAX_COLOURS:
        raise ValueError(f"n_colours = {n_colours}: must be in [1, {_MAX_COLOURS}]")
    return _palette(int(n_colours)).copy()


@lru_cache(maxsize=8)
def _palette(n_colours: int) -> np.ndarray:
    if n_colours <= _SMALL_PALETTE:
        levels, floor = np.array([0, 85, 170, 255]), 170
    else:  # Deviation: the paper's 216 colours are not specified beyond their number; a finer grid of ours
        levels, floor = np.array([0, 43, 85, 128, 170, 213, 255]), 85
    cand = np.array([(r, g, b) for r in levels for g in levels for b in levels])
    cand = cand[cand.max(1) >= floor]
    chosen = [int(np.argmax(cand.sum(1)))]
    dist = np.linalg.norm(cand - cand[chosen[0]], axis=1)
    while len(chosen) < n_colours:
        nxt = int(np.argmax(dist))
        chosen.append(nxt)
        dist = np.minimum(dist, np.linalg.norm(cand - cand[nxt], axis=1))
    return cand[chosen].astype(np.uint8)


def glyphs(n_shapes: int = 32) -> np.ndarray:
    """``(n_shapes, 6, 6)`` bool glyphs: fixed seeded random bitmaps, pairwise Hamming distance >= 10.

    Each glyph touches all four sides of its 6x6 box (so the +-1 px jitter is the only position change).
    The glyphs are drawn in one fixed sequence, so the first k of any larger set are the set of size k.
    """
    if not 1 <= n_shapes <= _MAX_SHAPES:
        raise ValueError(f"n_shapes = {n_shapes}: must be in [1, {_MAX_SHAPES}]")
    return _glyph_bank(int(n_shapes)).copy()


_GLYPHS: list[np.ndarray] = []  # the fixed sequence, grown on demand (its generator state kept beside it)
_GLYPH_RNG: list[np.random.Generator] = []


def _glyph_bank(n_shapes: int) -> np.ndarray:
    if not _GLYPH_RNG:
        _GLYPH_RNG.append(np.random.default_rng(_GLYPH_SEED))  # fixed seed: the glyph set is a task constant
    rng = _GLYPH_RNG[0]
    while len(_GLYPHS) < n_shapes:
        g = rng.random((GLYPH, GLYPH)) < 0.5
        if not (g[0].any() and g[-1].any() and g[:, 0].any() and g[:, -1].any()) or g.sum() < 12:
            continue
        if not _GLYPHS or int((np.asarray(_GLYPHS) != g).sum((1, 2)).min()) >= 10:
            _GLYPHS.append(g)
    return np.stack(_GLYPHS[:n_shapes])


def place_objects(n_objects: int, rng: np.random.Generator, jitter: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Random distinct cells (``(N,)`` in raster order 0..63) and per-object pixel offsets ``(N, 2)``."""
    n = positive_int(n_objects, "n_objects", minimum=1, maximum=N_IMAGE_TOKENS)
    cells = rng.choice(N_IMAGE_TOKENS, n, replace=False)
    offsets = rng.integers(-1, 2, size=(n, 2)) if jitter else np.zeros((n, 2), dtype=np.int64)
    return cells.astype(np.int64), offsets.astype(np.int64)


def draw_scene(
    objects: list[tuple[int, int]],
    cells: np.ndarray,
    offsets: np.ndarray,
    colours: np.ndarray,
    shape_glyphs: np.ndarray,
) -> np.ndarray:
    """Paint each (colour, shape) at its cell (glyph at offset (1,1) + jitter) on black: ``(64, 64, 3)`` uint8."""
    img = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
    pad = (CELL - GLYPH) // 2
    for (c, s), cell, (dy, dx) in zip(objects, cells, offsets, strict=True):
        y0 = (int(cell) // GRID) * CELL + pad + int(dy)
        x0 = (int(cell) % GRID) * CELL + pad + int(dx)
        patch = img[y0 : y0 + GLYPH, x0 : x0 + GLYPH]
        patch[shape_glyphs[s]] = colours[c]
    return img


def render_scene(sample: RetrievalSample, rng: np.random.Generator, jitter: bool = True) -> np.ndarray:
    """The 64x64x3 uint8 scene of ``sample``'s context (random distinct cells, +-1 px jitter)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    v = sample.vocab
    cells, offsets = place_objects(sample.n_objects, rng, jitter)
    return draw_scene(sample.objects, cells, offsets, palette(v.n_colours), glyphs(v.n_shapes))


# ---------------------------------------------------------------------------------------------- batches
@dataclass
class Batch:
    """Left-padded prompts ready for :class:`~.model.BindingLM` (all arrays have batch size B first).

    ``ids`` (B, T) int64 (image slots hold [PAD]); ``key_mask`` (B, T) bool, False for padding and noise
    (unattendable); ``position_ids`` (B, T); ``images`` (B, 64, 64, 3) uint8 or None with ``image_start``
    the first of the 64 image-token positions; ``answer`` (B,) item index; ``query_slot`` (B,) context slot
    of c_q; ``query_shape`` (B,) shape index bound to c_q; ``n_objects`` (B,).
    """

    ids: np.ndarray
    key_mask: np.ndarray
    position_ids: np.ndarray
    answer: np.ndarray
    query_slot: np.ndarray
    query_shape: np.ndarray
    n_objects: np.ndarray
    is_context: np.ndarray
    images: np.ndarray | None = None
    cell_codes: np.ndarray | None = None
    image_start: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def _stack(
    rows: list[list[int]],
    masks: list[list[bool]],
    vocab: Vocab,
    samples: list[RetrievalSample],
    contexts: list[list[bool]],
) -> Batch:
    """Left-pad to a common length; positions count only the real (non-pad) tokens, from 0."""
    t = max(len(r) for r in rows)
    b = len(rows)
    ids = np.full((b, t), vocab.pad, dtype=np.int64)
    key = np.zeros((b, t), dtype=bool)
    pos = np.zeros((b, t), dtype=np.int64)
    ctx = np.zeros((b, t), dtype=bool)
    for k, (r, m, c) in enumerate(zip(rows, masks, contexts, strict=True)):
        ids[k, t - len(r) :] = r
        key[k, t - len(r) :] = m
        ctx[k, t - len(r) :] = c
        pos[k, t - len(r) :] = np.arange(len(r))
    return Batch(
        ids,
        key,
        pos,
        answer=np.array([s.answer for s in samples]),
        query_slot=np.array([s.query_slot for s in samples]),
        query_shape=np.array([s.shape_of_colour(s.query_colour) for s in samples]),
        n_objects=np.array([s.n_objects for s in samples]),
        is_context=ctx,
    )


def text_batch(samples: list[RetrievalSample]) -> Batch:
    """Text prompts of ``samples`` as one left-padded batch."""
    if not samples:
        raise ValueError("samples is empty")
    vocab = samples[0].vocab
    rows = [_context_ids(s) + _suffix_ids(s) for s in samples]  # == encode_prompt(text_prompt(s)) (tested)
    ctx = [[j < 2 * s.n_objects for j in range(len(r))] for s, r in zip(samples, rows, strict=True)]
    return _stack(rows, [[True] * len(r) for r in rows], vocab, samples, ctx)


def noise_text_batch(
    samples: list[RetrievalSample], rng: np.random.Generator, context_len: int = N_IMAGE_TOKENS
) -> Batch:
    """Text prompts whose 2N context tokens are spread over ``context_len`` positions by noise tokens.

    The real context tokens keep their order; the ``context_len - 2N`` noise tokens (random noise ids) sit at
    random places among them and are masked as keys (``key_mask`` False), so they only shift positions.
    """
    if not samples:
        raise ValueError("samples is empty")
    vocab = samples[0].vocab
    rows, masks, ctxs = [], [], []
    for s in samples:
        ctx = _context_ids(s)
        n_noise = context_len - len(ctx)
        if n_noise < 0:
            raise ValueError(f"context_len = {context_len}: smaller than the context of {s.n_objects} objects")
        is_real = np.zeros(context_len, dtype=bool)
        is_real[np.sort(rng.choice(context_len, len(ctx), replace=False))] = True
        noise = vocab.noise0 + rng.integers(vocab.n_noise, size=n_noise)
        row = np.empty(context_len, dtype=np.int64)
        row[is_real], row[~is_real] = ctx, noise
        suffix = _suffix_ids(s)
        rows.append([int(t) for t in row] + suffix)
        masks.append(list(is_real) + [True] * len(suffix))
        ctxs.append(list(is_real) + [False] * len(suffix))
    return _stack(rows, masks, vocab, samples, ctxs)


def cell_codes(sample: RetrievalSample, cells: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``(64,)`` int code of what each cell holds: 0 empty, else ``1 + ((c * S + s) * 3 + dy + 1) * 3 + dx + 1``.

    A cell's image token depends only on this code (the encoder sees one cell at a time), which lets
    :meth:`~.model.CellEncoder.feature_table` encode every possible cell once.
    """
    n_s = sample.vocab.n_shapes
    codes = np.zeros(N_IMAGE_TOKENS, dtype=np.int64)
    for (c, s), cell, (dy, dx) in zip(sample.objects, cells, offsets, strict=True):
        codes[int(cell)] = 1 + ((c * n_s + s) * 3 + int(dy) + 1) * 3 + int(dx) + 1
    return codes


def image_batch(
    samples: list[RetrievalSample], rng: np.random.Generator, jitter: bool = True, render: bool = True
) -> Batch:
    """Image prompts: 64 image-token slots (the scene), then ``[CTX_END] associations [QUE] c_q``.

    ``images`` holds the rendered scenes (as :func:`render_scene` draws them, same rng draws) and
    ``cell_codes`` what each cell holds; with ``render=False`` only the codes are made (training speed).
    """
    if not samples:
        raise ValueError("samples is empty")
    vocab = samples[0].vocab
    rows = [[vocab.pad] * N_IMAGE_TOKENS + _suffix_ids(s) for s in samples]
    ctx = [[j < N_IMAGE_TOKENS for j in range(len(r))] for r in rows]
    batch = _stack(rows, [[True] * len(r) for r in rows], vocab, samples, ctx)
    cols, shp = palette(vocab.n_colours), glyphs(vocab.n_shapes)
    images, codes = [], []
    for s in samples:
        cells, offsets = place_objects(s.n_objects, rng, jitter)
        codes.append(cell_codes(s, cells, offsets))
        if render:
            images.append(draw_scene(s.objects, cells, offsets, cols, shp))
    batch.cell_codes = np.stack(codes)
    batch.images = np.stack(images) if render else None
    batch.image_start = batch.ids.shape[1] - np.array([len(r) for r in rows])
    return batch
