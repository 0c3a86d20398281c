"""SAC checkpoint files: the full format that ``train_sac`` writes and a compact, compressed format to keep.

Full format (what :func:`~icml2026.papers.dwc.sac.train_sac` writes every ``checkpoint_every`` steps): a plain
``torch.save`` of everything SAC holds except the env's internal state (actor, critics, target critics, the three
Adam states, the entropy parameter, the whole replay buffer, both RNG states, the episode returns and the
learning curve). A run resumed from it is the same computation as an uninterrupted one up to the env episode.

Compact format (:func:`compact_state`, written by :func:`convert_checkpoint`; ``"format": COMPACT_FORMAT``),
an xz-compressed ``torch.save`` of:

- bit-exact: everything the re-evaluation of a finished run reads — the actor (weights, mapping weights, LUT
  tables, observation normaliser), both RNG states, the step, the episode returns, the learning curve, the
  config — and the observations of the last ``log_last_obs`` buffer slots (the on-policy states of the circuit
  verification), so a finished run reloaded from a compact file gives the same evaluation, circuit check and
  verdict as from its full file (tested); also the critics, the entropy parameter and its optimiser (small);
- 16-bit: the target critics (float16; their weights are O(1)) and the Adam moments of the actor and critic
  optimisers (bfloat16: float16's range flushes 18 % of the Hopper DWC actor's second moments, which reach
  1e-43, to zero; bfloat16 keeps float32's range with 8 significant bits, a relative error <= 2^-8);
- subsampled: the replay buffer keeps every ``buffer_stride``-th filled slot (observations, next observations
  and actions in float16, rewards float32, terminal flags bool) plus the last ``log_last_obs`` slots.

Loading a compact file (:func:`load_checkpoint`) expands it back to the full format: 16-bit tensors are cast up
to float32 and every filled buffer slot is refilled with the nearest kept transition at or before it (each kept
transition stands for the ``buffer_stride`` slots after it, so SAC keeps sampling the same spread of its history).
An *unfinished* run resumed from a compact file therefore trains on, but not bit for bit as from its full
file: the target critics and Adam moments carry 16-bit rounding and the buffer holds one transition in
``buffer_stride`` (repeated). The old full-precision files load as before. Both formats are read with
``torch.load(weights_only=True)`` (tensors and plain containers only).
"""

from __future__ import annotations

import io
import lzma
import os
from pathlib import Path
from typing import Any

import torch

__all__ = ["COMPACT_FORMAT", "compact_state", "expand_state", "is_compact", "save_checkpoint", "load_checkpoint",
           "convert_checkpoint"]

#: ``state["format"]`` of a compact checkpoint (a full checkpoint has no ``format`` key).
COMPACT_FORMAT = "dwc-sac-compact-1"

_XZ_MAGIC = b"\xfd7zXZ\x00"
_FULL_KEYS = ("step", "actor", "q1", "q2", "q1t", "q2t", "opt_q", "opt_pi", "opt_ent", "log_ent", "buffer",
              "returns", "ends", "rng_state", "torch_rng", "config")
# float16's largest finite value: a target-critic tensor beyond it is stored in bfloat16 instead (a diverged run)
_F16_MAX = 65504.0


def is_compact(state: dict[str, Any]) -> bool:
    """Whether ``state`` (a loaded checkpoint dict, not yet expanded) is in the compact format."""
    return isinstance(state, dict) and state.get("format") == COMPACT_FORMAT


def _check_full(state: object) -> dict[str, Any]:
    if not isinstance(state, dict):
        raise ValueError(f"state: expected a checkpoint dict, got {type(state).__name__}")
    if is_compact(state):
        raise ValueError("state: already in the compact format (expand it first: a second subsampling of the "
                         "buffer would drop more transitions)")
    missing = [k for k in _FULL_KEYS if k not in state]
    if missing:
        raise ValueError(f"state: not a train_sac checkpoint, missing keys {missing}")
    return state


def _half(t: torch.Tensor) -> torch.Tensor:
    """float16 for a floating tensor within float16's range, else bfloat16; other tensors unchanged."""
    if not t.is_floating_point():
        return t
    finite = t[torch.isfinite(t)]
    if finite.numel() and float(finite.abs().max()) > _F16_MAX:
        return t.to(torch.bfloat16)
    return t.to(torch.float16)


def _moments_bf16(opt_state: dict[str, Any]) -> dict[str, Any]:
    """An Adam ``state_dict`` with its moment tensors in bfloat16 (step counters and param groups exact)."""
    return {"state": {i: {k: (v.to(torch.bfloat16) if k in ("exp_avg", "exp_avg_sq") and v.is_floating_point()
                              else v) for k, v in s.items()} for i, s in opt_state["state"].items()},
            "param_groups": opt_state["param_groups"]}


def _up(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32) if t.dtype in (torch.float16, torch.bfloat16) else t


def compact_state(state: dict[str, Any], buffer_stride: int = 5) -> dict[str, Any]:
    """The compact form of a full ``train_sac`` checkpoint dict (see the module docstring for what is kept how).

    Parameters
    ----------
    state : a full-format checkpoint dict (as ``torch.load`` returns it).
    buffer_stride : keep every ``buffer_stride``-th filled replay-buffer slot (1 keeps them all, in 16 bits).

    Returns
    -------
    dict: the compact checkpoint (``"format": COMPACT_FORMAT``); :func:`expand_state` turns it back into a
    full one.
    """
    state = _check_full(state)
    if isinstance(buffer_stride, bool) or not isinstance(buffer_stride, int) or buffer_stride < 1:
        raise ValueError(f"buffer_stride = {buffer_stride!r}: expected an integer >= 1")
    buf = state["buffer"]
    cap, step = int(buf["obs"].shape[0]), int(state["step"])
    n_filled = min(step, cap)
    n_recent = min(int(state["config"].get("log_last_obs", 0)), n_filled)
    # the slots of the last n_recent env steps (the buffer is a ring of cap slots written at step % cap)
    recent = torch.tensor(sorted({(step - 1 - j) % cap for j in range(n_recent)}), dtype=torch.long)
    kept = torch.unique(torch.cat([torch.arange(0, n_filled, buffer_stride, dtype=torch.long), recent]))
    dev = buf["obs"].device
    kept_d, recent_d = kept.to(dev), recent.to(dev)
    out: dict[str, Any] = {k: v for k, v in state.items() if k not in ("q1t", "q2t", "opt_q", "opt_pi", "buffer")}
    out["format"] = COMPACT_FORMAT
    out["q1t"] = {k: _half(v) for k, v in state["q1t"].items()}
    out["q2t"] = {k: _half(v) for k, v in state["q2t"].items()}
    out["opt_q"], out["opt_pi"] = _moments_bf16(state["opt_q"]), _moments_bf16(state["opt_pi"])
    out["buffer"] = {
        "capacity": cap, "index": kept, "obs": _half(buf["obs"][kept_d]), "next": _half(buf["next"][kept_d]),
        "act": _half(buf["act"][kept_d]), "rew": buf["rew"][kept_d].to(torch.float32),
        "term": buf["term"][kept_d] != 0,
        # exact: what the circuit verification of a finished run reads (SACResult.logged_obs)
        "recent_index": recent, "recent_obs": buf["obs"][recent_d].clone(),
        "buffer_stride": buffer_stride,
    }
    return out


def expand_state(state: dict[str, Any]) -> dict[str, Any]:
    """The full-format checkpoint dict of a compact one (16-bit tensors in float32, the buffer refilled).

    Each filled buffer slot ``j`` gets the kept transition with the largest kept slot ``<= j``; the exact
    observations of the recent slots are put back in place. Unfilled slots stay zero, as in ``train_sac``.
    """
    if not is_compact(state):
        raise ValueError("state: not a compact checkpoint (a full one needs no expanding)")
    b = state["buffer"]
    cap, kept = int(b["capacity"]), b["index"]
    step = int(state["step"])
    n_filled = min(step, cap)
    dev = b["obs"].device
    obs_dim, act_dim = int(b["obs"].shape[1]), int(b["act"].shape[1])
    full = {"obs": torch.zeros(cap, obs_dim, dtype=torch.float64, device=dev),
            "next": torch.zeros(cap, obs_dim, dtype=torch.float64, device=dev),
            "act": torch.zeros(cap, act_dim, dtype=torch.float32, device=dev),
            "rew": torch.zeros(cap, dtype=torch.float32, device=dev),
            "term": torch.zeros(cap, dtype=torch.float32, device=dev)}
    if n_filled:
        if int(kept[0]) != 0:
            raise ValueError("state: the compact buffer does not keep slot 0 (a corrupt file?)")
        slots = torch.arange(n_filled, dtype=torch.long)
        src = (torch.searchsorted(kept.cpu(), slots, right=True) - 1).to(dev)
        full["obs"][:n_filled] = b["obs"][src].to(torch.float64)
        full["next"][:n_filled] = b["next"][src].to(torch.float64)
        full["act"][:n_filled] = b["act"][src].to(torch.float32)
        full["rew"][:n_filled] = b["rew"][src].to(torch.float32)
        full["term"][:n_filled] = b["term"][src].to(torch.float32)
        full["obs"][b["recent_index"].to(dev)] = b["recent_obs"].to(torch.float64)
    out = {k: v for k, v in state.items() if k not in ("format", "buffer")}
    out["q1t"] = {k: _up(v) for k, v in state["q1t"].items()}
    out["q2t"] = {k: _up(v) for k, v in state["q2t"].items()}
    for name in ("opt_q", "opt_pi"):
        out[name] = {"state": {i: {k: _up(v) for k, v in s.items()} for i, s in state[name]["state"].items()},
                     "param_groups": state[name]["param_groups"]}
    out["buffer"] = full
    return out


def save_checkpoint(state: dict[str, Any], path: str | Path, compress: bool = False) -> None:
    """Write ``state`` with ``torch.save`` to ``path`` atomically; ``compress``: xz-compressed (preset 9)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    if compress:
        buf = io.BytesIO()
        torch.save(state, buf)
        tmp.write_bytes(lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, preset=9))
    else:
        torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: an interruption never leaves a half-written checkpoint


def load_checkpoint(path: str | Path, map_location: torch.device | str | None = None,
                    expand: bool = True) -> dict[str, Any]:
    """Read a checkpoint of either format with ``torch.load(weights_only=True)``.

    Parameters
    ----------
    path : a full (plain ``torch.save``) or compact (xz-compressed) checkpoint file.
    map_location : passed to ``torch.load`` (the run's device).
    expand : return a compact checkpoint expanded to the full format (:func:`expand_state`); False returns it
        as stored.
    """
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(len(_XZ_MAGIC))
    if head == _XZ_MAGIC:
        state = torch.load(io.BytesIO(lzma.decompress(path.read_bytes())), weights_only=True,
                           map_location=map_location)
    else:
        state = torch.load(path, weights_only=True, map_location=map_location)
    if expand and is_compact(state):
        state = expand_state(state)
    return state


def convert_checkpoint(src: str | Path, dst: str | Path | None = None, buffer_stride: int = 5) -> Path:
    """Write the compact, compressed form of the full checkpoint ``src`` to ``dst`` (default: ``src`` itself).

    Raises ValueError for a file that is already compact. Returns the path written.
    """
    src = Path(src)
    state = load_checkpoint(src, map_location="cpu", expand=False)
    out = Path(dst) if dst is not None else src
    save_checkpoint(compact_state(state, buffer_stride), out, compress=True)
    return out
