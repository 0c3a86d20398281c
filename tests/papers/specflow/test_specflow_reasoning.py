"""Criterion 4 (bounded workspace and KV cache), the environment and expert, determinism, bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.sparse import lil_matrix
from scipy.sparse.csgraph import shortest_path

from icml2026.papers.specflow import (
    FlowUpdater,
    FrozenLakeMaps,
    LakeMap,
    MVoTReasoner,
    SpecFlowReasoner,
    TextOnlyReasoner,
    VelocityNet,
    agent_cell,
    bfs_expert,
    build_policy,
    expert_renders,
    kv_bytes,
    render,
)
from icml2026.papers.specflow.flow import seeded_init
from icml2026.papers.specflow.training import expert_episodes, train_policy, train_velocity

DEPTH = 14  # the brief's largest reasoning depth


def _nets(tpt: int = 16):
    g = torch.Generator().manual_seed(0)
    net = seeded_init(lambda: VelocityNet(width=16, emb=16), g)
    pol_s = build_policy(16, 16, 1, 32, 2, 1024, g)
    pol_m = build_policy((32 // int(tpt ** 0.5)) ** 2, tpt, 1, 32, 2, 1024, g, visual_input="pixel")
    return net, pol_s, pol_m


def _deep_map() -> LakeMap:
    return LakeMap(np.zeros((8, 8), dtype=bool), (0, 0), (7, 7))


def test_specflow_workspace_and_visual_kv_are_constant_over_hops() -> None:
    net, pol_s, _ = _nets()
    r = SpecFlowReasoner(pol_s, FlowUpdater(net, "spectral", n_steps=2))
    ep = r.solve(_deep_map(), np.random.default_rng(0), forced=[1, 3] * (DEPTH // 2))
    assert len(ep.context) == DEPTH + 1
    assert len(set(ep.workspace_shape)) == 1 and ep.workspace_shape[0] == (1, 16, 16)
    assert len(set(ep.kv_bytes_visual)) == 1
    assert ep.kv_bytes_visual[0] == kv_bytes(1, 16, 32)
    # only the text trace grows: exactly one token per hop
    assert np.diff(ep.context).tolist() == [1] * DEPTH
    # the formula agrees with what the Hugging Face cache holds (float32 keys and values)
    assert ep.kv_bytes == ep.kv_bytes_measured


@pytest.mark.parametrize("tpt", [16, 64])
def test_mvot_context_grows_by_exactly_tokens_per_thought_plus_one(tpt: int) -> None:
    net, _, pol_m = _nets(tpt)
    r = MVoTReasoner(pol_m, FlowUpdater(net, "pixel", n_steps=2), tokens_per_thought=tpt)
    ep = r.solve(_deep_map(), np.random.default_rng(0), forced=[1, 3] * (DEPTH // 2))
    assert np.diff(ep.context).tolist() == [tpt + 1] * DEPTH
    assert np.diff(ep.kv_bytes_visual).tolist() == [kv_bytes(1, tpt, 32)] * DEPTH
    assert ep.kv_bytes == ep.kv_bytes_measured
    assert ep.context[0] == 1 + tpt


def test_text_only_grows_by_one_token_and_oracle_thoughts_are_exact() -> None:
    _, _, pol_m = _nets()
    ep = TextOnlyReasoner(pol_m).solve(_deep_map(), np.random.default_rng(0), forced=[1] * 5)
    assert np.diff(ep.context).tolist() == [1] * 5 and all(a is None for a in ep.agent_ok)
    ep = MVoTReasoner(pol_m, None).solve(_deep_map(), np.random.default_rng(0), forced=[1] * 5)
    assert all(ep.agent_ok)  # ground-truth renders always show the agent in its cell
    g = torch.Generator().manual_seed(1)
    ep = SpecFlowReasoner(build_policy(16, 16, 1, 32, 2, 256, g), None).solve(
        _deep_map(), np.random.default_rng(0), forced=[1] * 5)
    assert all(ep.agent_ok)  # the 16-coefficient workspace of a true render keeps the agent readable


def test_bfs_expert_is_a_shortest_hole_free_path() -> None:
    rng = np.random.default_rng(0)
    gen = FrozenLakeMaps()
    for m, moves in gen.batch(30, rng):
        n = m.size
        adj = lil_matrix((n * n, n * n))
        for r in range(n):
            for c in range(n):
                for dr, dc in ((1, 0), (0, 1)):
                    rr, cc = r + dr, c + dc
                    if rr < n and cc < n and not m.holes[r, c] and not m.holes[rr, cc]:
                        adj[r * n + c, rr * n + cc] = adj[rr * n + cc, r * n + c] = 1
        dist = shortest_path(adj.tocsr(), unweighted=True, indices=m.start[0] * n + m.start[1])
        assert len(moves) == int(dist[m.goal[0] * n + m.goal[1]])  # scipy cross-check of the length
        _, cells = expert_renders(m, moves)
        assert cells[-1] == m.goal and not any(m.holes[c] for c in cells)
        assert 2 <= len(moves) <= 14
    blocked = LakeMap(np.array([[0, 1], [1, 0]], dtype=bool), (0, 0), (1, 1))
    assert bfs_expert(blocked) is None
    # tie-break U, D, L, R: from (0, 0) to (1, 1) on an empty grid the expert goes D then R
    assert bfs_expert(LakeMap(np.zeros((3, 3), dtype=bool), (0, 0), (1, 1))) == [1, 3]


def test_render_values_and_agent_readout() -> None:
    m = LakeMap(np.eye(8, dtype=bool)[::-1], (0, 0), (7, 7))
    img = render(m, (2, 3), {(0, 0), (1, 0)})
    assert img.shape == (32, 32)
    assert img[0:4, 28:32].max() == 0.0  # hole on the anti-diagonal (0, 7)
    assert img[1, 1] == pytest.approx(0.3)  # trail
    assert img[28, 28] == pytest.approx(0.8) and img[29, 29] == pytest.approx(0.5)  # goal ring, ice inside
    assert img[9, 13] == 1.0  # agent dot at cell (2, 3)
    assert agent_cell(img) == (2, 3)
    assert agent_cell(render(m, (7, 7))) == (7, 7)  # agent on the goal ring


def test_rollouts_are_deterministic_for_a_seed() -> None:
    net, pol_s, _ = _nets()
    r = SpecFlowReasoner(pol_s, FlowUpdater(net, "spectral", n_steps=2))
    m, moves = FrozenLakeMaps().sample(np.random.default_rng(5))
    a = r.solve(m, np.random.default_rng(7), len(moves), keep_thoughts=True)
    b = r.solve(m, np.random.default_rng(7), len(moves), keep_thoughts=True)
    c = r.solve(m, np.random.default_rng(8), len(moves), keep_thoughts=True)
    assert a.actions == b.actions and all(np.array_equal(x, y) for x, y in zip(a.thoughts, b.thoughts, strict=True))
    assert len(a.thoughts) < 2 or not np.array_equal(a.thoughts[1], c.thoughts[1])  # new noise, new thought


def test_training_lowers_the_losses() -> None:
    g = torch.Generator().manual_seed(0)
    eps = expert_episodes(FrozenLakeMaps().batch(20, np.random.default_rng(0)))
    pol = build_policy(16, 16, 1, 32, 2, 256, g)
    losses = train_policy(pol, "specflow", eps, 150, 16, 3e-3, g)
    # last / first 20 steps measured 0.61-0.74 over torch seeds 0-2; an untrained policy stays near 1
    assert np.mean(losses[-20:]) < 0.85 * np.mean(losses[:20])
    up = FlowUpdater(seeded_init(lambda: VelocityNet(width=16, emb=16), g), "spectral")
    losses = train_velocity(up, eps, 60, 32, 3e-3, g)
    # flow matching with a masked input has an irreducible part (masked noise coefficients): a 10% drop
    assert np.mean(losses[-10:]) < 0.9 * np.mean(losses[:10])


def test_learning_rate_warms_up_then_decays_to_a_tenth() -> None:
    from icml2026.papers.specflow.training import _lr_factor

    n = 200
    f = [_lr_factor(i, n) for i in range(n + 1)]
    assert f[0] == pytest.approx(1 / 10) and f[9] == pytest.approx(1.0)  # 5% warm-up: 10 steps
    assert all(b <= a + 1e-12 for a, b in zip(f[9:], f[10:], strict=False))  # non-increasing after it
    assert f[n] == pytest.approx(0.1)


def test_a_policy_step_takes_batch_size_expert_actions_for_every_kind() -> None:
    """SpecFlow sequences hold one target, MVoT's whole episodes H + 1: a step draws batch // (H + 1) of them."""
    g = torch.Generator().manual_seed(0)
    eps = expert_episodes(FrozenLakeMaps(min_depth=7, max_depth=7).batch(12, np.random.default_rng(0)))
    seen: dict[str, list[int]] = {}
    for kind, pol in (("specflow", build_policy(16, 16, 1, 32, 2, 256, g)),
                      ("mvot", build_policy(64, 16, 1, 32, 2, 256, g, visual_input="pixel"))):
        rows: list[int] = []

        def hook(module, args, kwargs, out, rows=rows):
            rows.append(int(kwargs["inputs_embeds"].shape[0]))

        handle = pol.lm.register_forward_hook(hook, with_kwargs=True)
        train_policy(pol, kind, eps, 3, 32, 1e-3, g)
        handle.remove()
        seen[kind] = rows
    assert seen["specflow"] == [12, 12, 12]  # one action per sequence, capped by the 12 sequences of a hop
    assert seen["mvot"] == [32 // 8] * 3  # H = 7: 8 actions per episode


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: FrozenLakeMaps(size=1), "size"),
        (lambda: FrozenLakeMaps(hole_density=float("nan")), "hole_density"),
        (lambda: FrozenLakeMaps(hole_density=0.9), "hole_density"),
        (lambda: FrozenLakeMaps(min_depth=5, max_depth=3), "max_depth"),
        (lambda: FrozenLakeMaps().batch(0, np.random.default_rng(0)), "n_maps"),
        (lambda: agent_cell(np.zeros((31, 32))), "img"),
        (lambda: agent_cell(np.full((32, 32), np.nan)), "img"),
        (lambda: TextOnlyReasoner(_nets()[2]).solve("map", np.random.default_rng(0)), "map"),  # type: ignore[arg-type]
        (lambda: TextOnlyReasoner(_nets()[2]).solve(_deep_map(), np.random.default_rng(0), forced=[7]), "forced"),
        (lambda: TextOnlyReasoner(_nets()[2]).solve(_deep_map(), np.random.default_rng(0), 0), "depth"),
        (lambda: MVoTReasoner(_nets()[2], FlowUpdater(_nets()[0], "spectral")), "updater"),
        (lambda: SpecFlowReasoner(_nets()[1], FlowUpdater(_nets()[0], "pixel")), "updater"),
        (lambda: train_policy(_nets()[1], "specflow", [], 1, 1, 0.1, torch.Generator()), "episodes"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


@pytest.mark.parametrize("kind", ["specflow", "mvot", "text"])
def test_cached_rollout_equals_the_teacher_forced_forward(kind: str) -> None:
    # the KV-cached, workspace-cropping inference path sees exactly the context the policy was trained on
    from icml2026.papers.specflow.training import _sequences

    g = torch.Generator().manual_seed(0)
    m, moves = FrozenLakeMaps().sample(np.random.default_rng(3))
    ep = expert_episodes([(m, moves)])[0]
    pol = build_policy(16 if kind == "specflow" else 64, 16, 2, 32, 2, 512, g,
                       visual_input="dct" if kind == "specflow" else "pixel").eval()
    full = []
    with torch.no_grad():
        for key, ids, feats, tgt in _sequences(kind, ep, 16, 16, 8):
            logits = pol.head(pol(pol.embed(torch.tensor(key[0]), torch.tensor([ids]), feats[None],
                                            torch.tensor(key[1]))))[0]
            full += [logits[j] for j, t in enumerate(tgt) if t != -100]
    r = {"specflow": lambda: SpecFlowReasoner(pol, None), "mvot": lambda: MVoTReasoner(pol, None),
         "text": lambda: TextOnlyReasoner(pol)}[kind]()
    out = r.solve(m, np.random.default_rng(0), forced=moves)
    assert len(out.logits) == len(full) == len(moves) + 1
    err = max(float((torch.tensor(a) - b).abs().max()) for a, b in zip(out.logits, full, strict=True))
    assert err < 1e-5  # float32 summation order only (a mis-placed or stale cache entry gives O(0.1))


def test_both_kinds_of_policy_read_the_same_normalised_image() -> None:
    # SpecFlow's workspace shifted as the policy does is the block DCT of 4 (v - 0.5); MVoT's patches are the
    # patches of 4 (v - 0.5). Fails for a wrong DC constant (e.g. 0.5 instead of 0.5 * 8), a missing shift or scale.
    from icml2026.papers.specflow.reasoners import VIS, patches
    from icml2026.papers.specflow.spectral import block_dct, to_workspace

    g = torch.Generator().manual_seed(0)
    v = torch.rand(3, 1, 32, 32, generator=g)
    pol_s = build_policy(16, 16, 1, 16, 2, 64, g)
    pol_m = build_policy(64, 16, 1, 16, 2, 64, g, visual_input="pixel")
    def visual_part(pol, feats):  # what embed adds for visual tokens, less the slot embedding
        n = feats.shape[1]
        out = pol.embed(torch.full((n,), VIS), torch.zeros(feats.shape[0], n, dtype=torch.long), feats, torch.arange(n))
        return out - pol.slot[torch.arange(n)][None]

    with torch.no_grad():
        got_s = visual_part(pol_s, to_workspace(block_dct(v), 16)[:, 0])
        want_s = pol_s.visual(to_workspace(block_dct(4 * (v - 0.5)), 16)[:, 0])
        got_m = visual_part(pol_m, patches(v, 16))
        want_m = pol_m.visual(patches(4 * (v - 0.5), 16))
    assert float((got_s - want_s).abs().max()) < 1e-4
    assert float((got_m - want_m).abs().max()) < 1e-4


def test_a_reasoner_refuses_a_policy_built_for_the_other_kind_of_thought() -> None:
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="visual_input"):
        SpecFlowReasoner(build_policy(16, 16, 1, 16, 2, 64, g, visual_input="pixel"), None)
    with pytest.raises(ValueError, match="visual_input"):
        MVoTReasoner(build_policy(64, 16, 1, 16, 2, 64, g), None)
    with pytest.raises(ValueError, match="visual_input"):
        TextOnlyReasoner(build_policy(64, 16, 1, 16, 2, 64, g))
    with pytest.raises(ValueError, match="visual_input"):
        build_policy(64, 16, 1, 16, 2, 64, g, visual_input="rgb")  # type: ignore[arg-type]
