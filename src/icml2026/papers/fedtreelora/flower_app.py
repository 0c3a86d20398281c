"""Flower app on the current Message API: a module-level ``ServerApp`` and ``ClientApp`` that ``flwr run`` starts in
simulation or on a deployment (SuperLink + one SuperNode per client), and an in-process driver for tests.

Both sides build the same federation from the run config (``preset``, ``seed``, ``strategy``, optional ``model``):
the experiment's config for that preset, the frozen backbone and the clients of its first sub-seed (synthetic data
are generated on each node from the seed; a deployment brings its own data through the same :class:`.data.Client`).
A SuperNode's ``partition-id`` (node config) names its client. The server sends each client its own payload (its
per-layer cluster and external experts, flags), collects the uploaded cluster experts (A and B only), builds the
tree after the warm-up and re-aggregates per layer per block with the simulator's server code; the clients keep
their lambdas, heads and batch generators in ``context.state``. On the same seed the accuracies equal the in-process
simulator's (:func:`run_in_process` and :func:`.simulator.simulate`, tested).

``pyproject.toml`` of a Flower app folder that runs it (``flwr run <folder>``)::

    [tool.flwr.app.components]
    serverapp = "icml2026.papers.fedtreelora.flower_app:server_app"
    clientapp = "icml2026.papers.fedtreelora.flower_app:client_app"
    [tool.flwr.app.config]
    preset = "quick"
    seed = 0
    strategy = "FedTreeLoRA"
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from icml2026.core import spawn
from icml2026.core.errors import require_module

from .baselines import FedALTScalar, FedIT, FedLEASEFlat, LocalOnly
from .data import TASKS, Client
from .method import FedTreeLoRA, Strategy, Structure
from .model import Backbone, ClientModel
from .simulator import (
    BYTES_PER_FLOAT,
    PAYLOAD_KEYS,
    FederatedRun,
    TrainConfig,
    _evaluate,
    _local_training,
    _prior_bias,
    _server_aggregate,
    client_seeds,
    layer_B,
)

require_module("flwr", "fedtreelora")

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, Metadata, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402

__all__ = [
    "Federation",
    "AppRun",
    "build_federation",
    "make_client_app",
    "server_loop",
    "run_in_process",
    "simulate_on_flower",
    "server_app",
    "client_app",
    "STRATEGIES",
]

#: the strategies the app runs, by the name the run config gives
STRATEGIES: dict[str, Callable[[Any], Strategy]] = {
    "FedTreeLoRA": lambda cfg: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup),
    "FedIT": lambda cfg: FedIT(),
    "Local": lambda cfg: LocalOnly(),
    "FedLEASE-flat": lambda cfg: FedLEASEFlat(tau=cfg.tau, warmup_rounds=cfg.warmup),
    "FedALT-scalar": lambda cfg: FedALTScalar(),
}
_STATE = "fedtreelora"


@dataclass
class Federation:
    """What server and clients agree on: config, backbone, clients, strategy and the simulation seed."""

    cfg: Any
    backbone: Backbone
    clients: list[Client]
    strategy: Strategy
    sim_seed: int
    #: one id per client: clients with equal ids draw the same batches (the planted control's copies)
    streams: list[int] | None = None
    #: local training of every client (default: the config's, evaluated every round)
    train_config: TrainConfig | None = None
    #: the shared-init seed and one batch seed per client (default: drawn from ``sim_seed`` as the simulator does)
    seeds: tuple[int, list[int]] | None = None

    @property
    def train(self) -> TrainConfig:
        return replace(self.train_config or self.cfg.train(), eval_every=1)


def build_federation(run_config: dict[str, Any]) -> Federation:
    """The federation of ``run_config``: the headline experiment's ``preset`` config (any of its fields given
    in the run config, ``-`` for ``_``, overrides it: ``model`` a checkpoint folder, ``rounds``, ...), its
    backbone, and the clients and simulation seed of its first sub-seed for ``seed``."""
    from icml2026.core import make_rng
    from icml2026.core.registry import get_experiment, import_paper

    from .experiments import _backbone, _for_backbone, _make_clients

    import_paper("fedtreelora")
    exp = get_experiment("fedtreelora.headline")
    cfg = exp.config(str(run_config.get("preset", "quick")))
    fields = {f.name for f in dataclasses.fields(cfg)} - {"control", "device"}
    overrides = {k.replace("-", "_"): v for k, v in run_config.items() if k.replace("-", "_") in fields}
    cfg = replace(cfg, **overrides)  # e.g. model = a checkpoint folder, n_train, rounds
    name = str(run_config.get("strategy", "FedTreeLoRA"))
    if name not in STRATEGIES:
        raise ValueError(f"strategy = {name!r}: must be one of {', '.join(STRATEGIES)}")
    rng = make_rng(int(run_config.get("seed", 0)))
    r_bb, r_runs = spawn(rng, 2)
    backbone = _backbone(cfg, r_bb)
    r_data, r_sim = spawn(spawn(r_runs, 1)[0], 2)
    tasks = [t for t in TASKS for _ in range(cfg.n_per_task)]
    clients, _ = _make_clients(cfg, tasks, r_data)
    return Federation(
        cfg, backbone, _for_backbone(clients, backbone), STRATEGIES[name](cfg), int(r_sim.integers(0, 2**63 - 1))
    )


# ---------------------------------------------------------------------------------------------------- client
def _client_model(fed: Federation, pid: int, context: Context) -> tuple[ClientModel, torch.Generator]:
    """Client ``pid``'s model and batch generator: the shared init, then its state from ``context.state``."""
    init_seed, batch_seeds = fed.seeds or client_seeds(np.random.default_rng(fed.sim_seed), len(fed.clients))
    tr = fed.train
    model = ClientModel(
        fed.backbone, 1, tr.rank, tr.alpha, 2, torch.Generator().manual_seed(init_seed), pooling=tr.pooling
    )
    if tr.prior_bias:
        _prior_bias(model, [fed.clients[pid]])
    gen = torch.Generator().manual_seed(batch_seeds[fed.streams[pid] if fed.streams is not None else pid])
    if _STATE in context.state:
        sd = context.state[_STATE].to_torch_state_dict()  # type: ignore[union-attr]
        gen.set_state(sd.pop("_gen").to(torch.uint8))
        model.load_state_dict(sd, strict=False)
    return model, gen


def _load(model: ClientModel, content: RecordDict) -> None:
    """The server's payload for this client (cluster and external experts, flags) into ``model``."""
    cfg = content["config"]
    arrays = content["arrays"].to_numpy_ndarrays() if "arrays" in content else []  # type: ignore[union-attr]
    n = len(model.keys)
    with torch.no_grad():
        if arrays:
            for i, k in enumerate(model.keys):
                model.A_c[k].copy_(torch.as_tensor(arrays[i]).unsqueeze(0))
                model.B_c[k].copy_(torch.as_tensor(arrays[n + i]).unsqueeze(0))
                model.A_e[k] = torch.as_tensor(arrays[2 * n + i]).unsqueeze(0)
                model.B_e[k] = torch.as_tensor(arrays[3 * n + i]).unsqueeze(0)
        flags = str(cfg["has_ext"])
        for layer in range(model.n_layers):
            on = flags[layer] == "1"
            model.has_ext[layer] = torch.tensor([on])
            model.ext_active[layer] = on
            if bool(cfg["reset_lambda"]):
                model.theta[layer].fill_(float(cfg["theta_init"]))  # type: ignore[arg-type]


def make_client_app(federation: Callable[[dict[str, Any]], Federation] = build_federation) -> ClientApp:
    """A ``ClientApp`` whose clients train and evaluate on the federation that ``federation(run_config)``
    builds (built once per run config in this process)."""
    app = ClientApp()
    built: dict[str, Federation] = {}

    def fed_of(context: Context) -> Federation:
        key = repr(sorted(context.run_config.items()))
        if key not in built:
            built[key] = federation(dict(context.run_config))
        return built[key]

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        fed = fed_of(context)
        pid = int(context.node_config["partition-id"])
        model, gen = _client_model(fed, pid, context)
        _load(model, msg.content)
        c = fed.clients[pid]
        s = Structure([np.zeros(1, int)] * model.n_layers, learn_lambda=bool(msg.content["config"]["learn_lambda"]))
        data = (torch.as_tensor(c.x_train)[None], torch.as_tensor(c.mask_train)[None], torch.as_tensor(c.y_train)[None])
        _local_training(model, s, data, torch.tensor([float(c.n_train)]), fed.train, [gen])
        sd = {
            k: v.detach().clone()
            for k, v in model.state_dict().items()
            if k.startswith(("A_c", "B_c", "theta", "head_"))
        }
        sd["_gen"] = gen.get_state().to(torch.int64)
        context.state[_STATE] = ArrayRecord(torch_state_dict=sd)
        # the upload: the cluster expert only (never theta / lambda, never the head)
        up = [model.A_c[k][0].detach().numpy().copy() for k in model.keys]
        up += [model.B_c[k][0].detach().numpy().copy() for k in model.keys]
        return Message(
            RecordDict({"arrays": ArrayRecord(up), "metrics": MetricRecord({"pid": pid, "num-examples": c.n_train})}),
            reply_to=msg,
        )

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        fed = fed_of(context)
        pid = int(context.node_config["partition-id"])
        model, _ = _client_model(fed, pid, context)
        _load(model, msg.content)
        c = fed.clients[pid]
        acc = _evaluate(
            model,
            torch.as_tensor(c.x_test)[None],
            torch.as_tensor(c.mask_test)[None],
            torch.as_tensor(c.y_test)[None],
            fed.train.eval_batch,
        )
        return Message(RecordDict({"metrics": MetricRecord({"pid": pid, "accuracy": float(acc[0])})}), reply_to=msg)

    return app


# ---------------------------------------------------------------------------------------------------- server
@dataclass
class AppRun:
    """What the server recorded: accuracy per round per client, upload bytes per round, the last structure."""

    acc: dict[int, np.ndarray] = field(default_factory=dict)
    bytes_up: dict[int, np.ndarray] = field(default_factory=dict)
    bytes_down: dict[int, np.ndarray] = field(default_factory=dict)
    structure: Structure | None = None


def _flags(s: Structure, k: int) -> str:
    return "".join("1" if s.has_external(layer)[k] else "0" for layer in range(len(s.partitions)))


def server_loop(grid: Grid, fed: Federation, timeout: float = 3600.0) -> AppRun:
    """The server side of ``fed``'s rounds on ``grid`` (step 5 of the method, per-client instructions)."""
    n = len(fed.clients)
    probe = ClientModel(fed.backbone, 1, 1, 1.0, 2, torch.Generator().manual_seed(0))
    layer_keys, keys = probe.layer_keys, probe.keys
    del probe
    deadline = time.monotonic() + timeout
    while len(list(grid.get_node_ids())) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {n} SuperNodes connected")
        time.sleep(1.0)
    nodes = sorted(grid.get_node_ids())[:n]
    strategy, out = fed.strategy, AppRun()
    structure = strategy.initial(n, fed.backbone.n_layers)
    pid_of: dict[int, int] = {}
    payload: dict[int, list[np.ndarray]] = {}
    n_k = np.array([c.n_train for c in fed.clients], float)
    reset = True

    def content(node: int, with_arrays: bool) -> RecordDict:
        pid = pid_of.get(node)
        rd = RecordDict(
            {
                "config": ConfigRecord(
                    {
                        "has_ext": _flags(structure, pid) if pid is not None else "0" * len(layer_keys),
                        "learn_lambda": structure.learn_lambda,
                        "reset_lambda": reset and with_arrays,
                        "theta_init": strategy.theta_init,
                    }
                )
            }
        )
        if pid is not None and pid in payload:
            rd["arrays"] = ArrayRecord(payload[pid])
        return rd

    for rnd in range(1, fed.cfg.rounds + 1):
        msgs = [grid.create_message(content(node, True), "train", node, str(rnd)) for node in nodes]
        replies = list(grid.send_and_receive(msgs, timeout=timeout))
        reset = False
        up: dict[int, list[np.ndarray]] = {}
        for r in replies:
            if r.has_error():
                raise RuntimeError(f"round {rnd}: a client failed: {r.error.reason}")
            pid = int(r.content["metrics"]["pid"])  # type: ignore[arg-type]
            pid_of[r.metadata.src_node_id] = pid
            up[pid] = r.content["arrays"].to_numpy_ndarrays()  # type: ignore[union-attr]
        if sorted(up) != list(range(n)):
            raise RuntimeError(f"round {rnd}: uploads from {sorted(up)}, expected all {n}")
        pl = {
            "A": {k: np.stack([up[c][i] for c in range(n)]) for i, k in enumerate(keys)},
            "B": {k: np.stack([up[c][len(keys) + i] for c in range(n)]) for i, k in enumerate(keys)},
        }
        if rnd == strategy.warmup_rounds:
            structure = strategy.build(layer_B(pl, layer_keys))
            reset = True
        out.bytes_up[rnd] = np.array([sum(a.size for a in up[c]) * BYTES_PER_FLOAT for c in range(n)])
        clus, ext = _server_aggregate(pl, structure, n_k, layer_keys)
        payload = {
            c: [clus[m][k][c] for m in ("A", "B") for k in keys] + [ext[m][k][c] for m in ("A", "B") for k in keys]
            for c in range(n)
        }
        # what the next messages carry to each client: its cluster and external experts (all layers)
        out.bytes_down[rnd] = np.array([sum(a.size for a in payload[c]) * BYTES_PER_FLOAT for c in range(n)])
        msgs = [grid.create_message(content(node, False), "evaluate", node, str(rnd)) for node in nodes]
        acc = np.full(n, np.nan)
        for r in grid.send_and_receive(msgs, timeout=timeout):
            acc[int(r.content["metrics"]["pid"])] = float(r.content["metrics"]["accuracy"])  # type: ignore[arg-type]
        out.acc[rnd] = acc
    out.structure = structure
    return out


server_app = ServerApp()
client_app = make_client_app()


@server_app.main()
def _main(grid: Grid, context: Context) -> None:
    fed = build_federation(dict(context.run_config))
    run = server_loop(grid, fed)
    last = max(run.acc)
    context.state["result"] = MetricRecord(
        {
            "mean_accuracy": float(np.mean(run.acc[last])),
            **{f"acc_client_{k}": float(a) for k, a in enumerate(run.acc[last])},
        }
    )


# ------------------------------------------------------------------------------------------ in-process driver
class InProcessGrid(Grid):  # type: ignore[misc]
    """A ``Grid`` that delivers each message to a ``ClientApp`` in this process (one context per node), in
    node order: Flower's message objects and app handlers without the Ray runtime."""

    def __init__(self, app: ClientApp, n_nodes: int, run_config: dict[str, Any]) -> None:
        self.app = app
        self._replies: dict[str, Message] = {}  # pushed, not yet pulled
        self._pulled: set[str] = set()
        self.contexts = {
            node: Context(
                run_id=0,
                node_id=node,
                node_config={"partition-id": node - 1, "num-partitions": n_nodes},
                state=RecordDict(),
                run_config=dict(run_config),
            )
            for node in range(1, n_nodes + 1)
        }
        self._count = 0

    def set_run(self, run: Any) -> None:
        pass

    @property
    def run(self) -> Any:
        return None

    def create_message(
        self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None
    ) -> Message:
        self._count += 1
        meta = Metadata(
            run_id=0,
            message_id=str(self._count),
            src_node_id=0,
            dst_node_id=dst_node_id,
            reply_to_message_id="",
            group_id=group_id,
            created_at=time.time(),
            ttl=ttl or 3600.0,
            message_type=message_type,
        )
        return Message(content=content, metadata=meta)  # type: ignore[call-overload]

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Deliver each message to its node at once (in process) and keep the reply under a new id."""
        ids = []
        for m in messages:
            ident = str(len(self._replies) + len(self._pulled))
            self._replies[ident] = self.app(m, self.contexts[m.metadata.dst_node_id])
            ids.append(ident)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        """The replies to pushed messages (each returned once, as a Grid does)."""
        out = []
        for ident in message_ids:
            if ident in self._replies:
                out.append(self._replies.pop(ident))
                self._pulled.add(ident)
        return out

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        return list(self.pull_messages(list(self.push_messages(messages))))


def run_in_process(run_config: dict[str, Any], federation: Federation | None = None) -> AppRun:
    """The app's server loop and client handlers for ``run_config``, delivered in this process."""
    fed = federation or build_federation(run_config)
    app = make_client_app(lambda rc: fed)
    return server_loop(InProcessGrid(app, len(fed.clients), run_config), fed)


def simulate_on_flower(
    strategy: Strategy,
    clients: Sequence[Client],
    rounds: int,
    rng: np.random.Generator,
    *,
    backbone: Backbone,
    train: TrainConfig | None = None,
    streams: Sequence[int] | None = None,
) -> FederatedRun:
    """:func:`.simulator.simulate`'s signature and result, computed by the Flower app: the ``ServerApp``'s loop
    and the ``ClientApp``'s handlers exchanging Flower ``Message`` objects (delivered in this process, one
    client model per node). The same ``rng`` gives the simulator's accuracies, structure and lambdas (tested);
    the byte counts are the app's messages (every client sends its whole cluster expert every round and
    receives its cluster and external experts), where the simulator counts what the method needs to send."""
    train = train or TrainConfig()
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a Strategy, got {type(strategy).__name__}")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds = {rounds!r}: must be an int >= 1")
    if not isinstance(backbone, Backbone):
        raise TypeError(f"backbone must be a Backbone, got {type(backbone).__name__}")
    if strategy.warmup_rounds >= rounds:
        raise ValueError(f"rounds = {rounds}: must exceed the strategy's warm-up ({strategy.warmup_rounds})")
    n = len(clients)
    if streams is not None and len(streams) != n:
        raise ValueError(f"streams: needs one id per client ({n}), got {len(streams)}")
    fed = Federation(
        SimpleNamespace(rounds=int(rounds)),
        backbone,
        list(clients),
        strategy,
        0,
        streams=[int(i) for i in streams] if streams is not None else None,
        train_config=train,
        seeds=client_seeds(rng, n),  # the simulator's draws from the same generator
    )
    grid = InProcessGrid(make_client_app(lambda rc: fed), n, {})
    app = server_loop(grid, fed)
    eval_rounds = [r for r in range(1, rounds + 1) if r % train.eval_every == 0 or r == rounds]
    # each client's lambdas after its last local training (kept in its node's state)
    states = [grid.contexts[node].state[_STATE].to_torch_state_dict() for node in sorted(grid.contexts)]  # type: ignore[union-attr]
    thetas = [torch.cat([sd[f"theta.{layer}"] for sd in states]) for layer in range(backbone.n_layers)]
    lambdas = np.stack([torch.sigmoid(th).numpy() for th in thetas])
    if app.structure is None:
        raise RuntimeError("the server loop ran no round")
    return FederatedRun(
        strategy=strategy.name,
        eval_rounds=eval_rounds,
        # float32, the simulator's dtype (each value is a client's float32 accuracy; the means then agree)
        acc=np.stack([app.acc[r] for r in eval_rounds]).astype(np.float32),
        bytes_up=np.stack([app.bytes_up[r] for r in range(1, rounds + 1)]).astype(np.int64),
        bytes_down=np.stack([app.bytes_down[r] for r in range(1, rounds + 1)]).astype(np.int64),
        structure=app.structure,
        lambdas=lambdas,
        tasks=[c.task for c in clients],
        label_rates=[c.label_rate for c in clients],
        sent_keys=set(PAYLOAD_KEYS),
    )
