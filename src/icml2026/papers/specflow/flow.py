"""Flow matching in block-DCT space (method step 3), Euler sampling with classifier-free guidance (step 4, Alg. 1).

Step numbers refer to the five numbered steps of the method as the brief states them; the paper's own
equation numbers were not available to us, Alg. 1 is the paper's.

Time convention everywhere (the official code's): t = 0 is noise, t = 1 is data,
``X_t = (1 - t) X_noise + t X_data`` and the target velocity is ``X_data - X_noise``. The mask M(t) acts on
the velocity net's input only; the state is updated in every coefficient.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from icml2026.core.validate import finite_number, positive_int

from .spectral import Layout, Schedule, _layout_mask, block_dct, block_idct, keep_count

__all__ = [
    "guided_velocity",
    "euler_sample",
    "VelocityNet",
    "FlowSpace",
    "FlowUpdater",
    "flow_matching_loss",
    "truncate_coefficients",
    "seeded_init",
    "PerfectDenoiser",
]


def guided_velocity(u_uncond: torch.Tensor, u_cond: torch.Tensor, w: float) -> torch.Tensor:
    """Classifier-free guidance ``u = u(., t, null) + w (u(., t, c) - u(., t, null))`` (step 4).

    w = 1 gives the conditional velocity, w = 0 the unconditional one.
    """
    for name, u in (("u_uncond", u_uncond), ("u_cond", u_cond)):
        if not isinstance(u, torch.Tensor):
            raise ValueError(f"{name}: expected a torch.Tensor, got {type(u).__name__}")
    if u_uncond.shape != u_cond.shape:
        raise ValueError(f"u_cond: shape {tuple(u_cond.shape)} differs from u_uncond's {tuple(u_uncond.shape)}")
    w = finite_number(w, "w", lo=-100.0, hi=100.0)
    # (1 - w) u_null + w u_c: the same expression, exact at w = 0 and w = 1 in floating point
    return (1.0 - w) * u_uncond + w * u_cond


def euler_sample(
    velocity_fn: Callable[[torch.Tensor, float], torch.Tensor],
    x0: torch.Tensor,
    n_steps: int,
    mask_fn: Callable[[float], torch.Tensor] | None = None,
    return_path: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
    """Euler integration of dX/dt = u from t = 0 (noise) to t = 1 on the grid t_k = k / T (Alg. 1, l. 4-6).

    ``velocity_fn(M(t_k) * X, t_k)`` is evaluated on the masked state; the update ``X <- X + dt u`` touches
    every coefficient. ``mask_fn(t)`` returns a tensor broadcastable to ``x0`` (None: no mask).
    Returns X(1), and with ``return_path`` also the list [X(t_0), ..., X(t_T)].
    """
    if not callable(velocity_fn):
        raise ValueError("velocity_fn: must be callable")
    if not isinstance(x0, torch.Tensor) or not x0.is_floating_point():
        raise ValueError("x0: expected a floating-point torch.Tensor")
    if not bool(torch.isfinite(x0).all()):
        raise ValueError("x0: contains NaN or inf")
    n_steps = positive_int(n_steps, "n_steps", maximum=10_000)
    dt = 1.0 / n_steps
    x, path = x0, [x0]
    for k in range(n_steps):
        t = k * dt
        inp = x if mask_fn is None else mask_fn(t) * x
        u = velocity_fn(inp, t)
        if u.shape != x.shape:
            raise ValueError(f"velocity_fn: returned shape {tuple(u.shape)}, expected {tuple(x.shape)}")
        x = x + dt * u
        if return_path:
            path.append(x)
    return (x, path) if return_path else x


def _sinusoid(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / max(half - 1, 1))
    ang = t[:, None] * freqs[None] * 2 * math.pi
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


class _FiLMRes(nn.Module):
    def __init__(self, ch: int, emb: int):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)
        self.film = nn.Linear(emb, 2 * ch)

    def forward(self, h: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        scale, shift = self.film(e)[:, :, None, None].chunk(2, dim=1)
        z = torch.nn.functional.silu(self.conv1(h))
        z = z * (1 + scale) + shift
        return h + self.conv2(torch.nn.functional.silu(z))


class VelocityNet(nn.Module):
    """u_theta(M(t) X_t, t, c; X_prev): a small conv U-Net with FiLM on sinusoidal t and the text condition.

    Input: the (masked) state and the current workspace, each (B, 1, H, W), rearranged space-to-depth into
    (B, 2 b^2, H/b, W/b) so that one b x b block (its b^2 DCT coefficients, or its pixels in the pixel-space
    baseline) is one position: the same net, with the same size and FLOPs, serves both spaces.
    # Deviation: the brief's "conv U-Net on 1 x 32 x 32"; ours runs on the 4 x 4 block grid with the block's
    # 64 coefficients as channels (a 3 x 3 conv over DCT coefficients laid out as an image mixes unrelated
    # frequencies). Two resolutions (4 x 4 and 2 x 2) with one skip connection.

    The text condition c is the mean of the trace's action embeddings plus the last action's embedding;
    the null condition (CFG) is a learned vector.
    """

    def __init__(self, block: int = 8, width: int = 48, emb: int = 64, n_actions: int = 5):
        super().__init__()
        self.block, self.emb_dim = block, emb
        c_in = 2 * block * block
        self.inp = nn.Conv2d(c_in, width, 1)
        self.res1 = _FiLMRes(width, emb)
        self.down = nn.Conv2d(width, 3 * width // 2, 2, stride=2)
        self.mid = _FiLMRes(3 * width // 2, emb)
        self.up = nn.ConvTranspose2d(3 * width // 2, width, 2, stride=2)
        self.res2 = _FiLMRes(width, emb)
        self.out = nn.Conv2d(2 * width, block * block, 1)
        self.t_mlp = nn.Sequential(nn.Linear(32, emb), nn.SiLU(), nn.Linear(emb, emb))
        self.action_mean = nn.Embedding(n_actions, emb)
        self.action_last = nn.Embedding(n_actions, emb)
        self.null = nn.Parameter(torch.zeros(emb))

    def condition(self, traces: list[list[int]]) -> torch.Tensor:
        """c for each action trace (B, emb); an empty trace gives the null vector."""
        n = max((len(tr) for tr in traces), default=0)
        if n == 0:
            return self.null.expand(len(traces), -1)
        ids = torch.zeros(len(traces), n, dtype=torch.long)
        lengths = torch.tensor([len(tr) for tr in traces])
        for i, tr in enumerate(traces):
            ids[i, : len(tr)] = torch.as_tensor(tr, dtype=torch.long)
        ids, lengths = ids.to(self.null.device), lengths.to(self.null.device)  # built on the CPU, moved
        valid = (torch.arange(n, device=ids.device)[None] < lengths[:, None]).to(self.null.dtype)
        mean = (self.action_mean(ids) * valid[..., None]).sum(1) / lengths.clamp(min=1)[:, None]
        last = self.action_last(ids[torch.arange(len(traces), device=ids.device), (lengths - 1).clamp(min=0)])
        return torch.where((lengths > 0)[:, None], mean + last, self.null.expand(len(traces), -1))

    def forward(self, x_t: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None,
                state: torch.Tensor) -> torch.Tensor:
        """The data estimate X_1_hat (B, 1, H, W) from x_t, state (B, 1, H, W), t (B,), cond (B, emb) or None.

        A residual on the state (the next thought mostly repeats the current one); :meth:`FlowUpdater.velocity`
        turns it into the velocity u_theta.
        """
        b = self.block
        bsz = x_t.shape[0]
        h = torch.nn.functional.pixel_unshuffle(torch.cat([x_t, state], dim=1), b)
        e = self.t_mlp(_sinusoid(t.to(x_t.dtype), 32))
        e = e + (self.null.expand(bsz, -1) if cond is None else cond)
        h1 = self.res1(self.inp(h), e)
        h2 = self.mid(self.down(h1), e)
        h3 = self.res2(self.up(h2) + h1, e)
        return state + torch.nn.functional.pixel_shuffle(self.out(torch.cat([h3, h1], dim=1)), b)


class PerfectDenoiser(nn.Module):
    """A "network" that returns the true target X_1 whatever it is shown: the sampler's precondition.

    ``FlowUpdater(PerfectDenoiser(), ...)`` must decode every thought as the exact workspace does, for every
    schedule and layout: if it does not, the sampler (not the net) loses what the workspace holds. Set the
    target (B, 1, H, W) in the flow's space (block-DCT coefficients, or pixels) with :meth:`set_target` before
    each :meth:`FlowUpdater.sample`; CFG's doubled batch gets it repeated.
    """

    def __init__(self, block: int = 8, emb: int = 4):
        super().__init__()
        self.block, self.emb_dim = block, emb
        self.null = nn.Parameter(torch.zeros(emb), requires_grad=False)
        self.target: torch.Tensor | None = None

    def set_target(self, x1: torch.Tensor) -> PerfectDenoiser:
        self.target = x1
        return self

    def condition(self, traces: list[list[int]]) -> torch.Tensor:
        return self.null.expand(len(traces), -1)

    def forward(self, x_t: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None,
                state: torch.Tensor) -> torch.Tensor:
        if self.target is None:
            raise ValueError("target: PerfectDenoiser.set_target(...) must be called before sampling")
        reps = x_t.shape[0] // self.target.shape[0]
        if reps * self.target.shape[0] != x_t.shape[0]:
            raise ValueError(f"target: batch {self.target.shape[0]} does not divide the sampler's {x_t.shape[0]}")
        return self.target.to(x_t).repeat(reps, 1, 1, 1)


def seeded_init(factory: Callable[[], nn.Module], generator: torch.Generator) -> nn.Module:
    """Build ``factory()`` with torch's default initialisation drawn from ``generator``.

    The global RNG state is forked and restored, so library code leaves it untouched.
    """
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory()


FlowSpace = Literal["spectral", "pixel"]


def _masks_for(t: torch.Tensor, block: int, layout: str, schedule: str, min_keep: int, max_keep: int,
               fixed_keep: int, height: int, width: int) -> torch.Tensor:
    keeps = [keep_count(float(v), schedule, min_keep, max_keep, fixed_keep) for v in t.tolist()]  # type: ignore[arg-type]
    tiles = np.stack([np.tile(_layout_mask(block, layout, k), (height // block, width // block)) for k in keeps])
    return torch.from_numpy(tiles)[:, None]


@dataclass(frozen=True)
class FlowUpdater:
    """FlowUpdate(v_i, t_{<=i}) of Alg. 1: one visual thought sampled by Euler + CFG.

    ``space="spectral"`` (SpecFlow): state and output in block-DCT space, velocity input masked by M(t), the
    result stored as the ``ws_keep``-coefficient workspace. ``space="pixel"`` (MVoT baseline): the same net in
    pixel space, no DCT, no mask.
    """

    net: VelocityNet | PerfectDenoiser
    space: FlowSpace = "spectral"
    n_steps: int = 5  # paper: T = 5 (code default 8)
    w: float = 4.0  # paper's best guidance scale (code default 3)
    schedule: Schedule = "cosine"
    layout: Layout = "square"
    min_keep: int = 8
    max_keep: int = 64
    fixed_keep: int = 16
    ws_keep: int = 16

    def mask(self, t: float, height: int, width: int) -> torch.Tensor:
        b = self.net.block
        k = keep_count(t, self.schedule, self.min_keep, self.max_keep, self.fixed_keep)
        return torch.from_numpy(np.tile(_layout_mask(b, self.layout, k), (height // b, width // b)))

    def velocity(self, x_in: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None,
                 state: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
        """u_theta(M(t) X_t, t, c) from the net's data estimate X_1_hat (``x_in`` is the masked state).

        ``x`` is the sampler's full state X_t (``None``: ``x_in``, i.e. no coefficient is hidden).
        # Deviation: the net predicts X_1 and the velocity is ``(X_1_hat - X_t) / (1 - t)`` on EVERY coefficient,
        # X_t being the sampler's full state (the sampler knows it; the net sees only M(t) X_t). A coefficient the
        # mask hides therefore moves along the same straight path ``(1 - t) X_noise + t X_1_hat`` as in training,
        # and one shown late arrives carrying ``(1 - t)`` of its noise, as training shows it. The paper's net
        # outputs u directly; on hidden coefficients that u can only learn E[X_1 - X_noise | what it sees] =
        # X_1_hat, which leaves their full initial noise in X(1). Until 2026-12-07 we did that (velocity X_1_hat
        # on hidden coefficients): a perfect denoiser then decoded 0 % of the fixed square schedule's thoughts,
        # whose 4 x 4 square hides 3 of the workspace's 16 zig-zag coefficients at every step (issue 63).
        """
        x1 = self.net(x_in, t, cond, state)
        one_minus_t = (1.0 - t).clamp(min=1e-3)[:, None, None, None]
        return (x1 - (x_in if x is None else x)) / one_minus_t

    def state_of(self, img: torch.Tensor) -> torch.Tensor:
        """The net's state channel for renders (B, 1, H, W): workspace-truncated DCT, or pixels."""
        if self.space == "pixel":
            return img
        return truncate_coefficients(block_dct(img, self.net.block), self.ws_keep, self.net.block)

    @torch.no_grad()
    def sample(self, state: torch.Tensor, traces: list[list[int]], generator: torch.Generator,
               return_path: bool = False) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """X(1) from ``DCT(noise)`` (or pixel noise) given the state channel (B, 1, H, W) and the traces."""
        bsz, _, h, w = state.shape
        state = state.to(self.net.null.device)
        noise = torch.randn(state.shape, generator=generator, dtype=state.dtype).to(state.device)  # CPU draw
        x0 = block_dct(noise, self.net.block) if self.space == "spectral" else noise
        cond = self.net.condition(traces)

        def velocity(x: torch.Tensor, t: float) -> torch.Tensor:
            tt = torch.full((bsz,), t, dtype=x.dtype, device=x.device)
            # the net sees M(t_k) X (spectral; pixel: no mask); the velocity uses the full state X
            x_in = self.mask(t, h, w).to(x) * x if self.space == "spectral" else x
            if self.w == 1.0:
                return self.velocity(x_in, tt, cond, state, x)
            if self.w == 0.0:
                return self.velocity(x_in, tt, None, state, x)
            # one batched call for the conditional and the unconditional branch
            both = self.velocity(torch.cat([x_in, x_in]), torch.cat([tt, tt]),
                                 torch.cat([cond, self.net.null.expand(bsz, -1)]), torch.cat([state, state]),
                                 torch.cat([x, x]))
            return guided_velocity(both[bsz:], both[:bsz], self.w)

        # Euler on t_k = k / T (Alg. 1); the mask M(t_k) is applied to the net's input inside ``velocity``
        return euler_sample(velocity, x0, self.n_steps, None, return_path=return_path)

    def decode(self, x1: torch.Tensor) -> torch.Tensor:
        """Pixels of a sampled X(1): IDCT of the workspace-truncated coefficients (spectral) or X(1) itself."""
        if self.space == "pixel":
            return x1
        return block_idct(truncate_coefficients(x1, self.ws_keep, self.net.block), self.net.block)


def truncate_coefficients(X: torch.Tensor, ws_keep: int, block: int = 8) -> torch.Tensor:  # noqa: N803
    """Zero all but the first ``ws_keep`` zig-zag coefficients of every block (the workspace, as an image)."""
    mask = torch.from_numpy(_layout_mask(block, "zigzag", ws_keep).copy()).to(X)
    h, w = X.shape[-2:]
    return X * mask.repeat(h // block, w // block)


def flow_matching_loss(
    updater: FlowUpdater,
    state: torch.Tensor,
    target: torch.Tensor,
    traces: list[list[int]],
    generator: torch.Generator,
    p_drop: float = 0.1,
) -> torch.Tensor:
    """Flow-matching loss of step 3 on ``X_t = (1 - t) X_noise + t X_data``, c dropped with prob ``p_drop``.

    ``state`` is the net's state channel, ``target`` the next render's pixels (B, 1, H, W).
    """
    net = updater.net
    dev = net.null.device
    state, target = state.to(dev), target.to(dev)
    bsz, _, h, w = target.shape
    # every draw is made on the CPU with ``generator`` and moved (the same draws on every device)
    noise = torch.randn(target.shape, generator=generator, dtype=target.dtype).to(dev)
    if updater.space == "spectral":
        x_data, x_noise = block_dct(target, net.block), block_dct(noise, net.block)
    else:
        x_data, x_noise = target, noise
    t = torch.rand(bsz, generator=generator, dtype=target.dtype).to(dev)
    x_t = (1 - t)[:, None, None, None] * x_noise + t[:, None, None, None] * x_data
    if updater.space == "spectral":
        x_t = _masks_for(t, net.block, updater.layout, updater.schedule, updater.min_keep, updater.max_keep,
                         updater.fixed_keep, h, w).to(x_t) * x_t
    cond = net.condition(traces)
    drop = (torch.rand(bsz, generator=generator) < p_drop).to(dev)
    cond = torch.where(drop[:, None], net.null.expand(bsz, -1), cond)
    x1_hat = net(x_t, t, cond, state)
    # Deviation: the step-3 loss reweighted by (1 - t)^2 on the visible coefficients, i.e. the X_1-prediction loss
    # || X_1_hat - X_data ||^2 (the velocity of FlowUpdater.velocity is exact where X_1_hat is); unweighted,
    # the 1 / (1 - t)^2 factor of the reparameterised velocity makes training unstable near t = 1.
    return ((x1_hat - x_data) ** 2).mean()

