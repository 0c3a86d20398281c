"""Teacher-forced imitation of the BFS expert (policies) and flow-matching training (velocity nets).

Policies see ground-truth visual thoughts while training: DCT-truncated renders (SpecFlow), pixel patches
(MVoT) or v_0 only (text-only). At test time they read the thoughts the velocity net generates.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import torch

from icml2026.core.progress import track
from icml2026.core.validate import finite_number, positive_int

from .data import STOP, LakeMap, agent_cell, expert_renders
from .flow import FlowUpdater, PerfectDenoiser, flow_matching_loss
from .reasoners import ACT, BOS, VIS, Episode, Policy, _Reasoner, patches
from .spectral import block_dct, to_workspace

__all__ = ["ExpertEpisode", "expert_episodes", "train_policy", "train_velocity", "evaluate", "Evaluation",
           "DenoiserCheck", "perfect_denoiser_decoding"]


@dataclass(frozen=True)
class ExpertEpisode:
    """A map, its expert moves, the renders v_0..v_H (H+1, 1, S, S) and the agent cells along the path."""

    lake: LakeMap
    moves: list[int]
    frames: torch.Tensor
    cells: list[tuple[int, int]]


def expert_episodes(pairs: list[tuple[LakeMap, list[int]]]) -> list[ExpertEpisode]:
    """Renders along the expert path of each (map, moves) pair."""
    out = []
    for m, moves in pairs:
        frames, cells = expert_renders(m, moves)
        out.append(ExpertEpisode(m, list(moves), torch.from_numpy(frames)[:, None], cells))
    return out


def _sequences(kind: str, ep: ExpertEpisode, tokens_per_thought: int, ws_keep: int, block: int
               ) -> list[tuple[tuple, list[int], torch.Tensor, list[int]]]:
    """(layout key, action ids, visual feats (L, f), targets (-100: none)) for one episode.

    The layout key holds the token kinds and slots, so sequences with one key stack into one batch.
    """
    targets_all = ep.moves + [STOP]  # the action after v_i; STOP once the goal is reached
    H = len(ep.moves)  # noqa: N806 - the brief's depth H
    out = []
    if kind == "specflow":
        ws = to_workspace(block_dct(ep.frames, block), ws_keep, block)[:, 0]  # (H+1, n_blocks, ws_keep)
        n = ws.shape[1]
        for i in range(H + 1):
            kinds = [BOS] + [ACT] * i + [VIS] * n
            slots = [0] * (1 + i) + list(range(n))
            ids = [0] + ep.moves[:i] + [0] * n
            feats = torch.cat([torch.zeros(1 + i, ws_keep), ws[i]], dim=0)
            tgt = [-100] * (len(kinds) - 1) + [targets_all[i]]
            out.append(((tuple(kinds), tuple(slots)), ids, feats, tgt))
        return out
    p = patches(ep.frames, tokens_per_thought)  # (H+1, tpt, f)
    n, f = p.shape[1], p.shape[2]
    kinds, slots, ids, chunks, tgt = [BOS], [0], [0], [torch.zeros(1, f)], [-100]
    if kind == "mvot":
        for i in range(H + 1):
            if i > 0:
                kinds.append(ACT)
                slots.append(0)
                ids.append(ep.moves[i - 1])
                chunks.append(torch.zeros(1, f))
                tgt.append(-100)
            kinds += [VIS] * n
            slots += list(range(n))
            ids += [0] * n
            chunks.append(p[i])
            tgt += [-100] * (n - 1) + [targets_all[i]]
    elif kind == "text":
        kinds += [VIS] * n
        slots += list(range(n))
        ids += [0] * n
        chunks.append(p[0])
        tgt += [-100] * (n - 1) + [targets_all[0]]
        for i in range(1, H + 1):
            kinds.append(ACT)
            slots.append(0)
            ids.append(ep.moves[i - 1])
            chunks.append(torch.zeros(1, f))
            tgt.append(targets_all[i])
    else:
        raise ValueError(f"kind: must be 'specflow', 'mvot' or 'text', got {kind!r}")
    out.append(((tuple(kinds), tuple(slots)), ids, torch.cat(chunks, dim=0), tgt))
    return out


def _lr_factor(i: int, n_steps: int) -> float:
    """Linear warm-up over 5% of the steps, then a cosine from 1 down to 0.1 (a factor on the base rate)."""
    warm = max(1, n_steps // 20)
    if i < warm:
        return (i + 1) / warm
    frac = (i - warm) / max(1, n_steps - warm)
    return 0.1 + 0.45 * (1.0 + math.cos(math.pi * min(1.0, frac)))


def train_policy(
    policy: Policy,
    kind: str,
    episodes: list[ExpertEpisode],
    n_steps: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    tokens_per_thought: int = 16,
    ws_keep: int = 16,
    block: int = 8,
    grad_accum: int = 1,
) -> list[float]:
    """Teacher-forced cross-entropy on the expert's next action; returns the loss per step.

    ``grad_accum`` micro-batches (each of ``batch_size`` actions) are accumulated into one optimiser step, for a
    large backbone whose batch does not fit at once; 1 (the default) is a plain step.

    ``batch_size`` counts supervised actions, not sequences: SpecFlow's sequences hold one target each (the
    action read off one workspace), MVoT's and text-only's whole episodes hold H + 1, so a step takes
    ``max(1, batch_size // (H + 1))`` of those. Every kind thus learns from about the same number of expert
    actions per step, and every expert action is equally likely to be drawn. The learning rate warms up over
    the first 5% of the steps and then follows a cosine down to a tenth of ``lr``.
    """
    if not episodes:
        raise ValueError("episodes: is empty")
    n_steps = positive_int(n_steps, "n_steps", maximum=10**6)
    batch_size = positive_int(batch_size, "batch_size", maximum=4096)
    lr = finite_number(lr, "lr", lo=0.0, hi=1.0, lo_open=True)
    grad_accum = positive_int(grad_accum, "grad_accum", maximum=1024)
    groups: dict[tuple, list] = defaultdict(list)
    for ep in episodes:
        for key, ids, feats, tgt in _sequences(kind, ep, tokens_per_thought, ws_keep, block):
            groups[key].append((ids, feats, tgt))
    keys = list(groups)
    stacked = []
    for key in keys:
        rows = groups[key]
        stacked.append((torch.tensor(key[0]), torch.tensor(key[1]), torch.tensor([r[0] for r in rows]),
                        torch.stack([r[1] for r in rows]), torch.tensor([r[2] for r in rows])))
    per_seq = [int((s[4][0] != -100).sum()) for s in stacked]  # targets per sequence (one value per group)
    sizes = torch.tensor([len(groups[k]) * n for k, n in zip(keys, per_seq, strict=True)], dtype=torch.float64)
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: _lr_factor(i, n_steps))
    policy.train()
    losses = []
    for _ in track(range(n_steps), f"train policy ({kind})"):
        opt.zero_grad()
        step_loss = 0.0
        for _micro in range(grad_accum):
            gi = int(torch.multinomial(sizes, 1, generator=generator))
            g_kinds, g_slots, g_ids, g_feats, g_tgt = stacked[gi]
            n_seq = min(max(1, batch_size // per_seq[gi]), g_ids.shape[0])
            idx = torch.randint(0, g_ids.shape[0], (n_seq,), generator=generator)
            hidden = policy(policy.embed(g_kinds, g_ids[idx], g_feats[idx], g_slots))
            logits = policy.head(hidden)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     g_tgt[idx].reshape(-1).to(logits.device), ignore_index=-100)
            (loss / grad_accum).backward()
            step_loss += loss.item() / grad_accum
        opt.step()
        sched.step()
        losses.append(step_loss)
    policy.eval()
    return losses


def train_velocity(
    updater: FlowUpdater,
    episodes: list[ExpertEpisode],
    n_steps: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    p_drop: float = 0.1,
) -> list[float]:
    """Flow matching (step 3) on the expert's (v_i, a_1..a_{i+1}, v_{i+1}) triplets; returns the loss per step."""
    if not episodes:
        raise ValueError("episodes: is empty")
    n_steps = positive_int(n_steps, "n_steps", maximum=10**6)
    batch_size = positive_int(batch_size, "batch_size", maximum=4096)
    lr = finite_number(lr, "lr", lo=0.0, hi=1.0, lo_open=True)
    p_drop = finite_number(p_drop, "p_drop", lo=0.0, hi=1.0)
    states, targets, traces = [], [], []
    for ep in episodes:
        for i in range(len(ep.moves)):
            states.append(ep.frames[i])
            targets.append(ep.frames[i + 1])
            traces.append(ep.moves[: i + 1])
    if not states:
        raise ValueError("episodes: hold no moves")
    state_all = updater.state_of(torch.stack(states))
    target_all = torch.stack(targets)
    opt = torch.optim.AdamW(updater.net.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: _lr_factor(i, n_steps))  # as for the policy
    updater.net.train()
    losses = []
    for _ in track(range(n_steps), f"train velocity net ({updater.space})"):
        idx = torch.randint(0, len(traces), (min(batch_size, len(traces)),), generator=generator)
        loss = flow_matching_loss(updater, state_all[idx], target_all[idx], [traces[int(i)] for i in idx],
                                  generator, p_drop)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    updater.net.eval()
    return losses


@dataclass
class Evaluation:
    """Success over test maps, and the per-hop agent-cell accuracy of the visual thoughts read."""

    success: float
    fell: float
    n_maps: int
    success_deep: float  # on maps with H >= deep_depth
    n_deep: int
    agent_acc: float | None  # hops >= 1 (generated thoughts) only
    agent_acc_per_hop: list[float]
    episodes: list[Episode]


def evaluate(reasoner: _Reasoner, maps: list[tuple[LakeMap, list[int]]], rng: np.random.Generator,
             deep_depth: int = 8, label: str = "") -> Evaluation:
    """Roll ``reasoner`` out on every map (depth + 2 hops at most) and aggregate."""
    if not maps:
        raise ValueError("maps: is empty")
    eps, deep = [], []
    for m, moves in track(maps, f"evaluate {label or reasoner.kind}"):
        ep = reasoner.solve(m, rng, len(moves))
        eps.append(ep)
        if len(moves) >= deep_depth:
            deep.append(ep.success)
    per_hop: dict[int, list[bool]] = defaultdict(list)
    for ep in eps:
        for hop, ok in enumerate(ep.agent_ok):
            if hop > 0 and ok is not None:
                per_hop[hop].append(ok)
    all_ok = [v for hop in per_hop for v in per_hop[hop]]
    return Evaluation(
        success=float(np.mean([e.success for e in eps])),
        fell=float(np.mean([e.fell for e in eps])),
        n_maps=len(eps),
        success_deep=float(np.mean(deep)) if deep else float("nan"),
        n_deep=len(deep),
        agent_acc=float(np.mean(all_ok)) if all_ok else None,
        agent_acc_per_hop=[float(np.mean(per_hop[h])) for h in sorted(per_hop)],
        episodes=eps,
    )


@dataclass(frozen=True)
class DenoiserCheck:
    """The sampler run with a perfect denoiser on every expert transition, against the exact workspace.

    ``max_abs_err``: largest pixel difference between the decoded thought and the exact workspace's decode of
    the true next render; ``agent_acc``: agent-cell accuracy of the decoded thoughts; ``exact_agent_acc``: that
    of the exact workspace itself (the ceiling: a 16-coefficient workspace blurs the dot on a few maps).
    """

    max_abs_err: float
    agent_acc: float
    exact_agent_acc: float
    n_transitions: int


@torch.no_grad()
def perfect_denoiser_decoding(updater: FlowUpdater, episodes: list[ExpertEpisode], generator: torch.Generator,
                              size: int = 8) -> DenoiserCheck:
    """Sample every (v_i -> v_{i+1}) of ``episodes`` with ``updater``'s settings and a :class:`PerfectDenoiser`.

    The denoiser returns the true X_1 (the DCT of v_{i+1}, or its pixels), so any error left is the sampler's:
    the schedule, the layout, the hidden coefficients, the number of steps, CFG.
    """
    if not episodes:
        raise ValueError("episodes: is empty")
    net = PerfectDenoiser(updater.net.block)
    up = dataclasses.replace(updater, net=net)  # the same sampler (class and settings), the perfect net
    prev = torch.cat([ep.frames[:-1] for ep in episodes])
    nxt = torch.cat([ep.frames[1:] for ep in episodes])
    cells = [c for ep in episodes for c in ep.cells[1:]]
    traces = [ep.moves[: i + 1] for ep in episodes for i in range(len(ep.moves))]
    b = net.block
    target = block_dct(nxt, b) if up.space == "spectral" else nxt
    net.set_target(target)
    x1 = up.sample(up.state_of(prev), traces, generator)
    assert isinstance(x1, torch.Tensor)
    got = up.decode(x1).cpu()
    exact = up.decode(target).cpu()
    agent = [agent_cell(g[0].numpy(), size) == c for g, c in zip(got, cells, strict=True)]
    ceiling = [agent_cell(e[0].numpy(), size) == c for e, c in zip(exact, cells, strict=True)]
    return DenoiserCheck(max_abs_err=float((got - exact).abs().max()), agent_acc=float(np.mean(agent)),
                         exact_agent_acc=float(np.mean(ceiling)), n_transitions=len(cells))
