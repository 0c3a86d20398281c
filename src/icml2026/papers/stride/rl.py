"""Stage II of STRIDE (Sec. 3.4): group policy optimisation, GRPO and GSPO, written out by hand.

Per step: draw prompts, sample ``G`` completions each with the current policy (KV cache, temperature,
top-p), score them (the consistency gate + task reward), form group advantages
``A_i = (r_i - mean(r)) / (std(r) + 1e-4)`` (Eq. (4)), compute ``log pi_old`` (and ``log pi_ref`` for GRPO)
in no-grad passes, then take ``steps_per_generation`` optimiser steps on disjoint minibatches of the rollout.

- GRPO (Eq. (5)): ``J = 1/G sum_i 1/|o_i| sum_t min(rho_it A_i, clip(rho_it, 1-eps, 1+eps) A_i)
  - beta * KL_k3``, ``rho_it = pi_theta / pi_old``, ``KL_k3 = exp(d) - d - 1``, ``d = log pi_ref - log pi_theta``.
- GSPO (Eq. (6)): ``s_i = exp(1/|o_i| sum_t [log pi_theta - log pi_old])``,
  ``J = 1/G sum_i min(s_i A_i, clip(s_i, 1-eps_low, 1+eps_high) A_i)``, beta = 0.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from icml2026.core.progress import track
from icml2026.core.validate import positive_int

from .policy import AdapterDisabled, completion_logprobs, is_adapted, sample

__all__ = ["RLConfig", "RLHistory", "group_advantages", "grpo_loss", "gspo_loss", "rl_train"]


@dataclass(frozen=True)
class RLConfig:
    """Stage II hyper-parameters. Paper (14B, LoRA r=16): lr 1e-5, G = 8, GRPO eps 0.2, beta 0.001; GSPO
    beta 0, eps_low 3e-4, eps_high 4e-4, steps_per_generation 4; sampling T = 0.7, top-p 0.9."""

    algo: Literal["grpo", "gspo"] = "grpo"
    n_steps: int = 300
    n_prompts: int = 16
    group_size: int = 8
    lr: float = 1e-4  # Deviation: full fine-tune of the tiny model, not LoRA at 1e-5
    eps: float = 0.2
    eps_low: float = 3e-4
    eps_high: float = 4e-4
    beta: float = 0.001
    steps_per_generation: int = 1
    temperature: float = 0.7
    top_p: float = 0.9
    max_new_tokens: int = 64
    grad_clip: float = 1.0
    adv_eps: float = 1e-4


@dataclass
class RLHistory:
    """Per rollout: mean reward, fraction of groups with non-zero reward spread, mean loss."""

    mean_reward: np.ndarray
    informative_groups: np.ndarray
    loss: np.ndarray


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """``(r_i - mean(r)) / (std(r) + eps)`` within consecutive groups of ``group_size`` (Eq. (4)); a group
    whose rewards are all equal gets advantage exactly 0 (no division by ~0)."""
    group_size = positive_int(group_size, "group_size")
    r = torch.as_tensor(rewards, dtype=torch.float32)
    if r.ndim != 1 or r.numel() == 0 or r.numel() % group_size:
        raise ValueError(f"rewards: expected a 1-D tensor whose length is a multiple of group_size={group_size}")
    if not torch.isfinite(r).all():
        raise ValueError("rewards: contains NaN or inf")
    g = r.view(-1, group_size)
    centred = g - g.mean(dim=1, keepdim=True)
    std = g.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(centred[:, :1])
    return (centred / (std + eps)).view(-1)


def _check_token_tensors(mask: torch.Tensor, adv: torch.Tensor, **per_token: torch.Tensor | None) -> None:
    """ValueError naming the argument unless every per-token tensor and ``mask`` are (B, T) tensors of one
    shape, without NaN, and ``adv`` a (B,) tensor."""
    named = {**per_token, "mask": mask, "adv": adv}
    for name, t in named.items():
        if t is not None and not isinstance(t, torch.Tensor):
            raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t is not None and t.is_floating_point() and torch.isnan(t).any():
            raise ValueError(f"{name}: contains NaN")
    if mask.ndim != 2 or mask.shape[0] == 0 or mask.shape[1] == 0:
        raise ValueError(f"mask: expected a non-empty (B, T) tensor, got shape {tuple(mask.shape)}")
    for name, t in per_token.items():
        if t is not None and t.shape != mask.shape:
            raise ValueError(f"{name}: expected shape {tuple(mask.shape)} (that of mask), got {tuple(t.shape)}")
    if adv.shape != mask.shape[:1]:
        raise ValueError(f"adv: expected shape ({mask.shape[0]},) (one per row of mask), got {tuple(adv.shape)}")


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, ref_logp: torch.Tensor | None, mask: torch.Tensor,
              adv: torch.Tensor, eps: float, beta: float) -> torch.Tensor:
    """Negative GRPO objective (Eq. (5)) for ``(B, T)`` per-token log-probs; mean over tokens of each
    completion, then over completions."""
    _check_token_tensors(mask, adv, logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    rho = torch.exp(logp - old_logp)
    a = adv[:, None]
    per_tok = torch.minimum(rho * a, torch.clamp(rho, 1 - eps, 1 + eps) * a)
    if beta > 0:
        if ref_logp is None:
            raise ValueError("ref_logp: needed when beta > 0")
        d = ref_logp - logp
        per_tok = per_tok - beta * (torch.exp(d) - d - 1)  # k3 estimator of KL(pi_theta || pi_ref)
    per_seq = (per_tok * mask).sum(1) / mask.sum(1).clamp(min=1)
    return -per_seq.mean()


def gspo_loss(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, adv: torch.Tensor,
              eps_low: float, eps_high: float) -> torch.Tensor:
    """Negative GSPO objective (Eq. (6)) with the length-normalised sequence ratio ``s_i``."""
    _check_token_tensors(mask, adv, logp=logp, old_logp=old_logp)
    n_tok = mask.sum(1).clamp(min=1)
    s = torch.exp(((logp - old_logp) * mask).sum(1) / n_tok)
    obj = torch.minimum(s * adv, torch.clamp(s, 1 - eps_low, 1 + eps_high) * adv)
    return -obj.mean()


def rl_train(
    model: Any,
    prompts: Sequence[Sequence[int]],
    reward_fn: Callable[[int, list[int]], float],
    cfg: RLConfig,
    rng: np.random.Generator,
    *,
    eos_id: int,
    pad_id: int,
    desc: str = "RL",
) -> RLHistory:
    """Stage II in place on ``model``. The reference policy pi_ref is ``model`` at entry: with LoRA adapters
    (peft) it is the model with its adapters switched off (no copy; the adapters must be fresh, i.e. start
    at zero, as :func:`icml2026.core.loaders.apply_lora` makes them), otherwise a frozen copy.

    ``reward_fn(prompt_index, completion_ids)`` scores one completion (gate + task reward).
    """
    if cfg.algo not in ("grpo", "gspo"):
        raise ValueError(f"algo = {cfg.algo!r}: must be 'grpo' or 'gspo'")
    if not prompts:
        raise ValueError("prompts: needs at least one prompt")
    n_rollout = cfg.n_prompts * cfg.group_size
    if n_rollout % cfg.steps_per_generation:
        raise ValueError("steps_per_generation: must divide n_prompts * group_size")
    beta = cfg.beta if cfg.algo == "grpo" else 0.0
    ref: Any = None
    if beta > 0:
        ref = AdapterDisabled(model) if is_adapted(model) else copy.deepcopy(model).eval()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))  # CPU: sample() draws there
    dev = next(model.parameters()).device
    hist = RLHistory(np.zeros(cfg.n_steps), np.zeros(cfg.n_steps), np.zeros(cfg.n_steps))
    for step in track(range(cfg.n_steps), desc):
        chosen = rng.choice(len(prompts), size=cfg.n_prompts, replace=len(prompts) < cfg.n_prompts)
        batch_prompts = [prompts[int(i)] for i in chosen]
        model.eval()
        comps = sample(model, batch_prompts, n=cfg.group_size, max_new_tokens=cfg.max_new_tokens, eos_id=eos_id,
                       pad_id=pad_id, generator=gen, temperature=cfg.temperature, top_p=cfg.top_p)
        comps = [c if c else [eos_id] for c in comps]  # an empty completion still has one scored token
        rows_prompt = [batch_prompts[k // cfg.group_size] for k in range(n_rollout)]
        rewards = torch.tensor([reward_fn(int(chosen[k // cfg.group_size]), comps[k]) for k in range(n_rollout)],
                               dtype=torch.float32)
        adv = group_advantages(rewards, cfg.group_size, cfg.adv_eps).to(dev)
        # pi_old: detached, from the policy that sampled. With one update per rollout the policy *is* pi_old
        # when the update's forward pass runs, so that pass's detached log-probs serve (ratio exactly 1) and the
        # separate no-grad pass is skipped (as trl does for num_iterations = 1).
        one_update = cfg.steps_per_generation == 1
        with torch.no_grad():
            old_logp = None if one_update else completion_logprobs(model, rows_prompt, comps, pad_id)[0]
            ref_logp = completion_logprobs(ref, rows_prompt, comps, pad_id)[0] if ref is not None else None
        perm = rng.permutation(n_rollout)
        mb = n_rollout // cfg.steps_per_generation
        model.train()
        losses = []
        for k in range(cfg.steps_per_generation):
            rows = np.sort(perm[k * mb:(k + 1) * mb])
            idx = torch.as_tensor(rows, device=dev)
            logp, mask = completion_logprobs(model, [rows_prompt[i] for i in rows], [comps[i] for i in rows], pad_id)
            width = logp.shape[1]
            o = logp.detach() if old_logp is None else old_logp[idx][:, :width]
            if cfg.algo == "grpo":
                r = ref_logp[idx][:, :width] if ref_logp is not None else None
                loss = grpo_loss(logp, o, r, mask, adv[idx], cfg.eps, beta)
            else:
                loss = gspo_loss(logp, o, mask, adv[idx], cfg.eps_low, cfg.eps_high)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
        model.eval()
        g = rewards.view(-1, cfg.group_size)
        hist.mean_reward[step] = float(rewards.mean())
        hist.informative_groups[step] = float((g.max(1).values > g.min(1).values).float().mean())
        hist.loss[step] = float(np.mean(losses))
    return hist
