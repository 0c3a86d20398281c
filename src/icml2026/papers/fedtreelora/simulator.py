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

from .data import Client
from .method import Strategy, Structure, aggregation_weights
from .model import TARGETS, Backbone, ClientModel
from .tree import MIN_CLIENTS

__all__ = [
    "TrainConfig",
    "FederatedRun",
    "simulate",
    "PAYLOAD_KEYS",
    "payload_floats",
    "stack_clients",
    "client_seeds",
    "layer_B",
]

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
    pooling: str = "mean"  # *ours*: mean of the last hidden states over the attention mask (or "cls")
    device: str = "cpu"  # torch device of the clients' models (inits and batch draws stay on the CPU)
    grad_accum: int = 1  # micro-batches of ``batch_size`` per local step (one optimiser step per group)
    prior_bias: bool = True  # *ours*: the local head's bias starts at the client's label log-frequencies


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
    balanced_acc: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (N,) after the last round
    label_rates: list[float] = field(default_factory=list)  # each client's positive-label rate (label skew)

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
    """Floats in one full cluster expert of our BERT (A: r x d and B: d x r for W_q and W_v of every layer)."""
    return n_layers * len(TARGETS) * 2 * rank * d_model


def _check_clients(clients: Sequence[Client], max_len: int) -> None:
    if isinstance(clients, Client) or not isinstance(clients, Sequence):
        raise TypeError("clients: expected a list of Client objects")
    if len(clients) < MIN_CLIENTS:
        raise ValueError(f"clients: needs at least {MIN_CLIENTS} clients, got {len(clients)}")
    for i, c in enumerate(clients):
        if not isinstance(c, Client):
            raise TypeError(f"clients[{i}]: expected a Client, got {type(c).__name__}")
        if c.x_train.ndim != 2 or c.x_test.ndim != 2 or max(c.x_train.shape[1], c.x_test.shape[1]) > max_len:
            raise ValueError(f"clients[{i}]: sequences must be (n, T) arrays with T <= {max_len} (the backbone's)")
        if c.mask_train.shape != c.x_train.shape or c.mask_test.shape != c.x_test.shape:
            raise ValueError(f"clients[{i}]: attention masks must have the shape of the token ids")
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
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    n_k: torch.Tensor,
    cfg: TrainConfig,
    gens: Sequence[torch.Generator],
) -> None:
    """E local AdamW steps for every client.

    # Deviation (*ours*): fresh optimiser state every round (clients receive new weights from the server).

    ``data`` = (token ids (N, n_max, T), attention masks, labels (N, n_max)); client k's batches are drawn
    from its own generator ``gens[k]`` (so a client run alone, as on Flower, draws the same batches)."""
    data_x, data_m, data_y = data
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
        opt.zero_grad(set_to_none=True)
        for _ in range(cfg.grad_accum):
            idx = torch.stack([(torch.rand(cfg.batch_size, generator=gens[k]) * n_k[k]).long() for k in range(n)]).to(
                data_x.device
            )
            xb = torch.stack([data_x[k, idx[k]] for k in range(n)])
            mb = torch.stack([data_m[k, idx[k]] for k in range(n)])
            yb = torch.stack([data_y[k, idx[k]] for k in range(n)])
            logits = model(xb, mb)
            # sum over clients of each client's mean loss: client k's gradient is its own loss's gradient
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), yb.reshape(-1), reduction="sum"
            ) / (cfg.batch_size * cfg.grad_accum)
            loss.backward()
        opt.step()


def _upload(model: ClientModel) -> dict[str, dict[str, np.ndarray]]:
    """What clients send: their cluster experts only (A and B per targeted map); lambda and head stay local."""
    return {
        "A": {k: v.detach().cpu().numpy().copy() for k, v in model.A_c.items()},
        "B": {k: v.detach().cpu().numpy().copy() for k, v in model.B_c.items()},
    }


def _server_aggregate(
    payload: dict[str, dict[str, np.ndarray]], s: Structure, n_k: np.ndarray, layer_keys: Sequence[Sequence[str]]
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, np.ndarray]]]:
    """Per layer, per block: n-weighted averages of A and of B (separately, as FedIT; not of the product BA)."""
    clus: dict[str, dict[str, np.ndarray]] = {"A": {}, "B": {}}
    ext: dict[str, dict[str, np.ndarray]] = {"A": {}, "B": {}}
    for layer, keys in enumerate(layer_keys):
        w_c, w_e = aggregation_weights(s.partitions[layer], n_k)
        # a singleton block keeps its own expert exactly (no round trip through float64 sums)
        p = s.partitions[layer]
        single = np.array([np.sum(p == p[k]) == 1 for k in range(p.shape[0])])
        for key in keys:
            for m in PAYLOAD_KEYS:
                x = payload[m][key]
                flat = x.reshape(x.shape[0], -1).astype(np.float64)
                clus[m][key] = (w_c @ flat).reshape(x.shape).astype(np.float32)
                ext[m][key] = (w_e @ flat).reshape(x.shape).astype(np.float32)
                clus[m][key][single] = x[single]
    return clus, ext


def layer_B(payload: dict[str, dict[str, np.ndarray]], layer_keys: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Per layer, (N, ...) the clients' B's of every targeted map concatenated (what the tree is built from)."""
    return [
        np.concatenate([payload["B"][k].reshape(payload["B"][k].shape[0], -1) for k in keys], axis=1)
        for keys in layer_keys
    ]


def _predict(model: ClientModel, x: torch.Tensor, m: torch.Tensor, eval_batch: int) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat(
            [
                model(x[:, i : i + eval_batch], m[:, i : i + eval_batch]).argmax(-1)
                for i in range(0, x.shape[1], eval_batch)
            ],
            dim=1,
        )


def _evaluate(model: ClientModel, x: torch.Tensor, m: torch.Tensor, y: torch.Tensor, eval_batch: int) -> np.ndarray:
    """(N,) accuracy of each client on its own test split."""
    return (_predict(model, x, m, eval_batch) == y).float().mean(1).cpu().numpy()


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N,) mean over the classes present in client k's test labels of the recall of that class."""
    out = []
    for p, t in zip(pred, y, strict=True):
        out.append(float(np.mean([np.mean(p[t == c] == c) for c in np.unique(t)])))
    return np.array(out)


def stack_clients(clients: Sequence[Client]) -> dict[str, torch.Tensor]:
    """The clients' data as padded tensors: train / test token ids (N, n, T), masks and labels; T is the
    longest sequence of any client (shorter ones padded with masked zeros), train sets padded to the largest."""
    n = len(clients)
    t = max(max(c.x_train.shape[1], c.x_test.shape[1]) for c in clients)
    n_max = max(c.n_train for c in clients)
    n_te = clients[0].x_test.shape[0]
    out = {
        "x_tr": torch.zeros((n, n_max, t), dtype=torch.long),
        "m_tr": torch.zeros((n, n_max, t), dtype=torch.long),
        "y_tr": torch.zeros((n, n_max), dtype=torch.long),
        "x_te": torch.zeros((n, n_te, t), dtype=torch.long),
        "m_te": torch.zeros((n, n_te, t), dtype=torch.long),
        "y_te": torch.zeros((n, n_te), dtype=torch.long),
    }
    for k, c in enumerate(clients):
        out["x_tr"][k, : c.n_train, : c.x_train.shape[1]] = torch.as_tensor(c.x_train)
        out["m_tr"][k, : c.n_train, : c.x_train.shape[1]] = torch.as_tensor(c.mask_train)
        out["y_tr"][k, : c.n_train] = torch.as_tensor(c.y_train)
        out["x_te"][k, :, : c.x_test.shape[1]] = torch.as_tensor(c.x_test)
        out["m_te"][k, :, : c.x_test.shape[1]] = torch.as_tensor(c.mask_test)
        out["y_te"][k] = torch.as_tensor(c.y_test)
    return out


def _prior_bias(model: ClientModel, clients: Sequence[Client]) -> None:
    """Start each client's head bias at its training labels' log-frequencies (add-one smoothed).

    # Deviation (issue 62, *ours*): with Dirichlet label skew and a zero bias, the first local steps spend the
    # adapters on the client's class prior, so the warm-up B's measured label skew (distance correlation
    # 0.6-0.9 with the clients' label-rate gap), not the task; the prior is local information of the head."""
    with torch.no_grad():
        for k, c in enumerate(clients):
            counts = np.bincount(c.y_train, minlength=model.head_b.shape[1]) + 1.0
            model.head_b[k] = torch.as_tensor(np.log(counts / counts.sum()), dtype=model.head_b.dtype)


def client_seeds(rng: np.random.Generator, n_clients: int) -> tuple[int, list[int]]:
    """The seed of the shared initialisation (A, head) and one batch-stream seed per client."""
    return int(rng.integers(0, 2**62)), [int(s) for s in rng.integers(0, 2**62, n_clients)]


def simulate(
    strategy: Strategy,
    clients: Sequence[Client],
    rounds: int,
    rng: np.random.Generator,
    *,
    backbone: Backbone,
    train: TrainConfig | None = None,
    streams: Sequence[int] | None = None,
) -> FederatedRun:
    """Run ``strategy`` for ``rounds`` rounds over ``clients`` on the frozen ``backbone``.

    Rounds 1..E_warm of a clustering strategy are purely local; at the end of round E_warm clients upload
    their adapters, the server builds the structure (tree, cuts) from the uploaded B's and aggregates with it.
    ``streams``: one id per client; clients with equal ids draw the same batches (the planted control's copies).
    """
    train = train or TrainConfig()
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a Strategy, got {type(strategy).__name__}")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds = {rounds!r}: must be an int >= 1")
    if not isinstance(backbone, Backbone):
        raise TypeError(f"backbone must be a Backbone, got {type(backbone).__name__}")
    _check_clients(clients, backbone.max_len)
    if strategy.warmup_rounds >= rounds:
        raise ValueError(f"rounds = {rounds}: must exceed the strategy's warm-up ({strategy.warmup_rounds})")
    n, n_layers = len(clients), backbone.n_layers
    init_seed, batch_seeds = client_seeds(rng, n)
    if streams is not None:  # clients with equal stream ids draw the same batches (a planted control)
        if len(streams) != n:
            raise ValueError(f"streams: needs one id per client ({n}), got {len(streams)}")
        batch_seeds = [batch_seeds[int(i)] for i in streams]
    gens = [torch.Generator().manual_seed(s) for s in batch_seeds]
    dev = torch.device(train.device)
    g_init = torch.Generator().manual_seed(init_seed)
    model = _to_device(ClientModel(backbone, n, train.rank, train.alpha, 2, g_init, pooling=train.pooling), dev)
    n_k = np.array([c.n_train for c in clients], dtype=float)
    if train.prior_bias:
        _prior_bias(model, clients)
    d = {k: v.to(dev) for k, v in stack_clients(clients).items()}
    n_k_t = torch.as_tensor(n_k)  # stays on the CPU with the batch draws

    s = strategy.initial(n, n_layers)
    _apply_structure(model, s, strategy.theta_init, fresh=True)
    floats_layer = [model.layer_floats(layer) for layer in range(n_layers)]
    bytes_up = np.zeros((rounds, n), dtype=np.int64)
    bytes_down = np.zeros((rounds, n), dtype=np.int64)
    accs: list[np.ndarray] = []
    eval_rounds: list[int] = []
    sent: set[str] = set()
    for t in range(rounds):
        _local_training(model, s, (d["x_tr"], d["m_tr"], d["y_tr"]), n_k_t, train, gens)
        payload = _upload(model)
        end_warm = t + 1 == strategy.warmup_rounds
        rebuild = (
            strategy.rebuild_every is not None
            and t + 1 > strategy.warmup_rounds
            and (t + 1 - strategy.warmup_rounds) % strategy.rebuild_every == 0
        )
        if end_warm or rebuild:
            # the structure needs every client's B: this round's upload is the full cluster expert
            bytes_up[t] += sum(floats_layer) * BYTES_PER_FLOAT
            s = strategy.build(layer_B(payload, model.layer_keys))
            _apply_structure(model, s, strategy.theta_init, fresh=end_warm)
        else:
            for layer in range(n_layers):
                bytes_up[t] += s.uploads(layer) * floats_layer[layer] * BYTES_PER_FLOAT
        if bytes_up[t].any():
            sent.update(PAYLOAD_KEYS)
        clus, ext = _server_aggregate(payload, s, n_k, model.layer_keys)
        for layer in range(n_layers):
            has_e = s.has_external(layer)
            shared = np.array([np.sum(s.partitions[layer] == s.partitions[layer][k]) > 1 for k in range(n)])
            bytes_down[t] += (shared.astype(np.int64) + has_e) * floats_layer[layer] * BYTES_PER_FLOAT
        with torch.no_grad():
            for key in model.keys:
                model.A_c[key].copy_(torch.as_tensor(clus["A"][key]))
                model.B_c[key].copy_(torch.as_tensor(clus["B"][key]))
                model.A_e[key] = torch.as_tensor(ext["A"][key]).to(dev)
                model.B_e[key] = torch.as_tensor(ext["B"][key]).to(dev)
        if (t + 1) % train.eval_every == 0 or t + 1 == rounds:
            accs.append(_evaluate(model, d["x_te"], d["m_te"], d["y_te"], train.eval_batch))
            eval_rounds.append(t + 1)
    pred = _predict(model, d["x_te"], d["m_te"], train.eval_batch).cpu().numpy()
    bal = balanced_accuracy(pred, d["y_te"].cpu().numpy())
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
        label_rates=[c.label_rate for c in clients],
        sent_keys=sent,
        final_state=state,
        balanced_acc=bal,
    )
