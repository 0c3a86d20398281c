"""Baselines of the protein stress test (paper, Table 1) and the training data of each model.

- Random perturbation: 1-3 uniformly random INSERT/DELETE/REPLACE actions on ``x_src``.
- Vanilla SFT: the same model and data, but the completion is ``x_tgt`` only (direct generation).
- STRIDE-SFT: Stage I only, on shortest-edit demonstrations (:func:`trajectory_sft_data`).
(STRIDE = STRIDE-SFT + GRPO/GSPO, :mod:`.rl`.) Zero-shot prompting of a pretrained LLM and Edit Flows are
not implemented (no pretrained LLM offline; Edit Flows is the brief's optional stretch baseline).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .data import random_variant
from .edits import shortest_edit_script
from .policy import EditCodec, EditVocab

__all__ = ["random_perturbation", "trajectory_sft_data", "direct_sft_data"]

_Pair = tuple[Sequence[str] | str, Sequence[str] | str, int | None]  # (source, target, instruction)


def random_perturbation(src: str, n_samples: int, rng: np.random.Generator, max_edits: int = 3) -> list[str]:
    """``n_samples`` outputs of the Random baseline: each ``src`` after 1..``max_edits`` random actions."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples = {n_samples!r}: must be a positive integer")
    return [random_variant(src, rng, max_edits) for _ in range(n_samples)]


def trajectory_sft_data(vocab: EditVocab | EditCodec, pairs: Sequence[_Pair]
                        ) -> tuple[list[list[int]], list[list[int]]]:
    """STRIDE Stage I data (Sec. 3.3): prompt ``(x_src, I)``, completion ``<edit_traj> T* </edit_traj> x_tgt``
    with ``T*`` the shortest edit script."""
    prompts, comps = [], []
    for src, tgt, ins in pairs:
        prompts.append(vocab.prompt(src, ins))
        comps.append(vocab.trajectory_completion(shortest_edit_script(src, tgt), tgt))
    return prompts, comps


def direct_sft_data(vocab: EditVocab | EditCodec, pairs: Sequence[_Pair]) -> tuple[list[list[int]], list[list[int]]]:
    """Vanilla SFT data: the same prompts, completion ``<out> x_tgt <eos>`` (no trajectory)."""
    return ([vocab.prompt(s, i) for s, _, i in pairs], [vocab.direct_completion(t) for _, t, _ in pairs])
