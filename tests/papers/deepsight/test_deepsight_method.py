"""Planner structure (criteria 1-2): one pass for all latents, masks of the MSE and CE, generation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml2026.papers.deepsight import PlannerBatch, PlannerConfig, build_planner, count_backbone_calls
from icml2026.papers.deepsight.method import MAX_THINK, N_TEXT, token_id


def _batch(b: int, cfg: PlannerConfig, seed: int = 0, long: bool = False) -> PlannerBatch:
    g = torch.Generator().manual_seed(seed)
    think = torch.full((b, MAX_THINK), token_id("<pad>"), dtype=torch.long)
    toks = (
        ["<think>", "Hard", "stalled-ahead", "change-left", "decelerate", "</think>"]
        if long
        else ["<think>", "easy", "</think>"]
    )
    think[:, : len(toks)] = torch.tensor([token_id(t) for t in toks])
    lat = torch.randn(b, cfg.frames, 1 + cfg.patches, cfg.d_latent, generator=g) if cfg.frames else None
    return PlannerBatch(
        torch.randn(b, 15, 28, generator=g),
        torch.randn(b, 14, generator=g),
        torch.ones(b, dtype=torch.bool),
        think,
        torch.full((b,), len(toks)),
        torch.randn(b, 4, 2, generator=g),
        lat,
    )


def _planner(variant: str) -> torch.nn.Module:
    return build_planner(PlannerConfig(variant=variant, d_model=32, n_layers=1, n_heads=4), np.random.default_rng(0))


def test_world_model_is_one_forward_pass_and_d_needs_t() -> None:
    c, d = _planner("C"), _planner("D")
    b = _batch(3, c.cfg)
    assert count_backbone_calls(c, lambda: c.predict_latents(b)) == 1
    assert count_backbone_calls(c, lambda: c.losses(b)) == 1  # training: one teacher-forced pass
    assert count_backbone_calls(d, lambda: d.predict_latents(b)) == 5  # the sequential baseline
    lat = c.predict_latents(b)
    assert lat.shape == (3, 5, 17, 64)  # T x (P + 1) targets, registers removed


def test_registers_are_out_of_the_mse_and_bev_out_of_the_ce() -> None:
    c = _planner("C")
    b = _batch(2, c.cfg)
    store = {}

    def keep(_m, _i, out):  # noqa: ANN001
        out.last_hidden_state.retain_grad()
        store["h"] = out.last_hidden_state

    handle = c.backbone.register_forward_hook(keep)
    parts = c.losses(b)
    handle.remove()
    torch.testing.assert_close(parts.total, parts.ce + parts.l1 + 2.0 * parts.mse)
    h = store["h"]
    bev0, n_bev, tpf = c.n_prompt, c.cfg.n_bev, c.cfg.tokens_per_frame
    pos = torch.arange(n_bev)
    reg = (pos % tpf >= 1) & (pos % tpf <= c.cfg.registers)
    parts.mse.backward(retain_graph=True)
    g = h.grad[:, bev0 : bev0 + n_bev].abs().sum(-1)
    assert torch.all(g[:, reg] == 0)  # register outputs get no MSE gradient
    assert torch.all(g[:, ~reg] > 0)  # CLS and patches do (the mask is not empty)
    h.grad = None
    parts.ce.backward()
    assert torch.all(h.grad[:, bev0 : bev0 + n_bev] == 0)  # no CE at BEV positions
    _, labels, start, _ = c.sequence(b)
    assert torch.all(labels[:, start : start + n_bev] == -100)
    assert (labels >= 0).sum() == 2 * 2  # 'easy' and '</think>' per sample


def test_plan_does_not_see_future_bev() -> None:
    # Pitfall 3: the only path from the future BEV is the MSE gradient; the plan and CE ignore the targets
    c = _planner("C")
    b1, b2 = _batch(2, c.cfg, 0), _batch(2, c.cfg, 0)
    b2.latents = b2.latents + 100.0
    p1, p2 = c.losses(b1), c.losses(b2)
    torch.testing.assert_close(p1.l1, p2.l1)
    torch.testing.assert_close(p1.ce, p2.ce)
    assert not torch.isclose(p1.mse, p2.mse)


def test_bev_queries_are_distinct_vocabulary_rows() -> None:
    c = _planner("C")
    q = c.backbone.embed_tokens.weight[N_TEXT : N_TEXT + c.cfg.n_bev]
    assert torch.unique(q.detach(), dim=0).shape[0] == c.cfg.n_bev


def test_generation_starts_after_end_bev_and_never_emits_bev_tokens() -> None:
    c = _planner("C")
    seen = []

    def log_len(_m, args, kwargs):  # noqa: ANN001
        seen.append(kwargs["inputs_embeds"].shape[1])

    handle = c.backbone.register_forward_pre_hook(log_len, with_kwargs=True)
    plan = c.plan({"kin": np.zeros((15, 28)), "ego": np.zeros(14)})
    handle.remove()
    # the prefix is prompt + <start_bev> + queries + <end_bev> + <think>; then one token per step
    assert seen[0] == c.n_prompt + c.cfg.n_bev + 2 and all(n == 1 for n in seen[1:])
    assert plan.world_model_passes == 1 and plan.waypoints.shape == (4, 2)
    assert all(not t.startswith("<") for t in plan.reasoning)
    assert len(plan.reasoning) <= MAX_THINK - 2


def test_trained_planner_learns_the_think_format() -> None:
    # a few steps of CE on one fixed long think segment: greedy decoding reproduces it
    c = _planner("F")
    b = _batch(4, c.cfg, long=True)
    opt = torch.optim.Adam(c.parameters(), lr=3e-3)
    for _ in range(60):
        opt.zero_grad()
        c.losses(b).ce.backward()
        opt.step()
    _, reasoning, _, _ = c.plan_batch(b.kin, b.ego)
    assert reasoning[0] == ["Hard", "stalled-ahead", "change-left", "decelerate"]


def test_bad_configs_and_obs_are_refused() -> None:
    with pytest.raises(ValueError, match="variant"):
        PlannerConfig(variant="Z")
    with pytest.raises(ValueError, match="d_model"):
        PlannerConfig(d_model=30, n_heads=4)
    c = _planner("A")
    with pytest.raises(ValueError, match="obs"):
        c.plan({"kin": np.zeros((15, 28))})
    with pytest.raises(ValueError, match="obs"):
        c.plan({"kin": np.full((15, 28), np.nan), "ego": np.zeros(14)})
    with pytest.raises(ValueError, match="variant A"):
        c.predict_latents(_batch(1, c.cfg))


def test_encoder_pretraining_depends_on_its_stream_alone() -> None:
    """DINOv3's RoPE rescaling draws from torch's global generator in train mode. Would fail if pre-training
    left those draws to the global generator: the encoder would then follow what ran before in the process."""
    from icml2026.papers.deepsight.training import pretrain_encoder

    frames = np.random.default_rng(0).integers(0, 255, (16, 3, 32, 32), dtype=np.uint8)

    def weights(burn: int) -> torch.Tensor:
        torch.randn(burn)  # another history of the global generator
        enc = pretrain_encoder(frames, np.random.default_rng(3), n_steps=3, batch=4, patch_size=16)
        return torch.cat([p.detach().flatten() for p in enc.parameters()])

    assert torch.equal(weights(0), weights(11))


@pytest.mark.slow
def test_sub_seeds_give_the_same_numbers_in_any_process() -> None:
    """world_model with workers = 2 runs its sub-seeds in fresh processes; the numbers must equal the
    in-process run's (fails when anything draws from process-global state: measured before the encoder fix)."""
    import dataclasses

    from icml2026.core import make_rng
    from icml2026.core.registry import get_experiment
    from icml2026.papers.deepsight import experiments as exps

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' thread count, so even the float order is the same
    try:
        base = dataclasses.replace(get_experiment("deepsight.world_model").config("smoke"), n_seeds=2)
        one = exps.world_model(dataclasses.replace(base, workers=1), make_rng(4))
        two = exps.world_model(dataclasses.replace(base, workers=2), make_rng(4))
    finally:
        torch.set_num_threads(threads)
    assert one.metrics == two.metrics and one.tables == two.tables


def test_workers_refused_off_the_cpu() -> None:
    from icml2026.papers.deepsight.experiments import DriveConfig

    with pytest.raises(ValueError, match="CPU only"):
        DriveConfig(workers=2, device="cuda")
