"""Flower adapter: the same strategies on Flower's engine (``flwr`` legacy Strategy API, simulation runtime).

The server-side :class:`FlowerTreeStrategy` sends every client ITS OWN instructions (Flower allows a
different ``FitIns`` per client): that client's per-layer (cluster, external) payload and flags. Clients
(:class:`LoRAClient`) keep their lambdas and classification head in Flower's per-node ``context.state`` and
upload only their cluster expert (A and B of W_q, W_v of every layer); their data never leave them.
The aggregation is the simulator's (:func:`.simulator._server_aggregate`), so both engines share one server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml2026.core.errors import require_module

from .data import Client
from .method import Strategy, Structure
from .model import Backbone, ClientModel
from .simulator import (
    BYTES_PER_FLOAT,
    TrainConfig,
    _evaluate,
    _local_training,
    _prior_bias,
    _server_aggregate,
    client_seeds,
    layer_B,
)

require_module("flwr", "fedtreelora")

import flwr.server.strategy  # noqa: E402
from flwr.client import ClientApp, NumPyClient  # noqa: E402
from flwr.common import (  # noqa: E402
    ArrayRecord,
    Context,
    EvaluateIns,
    FitIns,
    Parameters,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.server import ServerApp, ServerAppComponents, ServerConfig  # noqa: E402

__all__ = ["FlowerTreeStrategy", "LoRAClient", "FlowerRun", "run_flower"]

_STATE = "fedtreelora"


@dataclass
class FlowerRun:
    """What a Flower run recorded on the server: accuracy per round per client, bytes, the structure."""

    acc: dict[int, np.ndarray] = field(default_factory=dict)
    bytes_up: dict[int, np.ndarray] = field(default_factory=dict)
    structure: Structure | None = None
    upload_arrays: int = 0  # arrays per client upload (2 per targeted map: A and B)


def _flags(s: Structure, k: int) -> str:
    return "".join("1" if s.has_external(layer)[k] else "0" for layer in range(len(s.partitions)))


class FlowerTreeStrategy(flwr.server.strategy.Strategy):  # type: ignore[misc]
    """Per-client (cluster, external) instructions, per-layer per-block re-aggregation (step 5 on Flower)."""

    def __init__(self, strategy: Strategy, n_clients: int, layer_keys: list[list[str]], n_k: np.ndarray) -> None:
        self.strategy, self.n_clients, self.n_layers = strategy, n_clients, len(layer_keys)
        self.n_k = np.asarray(n_k, float)
        self.layer_keys = layer_keys
        self.keys = [k for keys in layer_keys for k in keys]
        self.structure = strategy.initial(n_clients, self.n_layers)
        self.pid_of: dict[str, int] = {}
        self.payload: dict[int, list[np.ndarray]] = {}
        self.fresh_lambda = True
        self.run = FlowerRun()

    def initialize_parameters(self, client_manager: Any) -> Parameters:
        return ndarrays_to_parameters([])  # no global model: every client starts from the shared init

    def _ins(self, proxy: Any) -> tuple[Parameters, dict[str, Any]]:
        pid = self.pid_of.get(proxy.cid)
        arrays = self.payload.get(pid, []) if pid is not None else []
        flags = _flags(self.structure, pid) if pid is not None else "0" * self.n_layers
        return ndarrays_to_parameters(arrays), {
            "has_ext": flags,
            "learn_lambda": self.structure.learn_lambda,
            "reset_lambda": self.fresh_lambda,
        }

    def configure_fit(self, server_round: int, parameters: Parameters, client_manager: Any) -> list[Any]:
        client_manager.wait_for(self.n_clients)
        proxies = sorted(client_manager.all().values(), key=lambda p: str(p.cid))
        out = []
        for p in proxies:
            params, cfg = self._ins(p)
            out.append((p, FitIns(params, cfg)))
        self.fresh_lambda = False
        return out

    def aggregate_fit(self, server_round: int, results: list[Any], failures: list[Any]) -> tuple[Any, dict]:
        if failures:
            raise RuntimeError(f"{len(failures)} Flower client(s) failed in round {server_round}")
        up: dict[int, list[np.ndarray]] = {}
        for proxy, res in results:
            pid = int(res.metrics["pid"])
            self.pid_of[proxy.cid] = pid
            up[pid] = parameters_to_ndarrays(res.parameters)
        if sorted(up) != list(range(self.n_clients)):
            raise RuntimeError(f"round {server_round}: uploads from {sorted(up)}, expected all {self.n_clients}")
        n_keys = len(self.keys)
        self.run.upload_arrays = len(up[0])
        payload = {
            "A": {k: np.stack([up[c][i] for c in range(self.n_clients)]) for i, k in enumerate(self.keys)},
            "B": {k: np.stack([up[c][n_keys + i] for c in range(self.n_clients)]) for i, k in enumerate(self.keys)},
        }
        if server_round == self.strategy.warmup_rounds:
            self.structure = self.strategy.build(layer_B(payload, self.layer_keys))
            self.fresh_lambda = True
        self.run.bytes_up[server_round] = np.array(
            [sum(a.size for a in up[c]) * BYTES_PER_FLOAT for c in range(self.n_clients)]
        )
        clus, ext = _server_aggregate(payload, self.structure, self.n_k, self.layer_keys)
        self.payload = {
            c: [clus[m][k][c] for m in ("A", "B") for k in self.keys]
            + [ext[m][k][c] for m in ("A", "B") for k in self.keys]
            for c in range(self.n_clients)
        }
        self.run.structure = self.structure
        return None, {}

    def configure_evaluate(self, server_round: int, parameters: Parameters, client_manager: Any) -> list[Any]:
        proxies = sorted(client_manager.all().values(), key=lambda p: str(p.cid))
        return [(p, EvaluateIns(*self._ins(p))) for p in proxies]

    def aggregate_evaluate(self, server_round: int, results: list[Any], failures: list[Any]) -> tuple[Any, dict]:
        acc = np.full(self.n_clients, np.nan)
        for _, res in results:
            acc[int(res.metrics["pid"])] = float(res.metrics["accuracy"])
        self.run.acc[server_round] = acc
        return None, {"accuracy": float(np.nanmean(acc))}

    def evaluate(self, server_round: int, parameters: Parameters) -> None:
        return None


class LoRAClient(NumPyClient):  # type: ignore[misc]
    """One Flower client: its own data, its adapters; lambda and head persist locally in ``context.state``."""

    def __init__(
        self,
        pid: int,
        client: Client,
        backbone: Backbone,
        train: TrainConfig,
        init_seed: int,
        batch_seed: int,
        context: Context,
    ) -> None:
        self.pid, self.client, self.train, self.context = pid, client, train, context
        g = torch.Generator().manual_seed(init_seed)  # the shared init of A and of the head (as in simulate)
        self.model = ClientModel(backbone, 1, train.rank, train.alpha, 2, g, pooling=train.pooling)
        if train.prior_bias:
            _prior_bias(self.model, [client])
        self.keys = self.model.keys
        self.gen = torch.Generator().manual_seed(batch_seed)  # this client's batch stream (as in simulate)
        if _STATE in context.state:
            rec = context.state[_STATE]
            if not isinstance(rec, ArrayRecord):
                raise TypeError(f"context.state[{_STATE!r}] is a {type(rec).__name__}, expected an ArrayRecord")
            sd = rec.to_torch_state_dict()
            self.gen.set_state(sd.pop("_gen").to(torch.uint8))
            self.model.load_state_dict(sd, strict=False)

    def _load(self, parameters: list[np.ndarray], config: dict[str, Any]) -> None:
        n_keys = len(self.keys)
        flags = str(config["has_ext"])
        with torch.no_grad():
            if parameters:
                for i, k in enumerate(self.keys):
                    self.model.A_c[k].copy_(torch.as_tensor(parameters[i]).unsqueeze(0))
                    self.model.B_c[k].copy_(torch.as_tensor(parameters[n_keys + i]).unsqueeze(0))
                    self.model.A_e[k] = torch.as_tensor(parameters[2 * n_keys + i]).unsqueeze(0)
                    self.model.B_e[k] = torch.as_tensor(parameters[3 * n_keys + i]).unsqueeze(0)
            for layer in range(self.model.n_layers):
                on = flags[layer] == "1"
                self.model.has_ext[layer] = torch.tensor([on])
                self.model.ext_active[layer] = on
                if config.get("reset_lambda"):
                    self.model.theta[layer].fill_(2.0)

    def _save(self) -> None:
        sd = {
            k: v.detach().clone()
            for k, v in self.model.state_dict().items()
            if k.startswith(("A_c", "B_c", "theta", "head_"))
        }
        sd["_gen"] = self.gen.get_state().to(torch.int64)
        self.context.state[_STATE] = ArrayRecord(torch_state_dict=sd)

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]) -> tuple[list[np.ndarray], int, dict]:
        self._load(parameters, config)
        s = Structure([np.zeros(1, int)] * self.model.n_layers, learn_lambda=bool(config["learn_lambda"]))
        data = (
            torch.as_tensor(self.client.x_train).unsqueeze(0),
            torch.as_tensor(self.client.mask_train).unsqueeze(0),
            torch.as_tensor(self.client.y_train).unsqueeze(0),
        )
        _local_training(self.model, s, data, torch.tensor([float(self.client.n_train)]), self.train, [self.gen])
        self._save()
        # the upload: the cluster expert only (never theta / lambda, never the head)
        out = [self.model.A_c[k][0].detach().numpy().copy() for k in self.keys]
        out += [self.model.B_c[k][0].detach().numpy().copy() for k in self.keys]
        return out, self.client.n_train, {"pid": self.pid}

    def evaluate(self, parameters: list[np.ndarray], config: dict[str, Any]) -> tuple[float, int, dict]:
        self._load(parameters, {**config, "reset_lambda": False})
        x = torch.as_tensor(self.client.x_test).unsqueeze(0)
        m = torch.as_tensor(self.client.mask_test).unsqueeze(0)
        y = torch.as_tensor(self.client.y_test).unsqueeze(0)
        acc = float(_evaluate(self.model, x, m, y, self.train.eval_batch)[0])
        return 1.0 - acc, int(x.shape[1]), {"pid": self.pid, "accuracy": acc}


def run_flower(
    strategy: Strategy,
    clients: Sequence[Client],
    rounds: int,
    rng: np.random.Generator,
    *,
    backbone: Backbone,
    train: TrainConfig | None = None,
    backend_config: dict[str, Any] | None = None,
) -> FlowerRun:
    """Run ``strategy`` on Flower's simulation engine (Ray) with one SuperNode per client."""
    from flwr.simulation import run_simulation

    train = train or TrainConfig()
    if len(clients) < 3:
        raise ValueError(f"clients: needs at least 3 clients, got {len(clients)}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds <= strategy.warmup_rounds:
        raise ValueError(f"rounds = {rounds!r}: must be an int > the warm-up ({strategy.warmup_rounds})")
    init_seed, batch_seeds = client_seeds(rng, len(clients))  # the simulator's seeds for the same rng
    probe = ClientModel(backbone, 1, train.rank, train.alpha, 2, torch.Generator().manual_seed(0))
    fs = FlowerTreeStrategy(strategy, len(clients), probe.layer_keys, np.array([c.n_train for c in clients]))
    del probe
    data = list(clients)

    def client_fn(context: Context) -> Any:
        torch.set_num_threads(1)
        pid = int(context.node_config["partition-id"])
        return LoRAClient(pid, data[pid], backbone, train, init_seed, batch_seeds[pid], context).to_client()

    def server_fn(context: Context) -> ServerAppComponents:
        return ServerAppComponents(strategy=fs, config=ServerConfig(num_rounds=rounds))

    cfg = backend_config or {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {"num_cpus": 1, "include_dashboard": False},
    }
    run_simulation(
        server_app=ServerApp(server_fn=server_fn),
        client_app=ClientApp(client_fn=client_fn),
        num_supernodes=len(clients),
        backend_config=cfg,
    )
    return fs.run
