"""The methods SpecFlow is compared with: MVoT-style interleaved visual thoughts (generated or oracle), and
text-only chain of thought. DiffThinker-like (SpecFlow without text guidance) is SpecFlow with ``w = 0``.

- MVoT (Li et al. 2025): every visual thought is appended to the context as ``tokens_per_thought`` pixel-patch
  tokens, after its action token; the thoughts come from the *same* velocity net in pixel space (no DCT, no
  mask), at the same number of ODE steps. The context grows by ``tokens_per_thought + 1`` tokens per hop.
- MVoT-oracle: the ground-truth render is appended instead (accuracy upper bound, the same cost).
- Text-only CoT: the policy sees v_0 (as patches) and the action trace, no visual thoughts.
"""

from __future__ import annotations

import numpy as np
import torch

from .data import LakeMap, render
from .flow import FlowUpdater
from .reasoners import ACT, BOS, VIS, Policy, _Reasoner, _tokens, patches

__all__ = ["MVoTReasoner", "TextOnlyReasoner"]


def _patch_tokens(policy: Policy, img: torch.Tensor, tokens_per_thought: int, lead: list[int],
                  lead_ids: list[int]) -> torch.Tensor:
    feats = patches(img, tokens_per_thought)
    n = feats.shape[1]
    pad = torch.zeros(1, len(lead), feats.shape[2], device=feats.device)
    kinds = lead + [VIS] * n
    ids = lead_ids + [0] * n
    return _tokens(policy, kinds, ids, torch.cat([pad, feats], dim=1), [0] * len(lead) + list(range(n)))


class MVoTReasoner(_Reasoner):
    """MVoT-style reasoning: ``[task | v_0 | a_1 | v_1 | a_2 | v_2 ...]``, every thought appended.

    ``updater`` is a pixel-space :class:`FlowUpdater` (generated thoughts) or None (MVoT-oracle: true renders).
    """

    kind = "mvot"

    def __init__(self, policy: Policy, updater: FlowUpdater | None, tokens_per_thought: int = 16,
                 max_extra_hops: int = 2):
        super().__init__(policy, max_extra_hops)
        if updater is not None and updater.space != "pixel":
            raise ValueError("updater: MVoT generates its thoughts in pixel space (space='pixel')")
        if policy.slot.shape[0] < tokens_per_thought:
            raise ValueError(f"tokens_per_thought: the policy has {policy.slot.shape[0]} visual slots, "
                             f"fewer than {tokens_per_thought}")
        self.updater, self.tokens_per_thought = updater, tokens_per_thought
        self.kind = "mvot" if updater is not None else "mvot_oracle"

    def _start(self, img: torch.Tensor) -> tuple[torch.Tensor, object]:
        return _patch_tokens(self.policy, img, self.tokens_per_thought, [BOS], [0]), img

    def _after_move(self, action: int, thought: object) -> torch.Tensor:
        return _patch_tokens(self.policy, thought, self.tokens_per_thought, [ACT], [action])  # type: ignore[arg-type]

    def _think(self, m: LakeMap, pos: tuple[int, int], visited: set, thought: object, trace: list[int],
               g: torch.Generator) -> object:
        if self.updater is None:
            return torch.from_numpy(render(m, pos, visited))[None, None].to(self.policy.bos.device)
        return self.updater.sample(thought, [list(trace)], g)  # type: ignore[arg-type]

    def _visual_in_context(self, n_hops: int) -> int:
        return (n_hops + 1) * self.tokens_per_thought

    def _decode(self, thought: object) -> np.ndarray:
        return thought[0, 0].cpu().numpy()  # type: ignore[index]


class TextOnlyReasoner(_Reasoner):
    """Text-only chain of thought: ``[task | v_0 | a_1 | a_2 ...]`` (no visual thoughts)."""

    kind = "text"

    def __init__(self, policy: Policy, tokens_per_thought: int = 16, max_extra_hops: int = 2):
        super().__init__(policy, max_extra_hops)
        self.tokens_per_thought = tokens_per_thought

    def _start(self, img: torch.Tensor) -> tuple[torch.Tensor, object]:
        return _patch_tokens(self.policy, img, self.tokens_per_thought, [BOS], [0]), None

    def _after_move(self, action: int, thought: object) -> torch.Tensor:
        return _tokens(self.policy, [ACT], [action], None, [0])

    def _think(self, m: LakeMap, pos: tuple[int, int], visited: set, thought: object, trace: list[int],
               g: torch.Generator) -> object:
        return None

    def _visual_in_context(self, n_hops: int) -> int:
        return self.tokens_per_thought

    def _decode(self, thought: object) -> None:
        return None
