"""DeepSight: a decoder that predicts the latents of five future BEV frames in one pass, then reasons and plans.

Sequence (brief Sec. 2, the official code's final order BEV -> think -> plan)::

    [15 vehicle tokens, ego token, CoT flag] <start_bev> T x (CLS + R registers + P patches) query tokens
    <end_bev> <think> ... </think> <wp>

* The BEV query tokens are distinct learned vocabulary rows (one per position, Pitfall 2), fed verbatim as
  inputs: all T frames' latents come out of ONE causal forward pass (variant "parallel"). ``vis_head``
  (Linear d -> d_enc, no bias) maps their last hidden states to the frozen encoder's latents.
* Loss (Eq. in Sec. 2): ``L = CE(think tokens) + L1(waypoints) + w_mse * MSE(vis_head(h_bev), z)`` with the
  register positions masked out of the MSE and every BEV position out of the CE (label -100).
* Inference: the BEV queries are appended to the prompt (never generated), the think tokens are generated
  greedily after ``<end_bev>``, then ``<wp>`` is appended and the waypoint head reads the plan.

Variants (brief Sec. 4): A no world model, B one frame (t+0.5 s), C five frames in parallel, D five frames
autoregressively (frame k+1's inputs are a projection of frame k's predicted latents, T sequential passes),
E = C with always-long CoT, F = C with adaptive CoT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from icml2026.core.errors import require_module

require_module("torch", "deepsight")
require_module("transformers", "deepsight")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from .data import DIRECTIONS, N_HIST, N_NEAR, REASONS, SPEEDS, Annotation  # noqa: E402

__all__ = [
    "VOCAB",
    "token_id",
    "think_tokens",
    "BEVEncoder",
    "PlannerConfig",
    "DeepSightPlanner",
    "Plan",
    "PlannerBatch",
    "VARIANTS",
    "constant_velocity_waypoints",
]

VARIANTS = ("A", "B", "C", "D", "E", "F")

_TEXT = [
    "<pad>",
    "<CoT_flag_True>",
    "<CoT_flag_False>",
    "<start_bev>",
    "<end_bev>",
    "<think>",
    "</think>",
    "<wp>",
    "easy",
    "Hard",
    "Simple",
    "None",
    *REASONS,
    *DIRECTIONS,
    *SPEEDS,
]
VOCAB: tuple[str, ...] = tuple(_TEXT)
_IDS = {t: i for i, t in enumerate(VOCAB)}
N_TEXT = len(VOCAB)
MAX_THINK = 6  # <think> Hard reason direction speed </think>


def token_id(tok: str) -> int:
    """The vocabulary id of a text token (BEV tokens are ids ``N_TEXT + k``)."""
    if tok not in _IDS:
        raise ValueError(f"tok: unknown token {tok!r}")
    return _IDS[tok]


def think_tokens(ann: Annotation | None, mode: Literal["adaptive", "long"]) -> list[str]:
    """The think segment of one frame (brief Sec. 2): adaptive: ``easy`` for simple, long for complex scenes;
    ``long``: the long form for every scene (variant E); ``ann`` None: ``None`` (unannotated frame)."""
    if ann is None:
        return ["<think>", "None", "</think>"]
    if mode == "adaptive" and not ann.complex:
        return ["<think>", "easy", "</think>"]
    return ["<think>", "Hard" if ann.complex else "Simple", ann.reason, ann.direction, ann.speed, "</think>"]


# ------------------------------------------------------------------------------------------ encoder
class BEVEncoder(nn.Module):
    """The frozen BEV encoder: a tiny DINOv3 ViT (transformers, from a config) pre-trained by masked
    image modelling on BEV rasters (plays DINOv3 ViT-L/16; see the card for the deviation).

    ``latents(x)`` returns the last hidden states without the register tokens: (B, 1 + P, d).
    """

    def __init__(
        self,
        image_size: int = 64,
        patch_size: int = 16,
        hidden: int = 64,
        layers: int = 2,
        heads: int = 4,
        registers: int = 2,
    ) -> None:
        super().__init__()
        from transformers import DINOv3ViTConfig, DINOv3ViTModel

        if image_size % patch_size:
            raise ValueError(f"patch_size: {patch_size} must divide image_size {image_size}")
        self.cfg = DINOv3ViTConfig(
            image_size=image_size,
            patch_size=patch_size,
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_register_tokens=registers,
            num_channels=3,
        )
        self.vit = DINOv3ViTModel(self.cfg)
        self.n_patches = (image_size // patch_size) ** 2
        self.registers = registers
        self.patch_size = patch_size
        # SimMIM-style pixel decoder for pre-training only
        self.decoder = nn.Linear(hidden, patch_size * patch_size * 3)

    @property
    def tokens_per_frame(self) -> int:
        return 1 + self.registers + self.n_patches

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        out: torch.Tensor = self.vit(pixel_values=x, bool_masked_pos=mask).last_hidden_state
        return out  # (B, 1 + R + P, d): CLS, registers, patches

    def latents(self, x: torch.Tensor) -> torch.Tensor:
        h = self.forward(x)
        return torch.cat([h[:, :1], h[:, 1 + self.registers :]], 1)  # registers masked out (Sec. 2)

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hgt, wid = x.shape
        p = self.patch_size
        x = x.reshape(b, c, hgt // p, p, wid // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (hgt // p) * (wid // p), p * p * c)

    def mim_loss(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked image modelling loss: MSE of the decoded pixels of the masked patches."""
        h = self.forward(x, mask)[:, 1 + self.registers :]
        pred = self.decoder(h)
        tgt = self.patchify(x)
        err = ((pred - tgt) ** 2).mean(-1)
        return (err * mask).sum() / mask.sum().clamp(min=1)


# ------------------------------------------------------------------------------------------ planner
#: index and scale of the ego speed in :func:`~icml2026.papers.deepsight.data.ego_state`
EGO_SPEED_INDEX, EGO_SPEED_SCALE = 8, 30.0


def constant_velocity_waypoints(ego: torch.Tensor) -> torch.Tensor:
    """The constant-velocity plan (B, 4, 2): the ego keeps its speed along its heading for t+0.5..t+2 s.

    ``ego`` is the (B, F) batch of ego-state features (``data.ego_state``, F > the speed's index 8)."""
    from icml2026.core.validate import BadArgument

    if not isinstance(ego, torch.Tensor) or ego.ndim != 2 or ego.shape[1] <= EGO_SPEED_INDEX:
        shape = tuple(ego.shape) if isinstance(ego, torch.Tensor) else type(ego).__name__
        raise BadArgument(f"ego: expected a (batch, features) tensor with more than {EGO_SPEED_INDEX} features "
                          f"(the speed is feature {EGO_SPEED_INDEX}), got {shape}")
    v = ego[:, EGO_SPEED_INDEX] * EGO_SPEED_SCALE
    t = torch.arange(1, 5, dtype=ego.dtype, device=ego.device) * 0.5
    return torch.stack([v[:, None] * t, torch.zeros_like(v[:, None] * t)], -1)


class _RowSlice(nn.Module):
    """Logits of a loaded LM's output layer restricted to our appended tokens (rows offset..offset+n)."""

    def __init__(self, head: nn.Linear, offset: int, n: int) -> None:
        super().__init__()
        self.head, self.offset, self.n = head, offset, n

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        w = self.head.weight[self.offset : self.offset + self.n]
        b = getattr(self.head, "bias", None)
        return nn.functional.linear(h, w, None if b is None else b[self.offset : self.offset + self.n])


@dataclass(frozen=True)
class PlannerConfig:
    """Sizes of the planner (paper: Qwen2.5-VL-3B; here a 4-layer Qwen2 decoder from a config)."""

    variant: str = "C"
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_frames: int = 5  # T (paper: 5); variant B uses 1
    patches: int = 16  # P per frame (paper: 256)
    registers: int = 2  # R per frame (paper: 4)
    d_latent: int = 64  # encoder width (paper: 1024)
    mse_weight: float = 2.0  # paper: 2
    wp_scale: float = 10.0  # metres per waypoint unit
    backbone_path: str | None = None  # a Hugging Face causal LM folder (Qwen2/Llama class); None: built here
    label: str = ""  # the arm's name in tables (e.g. "C0" for C with mse_weight 0); the variant when empty

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant: must be one of {VARIANTS}, got {self.variant!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model: {self.d_model} must be divisible by n_heads {self.n_heads}")

    @property
    def name(self) -> str:
        return self.label or self.variant

    @property
    def has_world_model(self) -> bool:
        return self.variant != "A"

    @property
    def frames(self) -> int:
        return 0 if self.variant == "A" else (1 if self.variant == "B" else self.n_frames)

    @property
    def tokens_per_frame(self) -> int:
        return 1 + self.registers + self.patches

    @property
    def n_bev(self) -> int:
        return self.frames * self.tokens_per_frame


@dataclass
class PlannerBatch:
    """Tensors of a batch. kin (B, 15, 28), ego (B, 14), flag (B,) bool, think (B, MAX_THINK) ids padded
    with <pad>, think_len (B,), wp (B, 4, 2) metres, latents (B, frames, 1 + P, d_latent) standardised."""

    kin: torch.Tensor
    ego: torch.Tensor
    flag: torch.Tensor
    think: torch.Tensor
    think_len: torch.Tensor
    wp: torch.Tensor
    latents: torch.Tensor | None = None

    def to(self, device: torch.device) -> PlannerBatch:
        """The batch on ``device`` (no copy when it is already there)."""
        lat = None if self.latents is None else self.latents.to(device)
        return PlannerBatch(
            self.kin.to(device),
            self.ego.to(device),
            self.flag.to(device),
            self.think.to(device),
            self.think_len.to(device),
            self.wp.to(device),
            lat,
        )


@dataclass
class Plan:
    """The planner's output for one observation: waypoints (4, 2) in metres (ego frame, t+0.5..t+2 s), the
    generated reasoning tokens (between <think> and </think>), the predicted latents (frames, 1+P, d) and
    the number of backbone forward passes used by the world-model branch."""

    waypoints: np.ndarray
    reasoning: list[str]
    latents: np.ndarray | None
    world_model_passes: int


@dataclass
class LossParts:
    total: torch.Tensor
    ce: torch.Tensor
    l1: torch.Tensor
    mse: torch.Tensor


class DeepSightPlanner(nn.Module):
    """The DeepSight planner (variants A-F), a ``transformers`` Qwen2 decoder built from a config.

    Parameters
    ----------
    cfg : PlannerConfig
    """

    def __init__(self, cfg: PlannerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self._offset = 0  # vocabulary id of our token 0 in the backbone's embedding
        self.lm_head: nn.Module
        if cfg.backbone_path:
            # a user's causal LM from a local folder: our tokens (flags, think words, the BEV queries) are new
            # rows appended to its vocabulary; the kinematics and ego state enter as projected inputs_embeds
            from icml2026.core.loaders import load_causal_lm

            lm = load_causal_lm(cfg.backbone_path, load_tokenizer=False, key="planner").model
            old = int(lm.get_input_embeddings().weight.shape[0])
            # mean_resizing=False: new rows drawn from the model's init, so the BEV queries are distinct
            lm.resize_token_embeddings(old + N_TEXT + max(cfg.n_bev, 1), mean_resizing=False)
            lm.train()
            self.lm = lm
            self.backbone = lm.get_decoder()
            self._offset = old
            self.lm_head = _RowSlice(lm.get_output_embeddings(), old, N_TEXT)
            d = int(lm.config.hidden_size)
        else:
            from transformers import Qwen2Config, Qwen2Model

            d = cfg.d_model
            qcfg = Qwen2Config(
                vocab_size=N_TEXT + max(cfg.n_bev, 1),
                hidden_size=d,
                intermediate_size=2 * d,
                num_hidden_layers=cfg.n_layers,
                num_attention_heads=cfg.n_heads,
                num_key_value_heads=cfg.n_heads,
                max_position_embeddings=1024,
                tie_word_embeddings=False,
            )
            qcfg._attn_implementation = "eager"
            self.backbone = Qwen2Model(qcfg)
            self.lm_head = nn.Linear(d, N_TEXT, bias=False)  # text tokens only: BEV tokens are never generated
        self.d_model = d
        # the n_bev BEV query tokens <bev_k> are distinct rows of the vocabulary embedding (Pitfall 2)
        self.kin_proj = nn.Linear(N_HIST * 7, d)
        self.ego_proj = nn.Linear(14, d)
        self.vis_head = nn.Linear(d, cfg.d_latent, bias=False)  # paper: Linear(d_llm -> 1024, bias=False)
        self.wp_head = nn.Linear(d, 8)
        # a linear path from the ego state to the waypoints (the kinematic part of the plan: acceleration,
        # lane offset), beside the decoder's residual at <wp>; both zero-initialised, so an untrained planner
        # plans at constant velocity and training improves on it (Deviation, issue 59)
        self.ego_wp = nn.Linear(14, 8)
        for lin in (self.wp_head, self.ego_wp):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        if cfg.variant == "D":  # autoregressive baseline: previous frame's predicted latents -> next inputs
            self.lat_in = nn.Linear(cfg.d_latent, d)
        self.register_buffer("lat_mean", torch.zeros(cfg.d_latent))
        self.register_buffer("lat_std", torch.ones(cfg.d_latent))

    # -- sequence pieces ---------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        """Where the planner's weights are (inputs given on the CPU are moved there)."""
        return self.kin_proj.weight.device

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.backbone.get_input_embeddings()(ids + self._offset)
        return out

    def query_embeddings(self) -> torch.Tensor:
        """The BEV query embeddings (n_bev, d): distinct learned rows of the vocabulary (Pitfall 2)."""
        return self._embed(self.bev_ids())

    def waypoints(self, h_wp: torch.Tensor, ego: torch.Tensor) -> torch.Tensor:
        """Waypoints (B, 4, 2) in metres from the hidden state at <wp>: a constant-velocity prior along the
        ego heading plus the head's residual (Deviation, issue 59: the paper's model writes the numbers)."""
        ego = ego.to(h_wp.device)
        res = (self.wp_head(h_wp) + self.ego_wp(ego)).reshape(-1, 4, 2) * self.cfg.wp_scale
        return constant_velocity_waypoints(ego) + res

    def _prompt(self, kin: torch.Tensor, ego: torch.Tensor, flag: torch.Tensor) -> torch.Tensor:
        b, dev = kin.shape[0], self.device
        kin, ego, flag = kin.to(dev), ego.to(dev), flag.to(dev)
        f = torch.where(flag, token_id("<CoT_flag_True>"), token_id("<CoT_flag_False>")).long()
        parts = [self.kin_proj(kin), self.ego_proj(ego)[:, None], self._embed(f)[:, None]]
        if self.cfg.has_world_model:
            parts.append(self._embed(torch.full((b, 1), token_id("<start_bev>"), dtype=torch.long, device=dev)))
        return torch.cat(parts, 1)

    @property
    def n_prompt(self) -> int:
        return N_NEAR + 2 + (1 if self.cfg.has_world_model else 0)

    def bev_ids(self) -> torch.Tensor:
        return torch.arange(N_TEXT, N_TEXT + self.cfg.n_bev, device=self.device)

    def bev_position_mask(self) -> torch.Tensor:
        """(n_bev,) True at the positions supervised by the MSE (CLS and patches; registers excluded)."""
        tpf = self.cfg.tokens_per_frame
        m = torch.ones(self.cfg.n_bev, dtype=torch.bool, device=self.device)
        for f in range(self.cfg.frames):
            m[f * tpf + 1 : f * tpf + 1 + self.cfg.registers] = False
        return m

    def _bev_inputs(self, b: int, prompt: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Embeddings of <start_bev>.. queries ..<end_bev> part after the prompt, and the passes used."""
        if not self.cfg.has_world_model:
            return prompt[:, :0], 0
        q = self._embed(self.bev_ids())[None].expand(b, -1, -1)
        if self.cfg.variant != "D":
            return q, 1
        tpf = self.cfg.tokens_per_frame
        preds: list[torch.Tensor] = []
        with torch.no_grad():  # frame k+1 is built from frame k's predicted latents, one pass per frame
            frames = [q[:, :tpf]]
            for k in range(1, self.cfg.frames):
                h = self.backbone(inputs_embeds=torch.cat([prompt, *frames], 1)).last_hidden_state
                preds.append(self.vis_head(h[:, -tpf:]))
                frames.append(self.lat_in(preds[-1]) + q[:, k * tpf : (k + 1) * tpf])
        # rebuilt with gradients into lat_in and the queries (the predicted latents are detached)
        frames = [q[:, :tpf]] + [self.lat_in(p) + q[:, (k + 1) * tpf : (k + 2) * tpf] for k, p in enumerate(preds)]
        return torch.cat(frames, 1), self.cfg.frames

    # -- training -----------------------------------------------------------------------------------
    def sequence(self, batch: PlannerBatch) -> tuple[torch.Tensor, torch.Tensor, int, int]:
        """Teacher-forced input embeddings (B, L, d), CE labels (B, L) (-100 off the think segment), the
        index of the first BEV query position and the number of world-model passes."""
        dev = self.device
        batch = batch.to(dev)
        b = batch.kin.shape[0]
        prompt = self._prompt(batch.kin, batch.ego, batch.flag)
        bev, passes = self._bev_inputs(b, prompt)
        think_ids = batch.think.clone()
        wp_id = token_id("<wp>")
        # <wp> right after </think>; pads after it (causal: they cannot influence the plan)
        seq_ids = torch.full((b, MAX_THINK + 1), token_id("<pad>"), dtype=torch.long, device=dev)
        seq_ids[:, :MAX_THINK] = think_ids
        seq_ids[torch.arange(b, device=dev), batch.think_len] = wp_id
        tail_parts = [self._embed(seq_ids)]
        if self.cfg.has_world_model:
            tail_parts.insert(0, self._embed(torch.full((b, 1), token_id("<end_bev>"), dtype=torch.long, device=dev)))
        emb = torch.cat([prompt, bev, *tail_parts], 1)
        labels = torch.full(emb.shape[:2], -100, dtype=torch.long, device=dev)
        start = prompt.shape[1] + bev.shape[1] + (1 if self.cfg.has_world_model else 0)
        # the logits at position i predict token i + 1: think content and </think> (not <think> itself)
        for j in range(1, MAX_THINK):
            valid = j < batch.think_len
            labels[:, start + j - 1] = torch.where(valid, think_ids[:, j], torch.tensor(-100, device=dev))
        return emb, labels, self.n_prompt, passes

    def losses(self, batch: PlannerBatch) -> LossParts:
        """CE on the think tokens + L1 on the waypoints + w_mse * MSE on the non-register BEV latents."""
        batch = batch.to(self.device)
        emb, labels, bev0, _ = self.sequence(batch)
        h = self.backbone(inputs_embeds=emb).last_hidden_state
        logits = self.lm_head(h)
        ce = (
            nn.functional.cross_entropy(logits[labels >= 0], labels[labels >= 0])
            if (labels >= 0).any()
            else h.sum() * 0
        )
        wp_pos = emb.shape[1] - (MAX_THINK + 1) + batch.think_len
        wp = self.waypoints(h[torch.arange(h.shape[0], device=h.device), wp_pos], batch.ego)
        l1 = ((wp - batch.wp) / self.cfg.wp_scale).abs().mean()
        mse = h.sum() * 0
        if self.cfg.has_world_model:
            if batch.latents is None:
                raise ValueError("batch.latents: required by variants with a world model")
            pred = self.vis_head(h[:, bev0 : bev0 + self.cfg.n_bev])[:, self.bev_position_mask()]
            mse = ((pred - batch.latents.reshape(pred.shape)) ** 2).mean()
        return LossParts(ce + l1 + self.cfg.mse_weight * mse, ce, l1, mse)

    def predict_latents(self, batch: PlannerBatch) -> torch.Tensor:
        """Predicted standardised latents (B, frames, 1 + P, d_latent) from the world-model branch."""
        if not self.cfg.has_world_model:
            raise ValueError("variant A has no world model")
        b = batch.kin.shape[0]
        prompt = self._prompt(batch.kin, batch.ego, batch.flag)
        bev, _ = self._bev_inputs(b, prompt)
        h = self.backbone(inputs_embeds=torch.cat([prompt, bev], 1)).last_hidden_state
        pred = self.vis_head(h[:, prompt.shape[1] :])[:, self.bev_position_mask()]
        return pred.reshape(b, self.cfg.frames, 1 + self.cfg.patches, self.cfg.d_latent)

    # -- inference ----------------------------------------------------------------------------------
    @torch.no_grad()
    def plan_batch(
        self, kin: torch.Tensor, ego: torch.Tensor, flag: torch.Tensor | None = None, max_think: int = MAX_THINK
    ) -> tuple[torch.Tensor, list[list[str]], torch.Tensor | None, int]:
        """Greedy decoding of think tokens after the BEV queries, then the waypoint head at <wp>.

        The prefix (prompt + BEV queries + <end_bev> + <think>) is ONE forward pass for variants B, C, E, F
        (T passes for D); later tokens reuse its KV cache. Returns waypoints (B, 4, 2) metres, the reasoning
        tokens, the predicted latents and the world-model passes.
        """
        from transformers import DynamicCache

        b, dev = kin.shape[0], self.device
        flag = torch.ones(b, dtype=torch.bool, device=dev) if flag is None else flag
        prompt = self._prompt(kin, ego, flag)
        bev, passes = self._bev_inputs(b, prompt)
        tail = [self._embed(torch.full((b, 1), token_id("<think>"), dtype=torch.long, device=dev))]
        if self.cfg.has_world_model:
            tail.insert(0, self._embed(torch.full((b, 1), token_id("<end_bev>"), dtype=torch.long, device=dev)))
        prefix = torch.cat([prompt, bev, *tail], 1)
        cache = DynamicCache()
        out = self.backbone(inputs_embeds=prefix, cache=cache, use_cache=True)
        h = out.last_hidden_state
        lat = None
        if self.cfg.has_world_model:
            lat = self.vis_head(h[:, prompt.shape[1] : prompt.shape[1] + self.cfg.n_bev])[:, self.bev_position_mask()]
            lat = lat.reshape(b, self.cfg.frames, 1 + self.cfg.patches, self.cfg.d_latent)
        last = h[:, -1]
        done = torch.zeros(b, dtype=torch.bool, device=dev)
        recorded = torch.zeros(b, dtype=torch.bool, device=dev)
        reasoning: list[list[str]] = [[] for _ in range(b)]
        end_id, wp_id = token_id("</think>"), token_id("<wp>")
        banned = [
            token_id(t)
            for t in ("<pad>", "<CoT_flag_True>", "<CoT_flag_False>", "<start_bev>", "<end_bev>", "<think>", "<wp>")
        ]
        wp_hidden = torch.zeros(b, self.d_model, device=dev)
        for step in range(max_think + 1):
            logits = self.lm_head(last)
            logits[:, banned] = -torch.inf  # structural tokens are appended, never generated
            # at most max_think - 2 content tokens: the segment is <think> ... </think> (<think> is in the prefix)
            nxt = torch.full((b,), end_id, dtype=torch.long, device=dev) if step >= max_think - 2 else logits.argmax(-1)
            nxt = torch.where(done, torch.tensor(wp_id, device=dev), nxt)  # after </think> comes <wp>
            for i in range(b):
                if not done[i] and int(nxt[i]) != end_id:
                    reasoning[i].append(VOCAB[int(nxt[i])])
            out = self.backbone(inputs_embeds=self._embed(nxt[:, None]), cache=cache, use_cache=True)
            last = out.last_hidden_state[:, -1]
            new = done & ~recorded  # these samples were fed <wp> at this step: read their plan state
            wp_hidden[new] = last[new]
            recorded |= new
            done |= nxt == end_id
            if bool(recorded.all()):
                break
        return self.waypoints(wp_hidden, ego), reasoning, lat, passes

    def plan(self, obs: dict[str, np.ndarray]) -> Plan:
        """Plan for one observation ``{"kin": (15, 28), "ego": (14,)}`` (CoT flag True)."""
        if not isinstance(obs, dict) or "kin" not in obs or "ego" not in obs:
            raise ValueError("obs: expected a dict with 'kin' (15, 28) and 'ego' (14,)")
        kin = torch.as_tensor(np.asarray(obs["kin"], np.float32)).reshape(1, N_NEAR, N_HIST * 7)
        ego = torch.as_tensor(np.asarray(obs["ego"], np.float32)).reshape(1, 14)
        if not (torch.isfinite(kin).all() and torch.isfinite(ego).all()):
            raise ValueError("obs: contains NaN or inf")
        self.eval()
        wp, reasoning, lat, passes = self.plan_batch(kin, ego)
        return Plan(wp[0].cpu().numpy(), reasoning[0], None if lat is None else lat[0].cpu().numpy(), passes)
