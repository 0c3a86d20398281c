"""Langevin estimates along a beta grid for an MLP classifier, with checkpointing and CSV output.

For every beta_k of the grid an independent SGLD chain (:func:`run_sgld_chain`) targets
``Q_beta_k ∝ exp(-beta_k L_S) N(0, s^2 I)`` for the bounded BCE ``L_S``; beta_0 = 0 is the prior, sampled
directly. Each chain gets its own random stream (spawned up front from the caller's generator), so a run
resumed from a checkpoint reproduces an uninterrupted run exactly.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch

from icml2026.core.progress import track
from icml2026.core.rng import spawn, torch_generator
from icml2026.core.validate import finite_number, positive_int

from .data import BinaryTask
from .sampler import ChainDivergedError, SGLDConfig, run_sgld_chain

__all__ = [
    "GridRow",
    "bounded_bce",
    "make_mlp",
    "sample_prior_weights",
    "run_beta_grid",
    "rows_to_csv",
    "rows_from_csv",
]

CSV_NAME = "chains.csv"


@dataclass(frozen=True)
class GridRow:
    """Ergodic averages of the chain at one beta. Losses are the bounded BCE divided by ``l_max``
    (in [0, 1]); errors are 0-1 errors of the randomised classifier."""

    beta: float
    train_loss: float
    train01: float
    test_loss: float
    test01: float
    n_burn_in: int
    n_sample_steps: int
    n_evals: int


def bounded_bce(logits: torch.Tensor, labels: torch.Tensor, l_max: float = 4.0) -> torch.Tensor:
    """Bounded BCE of the brief: ``-ln psi(p_y)`` with ``psi(p) = e^{-l_max} + (1 - 2 e^{-l_max}) p``.

    Parameters
    ----------
    logits : (m,) real scores, ``p = sigmoid(logits)`` is the probability of label 1.
    labels : (m,) labels in {0, 1}.
    l_max : the loss cap; values lie in ``[-ln(1 - e^{-l_max}), l_max]`` within ``[0, l_max]``.

    Returns
    -------
    (m,) per-example losses (not normalised).
    """
    # psi(p) = e^{-l_max} + (1 - 2 e^{-l_max}) p is increasing only for l_max > ln 2.
    finite_number(l_max, "l_max", lo=math.log(2.0), lo_open=True)
    if logits.shape != labels.shape:
        raise ValueError(f"logits has shape {tuple(logits.shape)}, labels has shape {tuple(labels.shape)}")
    if not bool(torch.all((labels == 0) | (labels == 1))):
        raise ValueError("labels must be 0 or 1")
    if bool(torch.any(torch.isnan(logits))):  # +-inf is a valid limit: the loss is then 0 or l_max
        raise ValueError("logits contains NaN")
    # p_y = sigmoid(+-logit) computed stably; psi is affine in p_y.
    signed = torch.where(labels > 0.5, logits, -logits)
    p_y = torch.sigmoid(signed)
    e = math.exp(-l_max)
    return -torch.log(e + (1.0 - 2.0 * e) * p_y)


def make_mlp(in_dim: int, width: int, n_hidden: int, generator: torch.Generator) -> torch.nn.Sequential:
    """ReLU MLP ``in_dim -> width x n_hidden -> 1`` with PyTorch's default-style uniform initialisation
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` drawn from ``generator``."""
    in_dim, width = positive_int(in_dim, "in_dim"), positive_int(width, "width")
    n_hidden = positive_int(n_hidden, "n_hidden", minimum=0)
    dims = [in_dim] + [width] * n_hidden + [1]
    layers: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        lin = torch.nn.Linear(a, b)
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            lin.weight.copy_((2 * torch.rand(lin.weight.shape, generator=generator) - 1) * bound)
            lin.bias.copy_((2 * torch.rand(lin.bias.shape, generator=generator) - 1) * bound)
        layers.append(lin)
        if i < len(dims) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def sample_prior_weights(model: torch.nn.Module, prior_std: float, generator: torch.Generator) -> None:
    """Overwrite every parameter with a draw from the prior ``N(0, prior_std^2 I)``."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(prior_std * torch.randn(p.shape, generator=generator))


def _logits(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The model's scores; a NaN (weights so large that inf - inf appears) means the chain diverged.

    A classifier returns one score per example ((m,) or (m, 1)) or two logits (m, 2), whose difference is
    the score of label 1 (any torch classifier, issue 68)."""
    out = model(x)
    if out.ndim == 2 and out.shape[1] == 2:
        logits = out[:, 1] - out[:, 0]
    elif (out.ndim == 2 and out.shape[1] == 1) or out.ndim == 1:
        logits = out.reshape(-1)
    else:
        raise ValueError(f"model: a binary classifier returns (m,), (m, 1) or (m, 2) scores, got {tuple(out.shape)}")
    if bool(torch.any(torch.isnan(logits))):
        raise ChainDivergedError("the network's output is NaN: the chain's weights diverged")
    return logits


def _metrics(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, l_max: float) -> tuple[float, float]:
    logits = _logits(model, x)
    loss = float(bounded_bce(logits, y, l_max).mean()) / l_max
    err = float(((logits > 0).to(y.dtype) != y).float().mean())
    return loss, err


def _fingerprint(task: BinaryTask, payload: dict[str, object]) -> str:
    h = hashlib.sha256()
    for a in (task.x_train, task.y_train, task.x_test, task.y_test):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(json.dumps(payload, sort_keys=True).encode())
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _row_from_json(text: str) -> GridRow:
    d = json.loads(text)
    return GridRow(
        beta=float(d["beta"]), train_loss=float(d["train_loss"]), train01=float(d["train01"]),
        test_loss=float(d["test_loss"]), test01=float(d["test01"]), n_burn_in=int(d["n_burn_in"]),
        n_sample_steps=int(d["n_sample_steps"]), n_evals=int(d["n_evals"]),
    )


def rows_to_csv(rows: Sequence[GridRow]) -> str:
    """CSV text of the rows (floats written with ``repr``, so a round trip is exact)."""
    buf = io.StringIO()
    names = [f.name for f in fields(GridRow)]
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    for r in rows:
        w.writerow([repr(getattr(r, k)) for k in names])
    return buf.getvalue()


def rows_from_csv(text: str) -> list[GridRow]:
    """Inverse of :func:`rows_to_csv`."""
    out = []
    for rec in csv.DictReader(io.StringIO(text)):
        out.append(
            GridRow(
                beta=float(rec["beta"]), train_loss=float(rec["train_loss"]), train01=float(rec["train01"]),
                test_loss=float(rec["test_loss"]), test01=float(rec["test01"]),
                n_burn_in=int(rec["n_burn_in"]), n_sample_steps=int(rec["n_sample_steps"]),
                n_evals=int(rec["n_evals"]),
            )
        )
    return out


def run_beta_grid(
    task: BinaryTask,
    betas: Sequence[float],
    *,
    width: int,
    n_hidden: int,
    sgld: SGLDConfig,
    rng: np.random.Generator,
    l_max: float = 4.0,
    n_prior_draws: int = 1000,
    checkpoint_dir: str | Path | None = None,
    description: str = "SGLD beta grid",
    device: str | torch.device = "cpu",
    model_factory: Callable[[torch.Generator], torch.nn.Module] | None = None,
    model_name: str = "mlp",
) -> list[GridRow]:
    """Estimate ``E_{Q_beta}`` of the train/test losses and 0-1 errors on a beta grid (brief, Sampler).

    Parameters
    ----------
    task : the data (labels in {0, 1}).
    betas : strictly increasing grid starting at 0, in units of the *raw* bounded BCE (as in the official
        code): the chain at ``beta`` targets ``exp(-beta * BBCE_S) pi``, i.e. inverse temperature
        ``beta * l_max`` for the normalised loss ``BBCE / l_max`` reported in the rows.
    width, n_hidden : MLP shape. sgld : chain settings. l_max : loss cap of the bounded BCE.
    model_factory : ``generator -> torch.nn.Module``, any classifier (see ``folder.model_factory``) instead of
        the MLP; its initial weights must come from the generator. model_name : its name in the checkpoint
        fingerprint.
    rng : numpy generator; one independent child stream per beta is spawned from it up front.
    n_prior_draws : number of prior draws averaged at beta = 0 (paper: 1000).
    checkpoint_dir : if given, each finished beta is saved there (``beta_<k>.json``, k as 3 digits) and skipped on a
        rerun with the same data and settings; the finished grid is written to ``chains.csv``. Nothing
        is written when it is None.
    description : label of the progress display.
    device : torch device of the data and the model (``"cpu"``, ``"cuda"``, ...). Initial weights, prior draws,
        minibatch permutations and Langevin noise are drawn from the CPU generators and moved there, so the
        random streams do not depend on the device; on the CPU the results are those of a run without it.

    Returns
    -------
    One :class:`GridRow` per beta, in grid order.
    """
    b = np.asarray(betas, dtype=float)
    if b.ndim != 1 or b.size < 2 or b[0] != 0.0 or np.any(np.diff(b) <= 0):
        raise ValueError(f"betas must start at 0 and be strictly increasing, got {list(betas)}")
    if n_prior_draws < 1:
        raise ValueError(f"n_prior_draws must be >= 1, got {n_prior_draws}")
    dev = torch.device(device)
    xtr = torch.as_tensor(task.x_train, dtype=torch.float32, device=dev)
    ytr = torch.as_tensor(task.y_train, dtype=torch.float32, device=dev)
    xte = torch.as_tensor(task.x_test, dtype=torch.float32, device=dev)
    yte = torch.as_tensor(task.y_test, dtype=torch.float32, device=dev)
    n_train = int(xtr.shape[0])
    streams = spawn(rng, b.size)  # one stream per beta, fixed before any chain runs (resumable)

    ckpt: Path | None = None
    if checkpoint_dir is not None:
        ckpt = Path(checkpoint_dir)
        ckpt.mkdir(parents=True, exist_ok=True)
        payload = {
            "betas": b.tolist(), "width": width, "n_hidden": n_hidden, "sgld": asdict(sgld),
            "l_max": l_max, "n_prior_draws": n_prior_draws,
            "stream_seeds": [s.bit_generator.seed_seq.entropy for s in streams],  # type: ignore[attr-defined]
            "stream_keys": [list(s.bit_generator.seed_seq.spawn_key) for s in streams],  # type: ignore[attr-defined]
        }
        if dev.type != "cpu":  # CPU checkpoints keep the fingerprint they had before the device option
            payload["device"] = str(dev)
        if model_factory is not None:  # MLP checkpoints keep the fingerprint they had before the model option
            payload["model"] = model_name
        fp = _fingerprint(task, payload)
        meta = ckpt / "meta.json"
        if meta.exists():
            old = json.loads(meta.read_text()).get("fingerprint")
            if old != fp:
                raise ValueError(
                    f"checkpoint directory {ckpt} holds a run with other data or settings; "
                    "use a fresh directory"
                )
        else:
            _write_atomic(meta, json.dumps({"fingerprint": fp}, indent=1))

    rows: list[GridRow] = []
    for k in track(range(b.size), description=description, total=int(b.size)):
        path = ckpt / f"beta_{k:03d}.json" if ckpt is not None else None
        if path is not None and path.exists():
            rows.append(_row_from_json(path.read_text()))
            continue
        gen = torch_generator(streams[k])
        model: torch.nn.Module
        if model_factory is None:
            model = make_mlp(xtr.shape[1], width, n_hidden, gen).to(dev)
        else:
            model = model_factory(gen).to(dev)
        if k == 0:  # beta = 0: Q_0 is the prior; average over independent prior draws
            acc = np.zeros(4)
            with torch.no_grad():
                for _ in range(n_prior_draws):
                    sample_prior_weights(model, sgld.prior_std, gen)
                    acc += np.array(_metrics(model, xtr, ytr, l_max) + _metrics(model, xte, yte, l_max))
            acc /= n_prior_draws
            row = GridRow(0.0, float(acc[0]), float(acc[1]), float(acc[2]), float(acc[3]), 0, 0, n_prior_draws)
        else:
            params = list(model.parameters())

            def minibatch_loss(idx: torch.Tensor, model: torch.nn.Module = model) -> torch.Tensor:
                idx = idx.to(dev)  # the permutation comes from the CPU generator
                return bounded_bce(_logits(model, xtr[idx]), ytr[idx], l_max).mean()

            def evaluate(model: torch.nn.Module = model) -> dict[str, float]:
                trl, tre = _metrics(model, xtr, ytr, l_max)
                tel, tee = _metrics(model, xte, yte, l_max)
                return {"train_loss": trl, "train01": tre, "test_loss": tel, "test01": tee}

            res = run_sgld_chain(params, minibatch_loss, n_train, float(b[k]), sgld, gen, evaluate)
            a = res.averages
            row = GridRow(
                float(b[k]), a["train_loss"], a["train01"], a["test_loss"], a["test01"],
                res.n_burn_in, res.n_sample_steps, res.n_evals,
            )
        rows.append(row)
        if path is not None:
            _write_atomic(path, json.dumps(asdict(row)))
    if ckpt is not None:
        _write_atomic(ckpt / CSV_NAME, rows_to_csv(rows))
    return rows
