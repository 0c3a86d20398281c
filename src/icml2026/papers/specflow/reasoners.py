"""The policy ("LLM") and SpecFlow's reasoning loop (paper Alg. 1).

Alg. 1: input image v_0 and the query; for hop i = 0..H-1, ``v_{i+1} = FlowUpdate(v_i, t_{<=i})`` overwrites the
one visual workspace, then ``t_{i+1} = Policy(v_{i+1}, t_{<=i})`` appends a text thought (here: an action
token). Only the current workspace and the text trace are kept.

The policy is a Hugging Face Llama built from a config (causal, rotary positions, KV-cached through
``DynamicCache``). Its
context is ``[task | a_1 .. a_i (append-only, cached) | visual tokens]``. SpecFlow's 16 workspace tokens
sit last and are recomputed each hop (the cache is cropped back to the text after each read), so its
visual KV footprint is constant; the MVoT baseline appends its thoughts instead (see baselines.py).
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from icml2026.core.rng import torch_generator
from icml2026.core.validate import positive_int

from .data import STOP, LakeMap, agent_cell, render, step
from .flow import FlowUpdater, seeded_init
from .spectral import block_dct, block_idct, from_workspace, to_workspace

__all__ = ["Policy", "Episode", "SpecFlowReasoner", "kv_bytes", "cache_bytes", "BOS", "ACT", "VIS", "patches"]

BOS, ACT, VIS = 0, 1, 2  # token kinds: task token, action (text) token, visual token
#: the words whose embeddings a real backbone's action tokens start from (U, D, L, R, STOP)
ACTION_WORDS = ("up", "down", "left", "right", "stop")
#: the task, whose mean word embedding a real backbone's task token starts from
TASK_PROMPT = "walk on the frozen lake to the goal without falling into a hole"
VisualInput = Literal["dct", "pixel"]


def kv_bytes(n_layers: int, ctx: int, d_model: int, bytes_per_value: int = 4) -> int:
    """KV-cache bytes of a context of ``ctx`` tokens: ``layers x 2 x ctx x d x 4`` (brief, Metrics)."""
    return n_layers * 2 * ctx * d_model * bytes_per_value


def cache_bytes(cache: object) -> int:
    """Bytes actually held by the keys and values of a Hugging Face cache (cross-check of :func:`kv_bytes`)."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if isinstance(tensor, torch.Tensor):
                total += tensor.numel() * tensor.element_size()
    return total


def patches(img: torch.Tensor, tokens_per_thought: int) -> torch.Tensor:
    """Pixel-patch tokens of a render (B, 1, H, W) -> (B, tokens_per_thought, patch pixels), row-major."""
    h = img.shape[-1]
    side = int(round(tokens_per_thought ** 0.5))
    if side * side != tokens_per_thought or h % side:
        raise ValueError(f"tokens_per_thought: must be a square dividing the image side {h}, got {tokens_per_thought}")
    p = h // side
    return torch.nn.functional.unfold(img, kernel_size=p, stride=p).transpose(1, 2)


class Policy(nn.Module):
    """Causal transformer policy over [task | text | visual] tokens, predicting U, D, L, R or STOP.

    A ``transformers.LlamaModel`` built from a config (no weights are loaded) on ``inputs_embeds``: the task
    token is a learned vector, actions are embedded, and visual tokens (``visual_dim`` numbers each) pass a
    linear map plus a learned per-slot embedding (``n_slots`` slots: block or patch index). The MLP is
    ``4 * d_model`` wide and every head keeps its own keys and values (no grouped-query attention), so the KV
    cache is ``layers x 2 x ctx x d_model`` numbers, the brief's formula.

    Rotary positions, as in the paper's Qwen3-VL backbone (until 2026-12-03 the policy was a GPT-2 with learned
    absolute positions). The MVoT policy's failure to learn, first put down to the absolute positions, came from
    the raw pixel inputs (see ``visual_input``): on raw pixels it stayed at 1.14-1.16 nats as a GPT-2 and as a
    Llama alike.

    ``visual_input`` says what the visual features are, so that the policy reads every kind of thought as the
    same normalised image ``4 (v - 0.5)`` (values in [-2, 2], as image encoders normalise their pixels):
    ``"dct"`` (SpecFlow: zig-zag coefficients of ``block`` x ``block`` blocks of v; the DC coefficient of a
    constant 0.5 block is ``0.5 block``) or ``"pixel"`` (MVoT, text-only: pixel patches of v). Without it the
    pixel policies did not learn to read a thought at all: on raw [0, 1] patches the MVoT policy's teacher-forced
    loss was 1.26 nats at hop 0 after 3000 steps (text-only level), against 0.64 on centred ones.
    """

    visual_shift: torch.Tensor  # a buffer (registered in __init__)

    def __init__(self, visual_dim: int, n_slots: int, n_layers: int = 4, d_model: int = 192, n_heads: int = 4,
                 max_ctx: int = 1024, n_actions: int = 5, attn_implementation: str = "sdpa",
                 visual_input: VisualInput = "dct", block: int = 8, backbone: nn.Module | None = None,
                 tokenizer: object | None = None):
        super().__init__()
        positive_int(visual_dim, "visual_dim")
        if visual_input not in ("dct", "pixel"):
            raise ValueError(f"visual_input: must be 'dct' or 'pixel', got {visual_input!r}")
        # Deviation: the brief's "linear embedding of the kept coefficients" sees 4 (v - 0.5) rather than v. The
        # function class is the same (an affine map of an affine map); only the start of training differs.
        shift = torch.full((visual_dim,), 0.5)
        if visual_input == "dct":
            shift = torch.zeros(visual_dim)
            shift[0] = 0.5 * positive_int(block, "block", maximum=64)  # DC of a constant 0.5 block (orthonormal)
        self.visual_input = visual_input
        self.register_buffer("visual_shift", shift, persistent=False)
        if backbone is None:
            from transformers import LlamaConfig, LlamaModel

            cfg = LlamaConfig(vocab_size=1, hidden_size=d_model, intermediate_size=4 * d_model,
                              num_hidden_layers=n_layers, num_attention_heads=n_heads, num_key_value_heads=n_heads,
                              max_position_embeddings=max_ctx, attention_dropout=0.0, bos_token_id=None,
                              eos_token_id=None, pad_token_id=None)
            # "eager" for FLOP counting: FlopCounterMode does not see the fused CPU SDPA kernel's matmuls
            cfg._attn_implementation = attn_implementation
            self.lm: nn.Module = LlamaModel(cfg)
        else:
            # a user's causal LM (icml2026.core.loaders.load_causal_lm): its decoder reads our input embeddings
            self.lm = getattr(backbone, "base_model", backbone)
            bcfg: Any = backbone.config
            d_model, n_layers = int(bcfg.hidden_size), int(bcfg.num_hidden_layers)
            max_ctx = int(getattr(bcfg, "max_position_embeddings", max_ctx) or max_ctx)
        self.n_layers, self.d_model, self.max_ctx = n_layers, d_model, max_ctx
        self.bos = nn.Parameter(torch.randn(d_model) * 0.02)
        self.action = nn.Embedding(n_actions, d_model)
        self.visual = nn.Linear(visual_dim, d_model)
        self.slot = nn.Parameter(torch.randn(n_slots, d_model) * 0.02)
        self.head = nn.Linear(d_model, n_actions)
        if backbone is not None:
            self._init_from_words(backbone, tokenizer, n_actions)

    @torch.no_grad()
    def _init_from_words(self, backbone: nn.Module, tokenizer: object | None, n_actions: int) -> None:
        """Text tokens of a real backbone: the task token and the actions start as the LM's own word embeddings.

        The task token is the mean embedding of :data:`TASK_PROMPT`, each action that of its word (``up``,
        ``down``, ``left``, ``right``, ``stop``), so the action trace enters as text the LM already reads.
        # Deviation: one task token (a prompt's mean embedding) and a 5-way linear head, not a tokenised prompt
        # and generated text: the cached-text / workspace layout of Alg. 1 stays that of the built policy.
        """
        if tokenizer is None or not callable(tokenizer):
            raise ValueError("model: a backbone policy needs the model's tokenizer (a folder with tokenizer files)")
        table = backbone.get_input_embeddings().weight  # type: ignore[operator]

        def mean_embedding(text: str) -> torch.Tensor:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
            if not ids:
                raise ValueError(f"model: the tokenizer gives no token for {text!r}")
            return table[torch.as_tensor(ids, device=table.device)].float().mean(0).cpu()

        self.bos.copy_(mean_embedding(TASK_PROMPT))
        for a, word in enumerate(ACTION_WORDS[:n_actions]):
            self.action.weight[a].copy_(mean_embedding(word))

    def embed(self, kinds: torch.Tensor, ids: torch.Tensor, feats: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """Token embeddings (B, L, d) from kinds (L,), action ids (B, L), visual feats (B, L, f), slots (L,).

        The inputs are moved to the policy's device (they are built on the CPU).
        """
        dev = self.bos.device
        kinds, ids, feats, slots = kinds.to(dev), ids.to(dev), feats.to(dev), slots.to(dev)
        bos = self.bos.expand(*ids.shape, -1)
        act = self.action(ids)
        vis = self.visual(4.0 * (feats - self.visual_shift)) + self.slot[slots][None]
        k = kinds[None, :, None]
        return torch.where(k == BOS, bos, torch.where(k == ACT, act, vis))

    def forward(self, embeds: torch.Tensor, cache: object | None = None, start: int = 0) -> torch.Tensor:
        """Last hidden states (B, L, d) of ``embeds`` placed at positions start.. (appending to ``cache``).

        A backbone held in another dtype (bfloat16) gets its input cast and gives float32 hidden states back.
        """
        lm_dtype = next(self.lm.parameters()).dtype
        pos = torch.arange(start, start + embeds.shape[1], device=embeds.device)[None]
        out = self.lm(inputs_embeds=embeds.to(lm_dtype), cache=cache, position_ids=pos, use_cache=cache is not None)
        return out.last_hidden_state.to(embeds.dtype)


@dataclass
class Episode:
    """One rollout: the actions taken and what each hop cost.

    Per-hop lists are indexed by hop (hop 0 reads v_0). ``context`` is the policy context when it chose the
    hop's action, ``kv_bytes`` its KV cache by the brief's formula and ``kv_bytes_visual`` the part held by
    visual tokens; ``kv_bytes_measured`` what the Hugging Face cache actually held. ``agent_ok`` says whether
    the visual thought read at that hop shows the agent in its true cell (None without visual thoughts).
    """

    actions: list[int] = field(default_factory=list)
    success: bool = False
    fell: bool = False
    context: list[int] = field(default_factory=list)
    kv_bytes: list[int] = field(default_factory=list)
    kv_bytes_visual: list[int] = field(default_factory=list)
    kv_bytes_measured: list[int] = field(default_factory=list)
    workspace_shape: list[tuple[int, ...]] = field(default_factory=list)
    agent_ok: list[bool | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    flops_policy: list[int] = field(default_factory=list)
    flops_flow: list[int] = field(default_factory=list)
    thoughts: list[np.ndarray] = field(default_factory=list)
    logits: list[list[float]] = field(default_factory=list)  # the policy's action logits at each hop


class _FlopMeter:
    """FLOPs of a code block through ``torch.utils.flop_counter.FlopCounterMode`` (or nothing when off)."""

    def __init__(self, on: bool):
        self.on, self.flops = on, 0
        self._mode: FlopCounterMode | None = None

    def __enter__(self) -> _FlopMeter:
        if self.on:
            self._mode = FlopCounterMode(display=False)
            self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mode is not None:
            self._mode.__exit__(*exc)
            self.flops = int(self._mode.get_total_flops())


class _Reasoner(abc.ABC):
    """Shared rollout: policy reads, acts in the true environment, the visual thought is updated."""

    kind: str = ""
    n_visual_tokens: int = 0

    #: the kind of visual features this reasoner feeds the policy (``Policy.visual_input``)
    visual_input: VisualInput = "pixel"

    def __init__(self, policy: Policy, max_extra_hops: int = 2):
        if policy.visual_input != self.visual_input:
            raise ValueError(f"policy: {type(self).__name__} reads visual_input={self.visual_input!r} features; got a "
                             f"policy built with visual_input={policy.visual_input!r} "
                             f"(build_policy(..., visual_input={self.visual_input!r}))")
        self.policy = policy.eval()
        self.max_extra_hops = positive_int(max_extra_hops, "max_extra_hops", minimum=0, maximum=100)

    # subclasses: first tokens, tokens after a move, and the visual thought
    @abc.abstractmethod
    def _start(self, img: torch.Tensor) -> tuple[torch.Tensor, object]:
        ...

    @abc.abstractmethod
    def _after_move(self, action: int, thought: object) -> torch.Tensor:
        ...

    @abc.abstractmethod
    def _think(self, m: LakeMap, pos: tuple[int, int], visited: set, thought: object, trace: list[int],
               g: torch.Generator) -> object:
        ...

    @abc.abstractmethod
    def _visual_in_context(self, n_hops: int) -> int:
        ...

    @abc.abstractmethod
    def _decode(self, thought: object) -> np.ndarray | None:
        ...

    def _read(self, embeds: torch.Tensor, cache: object, n_text: int, keep_tail: bool) -> tuple[int, int, int]:
        hidden = self.policy(embeds, cache, start=n_text)
        ctx = cache.get_seq_length()  # type: ignore[attr-defined]
        measured = cache_bytes(cache)
        logits = self.policy.head(hidden[0, -1])
        self._last_logits = logits.tolist()
        action = int(logits.argmax())
        if not keep_tail:
            cache.crop(n_text - ctx)  # type: ignore[attr-defined]  # negative: tokens to drop
        return action, ctx, measured

    @torch.no_grad()
    def solve(self, m: LakeMap, rng: np.random.Generator, depth: int | None = None, *,
              forced: list[int] | None = None, count_flops: bool = False, keep_thoughts: bool = False) -> Episode:
        """Roll out on map ``m`` for at most ``depth + max_extra_hops`` hops (depth: the expert's path length).

        With ``forced`` the given moves are taken whatever the policy says, for exactly ``len(forced)`` hops,
        and the environment is not terminated (cost measurements at a chosen reasoning depth).
        """
        from transformers import DynamicCache

        if not isinstance(m, LakeMap):
            raise ValueError(f"map: expected a LakeMap, got {type(m).__name__}")
        if forced is not None:
            forced = [int(a) for a in forced]
            if not forced or any(not 0 <= a < 4 for a in forced):
                raise ValueError("forced: expected a non-empty list of moves 0..3")
        if depth is None:
            depth = 2 * m.size
        depth = positive_int(depth, "depth", maximum=10_000)
        g = torch_generator(rng)
        pol = self.policy
        ep = Episode()
        pos = m.start
        visited: set[tuple[int, int]] = set()
        trace: list[int] = []
        img = torch.from_numpy(render(m, pos))[None, None].to(pol.bos.device)
        cache = DynamicCache()
        n_hops = len(forced) + 1 if forced is not None else depth + self.max_extra_hops
        prefix, thought = self._start(img)
        n_text = 0
        for hop in range(n_hops):
            t0 = time.perf_counter()
            flow_meter = _FlopMeter(count_flops)
            if hop > 0:
                with flow_meter:
                    thought = self._think(m, pos, visited, thought, trace, g)
            with _FlopMeter(count_flops) as pol_meter:
                if hop == 0:
                    embeds = prefix
                else:
                    embeds = self._after_move(trace[-1], thought)
                action, ctx, measured = self._recompute_or_append(embeds, cache, n_text, thought)
            ep.seconds.append(time.perf_counter() - t0)
            ep.logits.append(self._last_logits)
            n_text = self._text_length(cache, n_text, embeds)
            ep.context.append(ctx)
            ep.kv_bytes.append(kv_bytes(pol.n_layers, ctx, pol.d_model))
            ep.kv_bytes_visual.append(kv_bytes(pol.n_layers, self._visual_in_context(hop), pol.d_model))
            ep.kv_bytes_measured.append(measured)
            ep.flops_policy.append(pol_meter.flops)
            ep.flops_flow.append(flow_meter.flops)
            ep.workspace_shape.append(self._thought_shape(thought))
            pix = self._decode(thought)
            ep.agent_ok.append(None if pix is None else agent_cell(pix, m.size) == pos)
            if keep_thoughts and pix is not None:
                ep.thoughts.append(pix)
            if forced is not None:
                if hop == len(forced):
                    break
                action = forced[hop]
            elif action == STOP or hop == n_hops - 1:
                break
            ep.actions.append(action)
            visited.add(pos)
            pos = step(m, pos, action)
            trace.append(action)
            if forced is None and m.holes[pos]:
                ep.fell = True
                break
            if forced is None and pos == m.goal:
                ep.success = True
                break
        return ep

    # how the context evolves after a read; SpecFlow overrides both
    def _recompute_or_append(self, embeds: torch.Tensor, cache: object, n_text: int,
                             thought: object) -> tuple[int, int, int]:
        return self._read(embeds, cache, n_text, keep_tail=True)

    def _text_length(self, cache: object, n_text: int, embeds: torch.Tensor) -> int:
        return cache.get_seq_length()  # type: ignore[attr-defined]

    def _thought_shape(self, thought: object) -> tuple[int, ...]:
        return tuple(thought.shape) if isinstance(thought, torch.Tensor) else ()


def _tokens(policy: Policy, kinds: list[int], ids: list[int], feats: torch.Tensor | None, slots: list[int]
            ) -> torch.Tensor:
    """Embeddings (1, L, d) of one short token sequence (inference)."""
    n = len(kinds)
    f = feats if feats is not None else torch.zeros(1, n, policy.visual.in_features)
    return policy.embed(torch.tensor(kinds), torch.tensor([ids]), f, torch.tensor(slots))


class SpecFlowReasoner(_Reasoner):
    """SpecFlow (Alg. 1): one fixed-size block-DCT workspace, overwritten each hop by the flow update.

    The policy context is ``[task | a_1..a_i | 16 workspace tokens]``; the workspace tokens are the first
    ``ws_keep`` zig-zag coefficients of each 8 x 8 block (one token per block) and are recomputed each hop.
    ``updater=None`` uses ground-truth renders as the workspace (an oracle, for ablations).
    """

    kind = "specflow"
    visual_input = "dct"

    def __init__(self, policy: Policy, updater: FlowUpdater | None, ws_keep: int = 16, block: int = 8,
                 max_extra_hops: int = 2):
        super().__init__(policy, max_extra_hops)
        if updater is not None and updater.space != "spectral":
            raise ValueError("updater: SpecFlow needs a spectral FlowUpdater")
        self.updater, self.ws_keep, self.block = updater, ws_keep, block
        if updater is not None and updater.ws_keep != ws_keep:
            raise ValueError(f"ws_keep: {ws_keep} differs from the updater's {updater.ws_keep}")

    def workspace(self, img: torch.Tensor) -> torch.Tensor:
        """Workspace of a render (1, 1, H, W) -> (1, n_blocks, ws_keep) coefficients."""
        return to_workspace(block_dct(img, self.block), self.ws_keep, self.block)[:, 0]

    def _start(self, img: torch.Tensor) -> tuple[torch.Tensor, object]:
        self.n_visual_tokens = (img.shape[-1] // self.block) ** 2
        self._side = img.shape[-1]
        return _tokens(self.policy, [BOS], [0], None, [0]), self.workspace(img)

    def _ws_tokens(self, ws: torch.Tensor) -> torch.Tensor:
        n = ws.shape[1]
        return self.policy.embed(torch.full((n,), VIS), torch.zeros(1, n, dtype=torch.long), ws, torch.arange(n))

    def _after_move(self, action: int, thought: object) -> torch.Tensor:
        return _tokens(self.policy, [ACT], [action], None, [0])

    def _recompute_or_append(self, embeds: torch.Tensor, cache: object, n_text: int,
                             thought: object) -> tuple[int, int, int]:
        # the text token(s) are appended to the cache for good; the workspace is read after them and dropped
        self.policy(embeds, cache, start=n_text)
        n_text += embeds.shape[1]
        return self._read(self._ws_tokens(thought), cache, n_text, keep_tail=False)  # type: ignore[arg-type]

    def _text_length(self, cache: object, n_text: int, embeds: torch.Tensor) -> int:
        return n_text + embeds.shape[1]

    def _think(self, m: LakeMap, pos: tuple[int, int], visited: set, thought: object, trace: list[int],
               g: torch.Generator) -> object:
        if self.updater is None:
            return self.workspace(torch.from_numpy(render(m, pos, visited))[None, None].to(self.policy.bos.device))
        side = self._side
        state = from_workspace(thought, side, side, self.block)[:, None]  # type: ignore[arg-type]
        x1 = self.updater.sample(state, [list(trace)], g)
        assert isinstance(x1, torch.Tensor)
        return to_workspace(x1, self.ws_keep, self.block)[:, 0]  # overwrite: X(1) truncated to ws_keep

    def _visual_in_context(self, n_hops: int) -> int:
        return self.n_visual_tokens

    def _decode(self, thought: object) -> np.ndarray:
        side = self._side
        return block_idct(from_workspace(thought, side, side, self.block), self.block)[0].cpu().numpy()  # type: ignore[arg-type]

    def _thought_shape(self, thought: object) -> tuple[int, ...]:
        return tuple(thought.shape)  # type: ignore[attr-defined]


def build_policy(visual_dim: int, n_slots: int, n_layers: int, d_model: int, n_heads: int, max_ctx: int,
                 generator: torch.Generator, attn_implementation: str = "sdpa", visual_input: VisualInput = "dct",
                 block: int = 8) -> Policy:
    """A freshly initialised :class:`Policy` whose weights are drawn from ``generator``.

    ``visual_input``: ``"dct"`` for SpecFlow's workspace, ``"pixel"`` for the MVoT and text-only baselines.
    """
    positive_int(visual_dim, "visual_dim")
    return seeded_init(lambda: Policy(visual_dim, n_slots, n_layers, d_model, n_heads, max_ctx,  # type: ignore[return-value]
                                      attn_implementation=attn_implementation, visual_input=visual_input,
                                      block=block), generator)


Kind = Literal["specflow", "mvot", "mvot_oracle", "text"]
__all__ += ["build_policy", "Kind"]


def load_backbone_policy(path: str, visual_dim: int, n_slots: int, generator: torch.Generator,
                         visual_input: VisualInput = "dct", block: int = 8, dtype: str | None = None,
                         device: str = "cpu") -> Policy:
    """A :class:`Policy` on a user's Hugging Face causal LM from a local folder or GGUF file (``--set model=PATH``).

    The checkpoint is read by :func:`icml2026.core.loaders.load_causal_lm` (never downloaded). Its decoder runs
    on ``inputs_embeds``: the task token and the action words start as the LM's own word embeddings, the DCT
    workspace (or pixel patches) enters through a new linear projection plus a per-slot embedding, and a new
    linear head reads the action off the last hidden state. The new layers' weights are drawn from
    ``generator``; every parameter, the LM's included, is trained by :func:`~.training.train_policy`.
    """
    from icml2026.core.loaders import load_causal_lm

    loaded = load_causal_lm(path, dtype=dtype, device="cpu")

    def factory() -> Policy:
        return Policy(visual_dim, n_slots, visual_input=visual_input, block=block, backbone=loaded.model,
                      tokenizer=loaded.tokenizer)

    policy = seeded_init(factory, generator)
    assert isinstance(policy, Policy)
    return policy.to(device)


__all__ += ["load_backbone_policy", "ACTION_WORDS", "TASK_PROMPT"]
