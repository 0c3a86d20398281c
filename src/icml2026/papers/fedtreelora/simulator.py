"""In-process federated simulator (pure PyTorch, deterministic): the engine CI runs.

One round (step 5 of the method): each client runs E local AdamW steps on its own data, updating only its
cluster expert, its lambdas and its local head (the external expert is frozen); it uploads its cluster
expert (A and B of every targeted map, never lambda nor the head); the server re-averages per layer per
block and sends each client its (cluster, external) pair. Clients are trained side by side in one batched
forward pass (see :mod:`.model`); client k's update depends only on client k's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml2026.core.rng import torch_generator

from .data import Client
from .method import Strategy, Structure, aggregation_weights
from .model import TARGETS, Backbone, ClientModel
from .tree import MIN_CLIENTS

__all__ = ["TrainConfig", "FederatedRun", "simulate", "PAYLOAD_KEYS", "payload_floats"]

BYTES_PER_FLOAT = 4  # float32 payloads
PAYLOAD_KEYS = ("A", "B")  # what a client may upload: its cluster expert only (never theta / lambda / head)


@dataclass(frozen=True)
class TrainConfig:
    """Local training of every method (brief: rank 4, alpha 8, AdamW lr 1e-3, batch 32, 20 local steps)."""

    rank: int = 4
    alpha: float = 8.0
    local_steps: int = 20
    batch_size: int = 32
    lr: float = 1e-3
    head_lr: float = 1e-2
    eval_every: int = 1
    eval_batch: int = 100
    pooling: str = "mean"  # *ours*: mean of the last hidden states (or "cls")
    device: str = "cpu"  # torch device of the clients' models (inits and batch draws stay on the CPU)


@dataclass
class FederatedRun:
    """Result of :func:`simulate`.

    acc : (n_evals, N) personalised test accuracy of each client after the rounds in ``eval_rounds``.
    bytes_up, bytes_down : (rounds, N) payload bytes each client sent / received per round.
    structure : the sharing structure of the last round (partitions per layer, cuts).
    lambdas : (L, N) final sigmoid(theta) (only meaningful where a client had an external expert).
    sent_keys : every payload key any client ever uploaded (a subset of ``PAYLOAD_KEYS``).
    """

    strategy: str
    eval_rounds: list[int]
    acc: np.ndarray
    bytes_up: np.ndarray
    bytes_down: np.ndarray
    structure: Structure
    lambdas: np.ndarray
    tasks: list[str]
    sent_keys: set[str] = field(default_factory=set)
    final_state: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def final_acc(self) -> np.ndarray:
        return self.acc[-1]

    @property
    def mean_acc(self) -> float:
        return float(self.acc[-1].mean())

    @property
    def cuts(self) -> list[int]:
        return self.structure.cuts


def payload_floats(n_layers: int, d_model: int, rank: int) -> int:
    """Floats in one full cluster expert (A: r x d and B: d x r for W_q and W_v of every layer)."""
    return n_layers * len(TARGETS) * 2 * rank * d_model


def _check_clients(clients: Sequence[Client], seq_len: int) -> None:
    if isinstance(clients, Client) or not isinstance(clients, Sequence):
        raise TypeError("clients: expected a list of Client objects")
    if len(clients) < MIN_CLIENTS:
        raise ValueError(f"clients: needs at least {MIN_CLIENTS} clients, got {len(clients)}")
    for i, c in enumerate(clients):
        if not isinstance(c, Client):
            raise TypeError(f"clients[{i}]: expected a Client, got {type(c).__name__}")
        if c.x_train.ndim != 2 or c.x_train.shape[1] != seq_len or c.x_test.shape[1:] != (seq_len,):
            raise ValueError(f"clients[{i}]: sequences must have length {seq_len} (the backbone's max_len)")
        if c.x_train.shape[0] != c.y_train.shape[0] or c.x_test.shape[0] != c.y_test.shape[0]:
            raise ValueError(f"clients[{i}]: x and y differ in length")
    n_test = {c.x_test.shape[0] for c in clients}
    if len(n_test) != 1:
        raise ValueError("clients: every client needs the same number of test examples")


def _apply_structure(model: ClientModel, s: Structure, theta_init: float, fresh: bool) -> None:
    for layer in range(model.n_layers):
        ext = torch.as_tensor(s.has_external(layer)).to(model.head_b.device)
        model.has_ext[layer] = ext
        model.ext_active[layer] = bool(ext.any())
        if fresh:
            with torch.no_grad():
                model.theta[layer].fill_(theta_init)


def _to_device(model: ClientModel, device: torch.device) -> ClientModel:
    """``model`` on ``device``, with its plain-tensor state (frozen external experts, masks) moved as well."""
    model.to(device)
    model.A_e = {k: v.to(device) for k, v in model.A_e.items()}
    model.B_e = {k: v.to(device) for k, v in model.B_e.items()}
    model.has_ext = [m.to(device) for m in model.has_ext]
    return model


def _local_training(
    model: ClientModel,
    s: Structure,
    data_x: torch.Tensor,
    data_y: torch.Tensor,
    n_k: torch.Tensor,
    cfg: TrainConfig,
    g: torch.Generator,
) -> None:
    """E local AdamW steps for every client (fresh optimiser state per round, *ours*)."""
    lora = [*model.A_c.values(), *model.B_c.values()]
    groups: list[dict[str, Any]] = [
        {"params": lora, "lr": cfg.lr},
        {"params": [model.head_w, model.head_b], "lr": cfg.head_lr},
    ]
    if s.learn_lambda and any(model.ext_active):
        groups.append({"params": list(model.theta), "lr": cfg.head_lr})
    opt = torch.optim.AdamW(groups, weight_decay=0.0)
    n = model.n_clients
    for _ in range(cfg.local_steps):
        idx = (torch.rand((n, cfg.batch_size), generator=g) * n_k[:, None]).long().to(data_x.device)
        xb = torch.stack([data_x[k, idx[k]] for k in range(n)])
        yb = torch.stack([data_y[k, idx[k]] for k in range(n)])
        logits = model(xb)
        # sum over clients of each client's mean loss: client k's gradient is its own loss's gradient
        loss = (
            torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1), reduction="sum")
            / cfg.batch_size
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def _upload(model: ClientModel) -> dict[str, dict[str, np.ndarray]]:
    """What clients send: their cluster experts only (A and B per targeted map); lambda and head stay local."""
    return {
        "A": {k: v.detach().cpu().numpy().copy() for k, v in model.A_c.items()},
        "B": {k: v.detach().cpu().numpy().copy() for k, v in model.B_c.items()},
    }


def _server_aggregate(
    payload: dict[str, dict[str, np.ndarray]], s: Structure, n_k: np.ndarray, n_layers: int
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, np.ndarray]]]:
    """Per layer, per block: n-weighted averages of A and of B (separately, as FedIT; not of the product BA)."""
    clus: dict[str, dict[str, np.ndarray]] = {"A": {}, "B": {}}
    ext: dict[str, dict[str, np.ndarray]] = {"A": {}, "B": {}}
    for layer in range(n_layers):
        w_c, w_e = aggregation_weights(s.partitions[layer], n_k)
        for t in TARGETS:
            key = f"{layer}_{t}"
            for m in PAYLOAD_KEYS:
                x = payload[m][key]
                flat = x.reshape(x.shape[0], -1).astype(np.float64)
                clus[m][key] = (w_c @ flat).reshape(x.shape).astype(np.float32)
                ext[m][key] = (w_e @ flat).reshape(x.shape).astype(np.float32)
                # a singleton block keeps its own expert exactly (no round trip through float64 sums)
                single = np.array(
                    [np.sum(s.partitions[layer] == s.partitions[layer][k]) == 1 for k in range(x.shape[0])]
                )
                clus[m][key][single] = x[single]
    return clus, ext


def _evaluate(model: ClientModel, x: torch.Tensor, y: torch.Tensor, eval_batch: int) -> np.ndarray:
    correct = torch.zeros(model.n_clients, device=x.device)
    with torch.no_grad():
        for i in range(0, x.shape[1], eval_batch):
            pred = model(x[:, i : i + eval_batch]).argmax(-1)
            correct += (pred == y[:, i : i + eval_batch]).sum(1).float()
    return (correct / x.shape[1]).cpu().numpy()


def simulate(
    strategy: Strategy,
    clients: Sequence[Client],
    rounds: int,
    rng: np.random.Generator,
    *,
    backbone: Backbone,
    train: TrainConfig | None = None,
) -> FederatedRun:
    """Run ``strategy`` for ``rounds`` rounds over ``clients`` on the frozen ``backbone``.

    Rounds 1..E_warm of a clustering strategy are purely local; at the end of round E_warm clients upload
    their adapters, the server builds the structure (tree, cuts) from the uploaded B's and aggregates with it.
    """
    train = train or TrainConfig()
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a Strategy, got {type(strategy).__name__}")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds = {rounds!r}: must be an int >= 1")
    if not isinstance(backbone, Backbone):
        raise TypeError(f"backbone must be a Backbone, got {type(backbone).__name__}")
    seq_len = int(backbone.model.config.max_position_embeddings)
    _check_clients(clients, seq_len)
    if strategy.warmup_rounds >= rounds:
        raise ValueError(f"rounds = {rounds}: must exceed the strategy's warm-up ({strategy.warmup_rounds})")
    n, n_layers = len(clients), backbone.n_layers
    g_init, g_train = torch_generator(rng), torch_generator(rng)
    dev = torch.device(train.device)
    model = _to_device(ClientModel(backbone, n, train.rank, train.alpha, 2, g_init, pooling=train.pooling), dev)
    n_k = np.array([c.n_train for c in clients], dtype=float)
    n_max = int(n_k.max())
    x_tr = torch.zeros((n, n_max, seq_len), dtype=torch.long)
    y_tr = torch.zeros((n, n_max), dtype=torch.long)
    for k, c in enumerate(clients):
        x_tr[k, : c.n_train] = torch.as_tensor(c.x_train)
        y_tr[k, : c.n_train] = torch.as_tensor(c.y_train)
    x_te = torch.stack([torch.as_tensor(c.x_test) for c in clients])
    y_te = torch.stack([torch.as_tensor(c.y_test) for c in clients])
    x_tr, y_tr, x_te, y_te = x_tr.to(dev), y_tr.to(dev), x_te.to(dev), y_te.to(dev)
    n_k_t = torch.as_tensor(n_k)  # stays on the CPU with the batch draws

    s = strategy.initial(n, n_layers)
    _apply_structure(model, s, strategy.theta_init, fresh=True)
    floats_layer = len(TARGETS) * 2 * train.rank * backbone.d_model
    bytes_up = np.zeros((rounds, n), dtype=np.int64)
    bytes_down = np.zeros((rounds, n), dtype=np.int64)
    accs: list[np.ndarray] = []
    eval_rounds: list[int] = []
    sent: set[str] = set()
    for t in range(rounds):
        _local_training(model, s, x_tr, y_tr, n_k_t, train, g_train)
        payload = _upload(model)
        end_warm = t + 1 == strategy.warmup_rounds
        rebuild = (
            strategy.rebuild_every is not None
            and t + 1 > strategy.warmup_rounds
            and (t + 1 - strategy.warmup_rounds) % strategy.rebuild_every == 0
        )
        if end_warm or rebuild:
            # the structure needs every client's B: this round's upload is the full cluster expert
            B = [
                np.stack(
                    [np.concatenate([payload["B"][f"{layer}_{tt}"][k].ravel() for tt in TARGETS]) for k in range(n)]
                )
                for layer in range(n_layers)
            ]
            bytes_up[t] += n_layers * floats_layer * BYTES_PER_FLOAT
            s = strategy.build(B)
            _apply_structure(model, s, strategy.theta_init, fresh=end_warm)
        else:
            for layer in range(n_layers):
                bytes_up[t] += s.uploads(layer) * floats_layer * BYTES_PER_FLOAT
        if bytes_up[t].any():
            sent.update(PAYLOAD_KEYS)
        clus, ext = _server_aggregate(payload, s, n_k, n_layers)
        for layer in range(n_layers):
            has_e = s.has_external(layer)
            shared = np.array([np.sum(s.partitions[layer] == s.partitions[layer][k]) > 1 for k in range(n)])
            bytes_down[t] += (shared.astype(np.int64) + has_e) * floats_layer * BYTES_PER_FLOAT
        with torch.no_grad():
            for key in model.keys:
                model.A_c[key].copy_(torch.as_tensor(clus["A"][key]))
                model.B_c[key].copy_(torch.as_tensor(clus["B"][key]))
                model.A_e[key] = torch.as_tensor(ext["A"][key]).to(dev)
                model.B_e[key] = torch.as_tensor(ext["B"][key]).to(dev)
        if (t + 1) % train.eval_every == 0 or t + 1 == rounds:
            accs.append(_evaluate(model, x_te, y_te, train.eval_batch))
            eval_rounds.append(t + 1)
    lambdas = np.stack([torch.sigmoid(th).detach().cpu().numpy() for th in model.theta])
    state = {
        f"{m}.{k}": v.detach().cpu().numpy().copy()
        for m, d in (("A", model.A_c), ("B", model.B_c))
        for k, v in d.items()
    }
    state.update(
        {"head_w": model.head_w.detach().cpu().numpy().copy(), "head_b": model.head_b.detach().cpu().numpy().copy()}
    )
    return FederatedRun(
        strategy=strategy.name,
        eval_rounds=eval_rounds,
        acc=np.stack(accs),
        bytes_up=bytes_up,
        bytes_down=bytes_down,
        structure=s,
        lambdas=lambdas,
        tasks=[c.task for c in clients],
        sent_keys=sent,
        final_state=state,
    )
