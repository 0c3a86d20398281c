"""Registered experiments of fedtreelora: the headline table, the ablations and the coupling sweep.

Every experiment pre-trains one small frozen backbone (masked LM on a task-agnostic corpus), then loops over
``n_seeds`` sub-seeds; within a sub-seed every method sees the same clients, the same initial adapters and
the same batch stream (a paired comparison). Claims are stated on the mean over sub-seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.loaders import check_model_path
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track

from .baselines import FedALTScalar, FedIT, FedLEASEFlat, FedPerLoRA, LocalOnly
from .data import TASKS, Client, make_clients, make_corpus, make_task_data
from .method import FedTreeLoRA, Strategy
from .model import Backbone, BackboneConfig, load_backbone, pooled_features, pretrain_backbone, tokenize_clients
from .simulator import FederatedRun, TrainConfig, simulate
from .tree import _phi, is_refinement


@config
class FedConfig:
    """Scale of one run (brief's values in the comments; CPU-scale defaults).

    # Deviation: a smaller backbone (4 layers, d = 32) and adapter learning rate 3e-3 (brief: 6 layers, d = 128,
    # lr 1e-3) for 2 CPU cores; the local classification head and its learning rate are *ours* (see the card).
    """

    n_seeds: int = param(3, 1, 5, help="sub-seeds (clients, inits, batches) per run")
    n_per_task: int = param(5, 1, 10, help="clients per task (brief: 5 -> 20 clients over 4 tasks)")
    n_train: int = param(400, 8, 1000, help="train examples per client (brief: 400)")
    n_test: int = param(200, 8, 500, help="test examples per client (brief: 200)")
    dirichlet: float = param(0.5, 0.05, 100.0, help="label-skew Dirichlet alpha (brief: 0.5)")
    rounds: int = param(30, 2, 60, help="total rounds incl. warm-up (brief: 3 + 27)")
    warmup: int = param(3, 1, 10, help="E_warm local rounds before the tree (brief: 3)")
    local_steps: int = param(20, 1, 40, help="local AdamW steps per round (brief: 20)")
    batch_size: int = param(32, 2, 64, help="local batch (brief: 32)")
    grad_accum: int = param(1, 1, 64, help="micro-batches per local step (gradient accumulation)")
    lr: float = param(3e-3, 1e-5, 0.3, help="LoRA learning rate (brief: 1e-3; see card)")
    head_lr: float = param(3e-2, 1e-5, 0.3, help="local head and lambda learning rate")
    rank: int = param(4, 1, 16, help="LoRA rank (brief: 4); alpha = 2 * rank")
    n_layers: int = param(4, 2, 8, help="backbone layers (brief: 6)")
    d_model: int = param(32, 8, 128, help="backbone width (brief: 128)")
    n_heads: int = param(2, 1, 8, help="attention heads (brief: 4)")
    seq_len: int = param(12, 10, 48, help="longest sequence, padding included (brief: 48)")
    pretrain_steps: int = param(0, 0, 1000, help="masked-LM pre-training steps of the backbone (see card)")
    corpus_size: int = param(2000, 64, 10000, help="pre-training corpus size")
    K: int = param(2, 1, 6, help="cut window width (ours: 2)")
    tau: float = param(0.25, 0.0, 1.0, lo_open=True, hi_open=True, help="phi(1) (ours: 0.25)")
    eval_every: int = param(5, 1, 60, help="evaluate every this many rounds (and after the last)")
    all_depths: int = param(
        1, 0, 1, help="coupling: FedPer-LoRA at every depth k = 0..L (1) or only k = 0 and k = L (0, quick)"
    )
    model: str = param(
        "",
        help="a local Hugging Face folder (AutoModel: BERT, RoBERTa, Llama-class) used as "
        "the frozen backbone instead of the small BERT built here",
    )
    dtype: str = param("float32", choices=("float32", "bfloat16"), help="dtype of a loaded backbone (model=)")
    control: str = param(
        "none",
        choices=("none", "planted", "null"),
        help="replace the compared arm by a control of the comparative checks (see the card)",
    )
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")
    engine: str = param(
        "simulator",
        choices=("simulator", "flower"),
        help="simulator: clients trained side by side in one batched pass; flower: the Flower app's ServerApp "
        "and ClientApp exchanging messages, one client model per node (same numbers on the same seed)",
    )

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.warmup >= self.rounds:
            raise ValueError(f"warmup = {self.warmup}: must be < rounds = {self.rounds}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads = {self.n_heads}: must divide d_model = {self.d_model}")
        if self.model:
            check_model_path(self.model, key="model", kinds=("hf",))

    def train(self) -> TrainConfig:
        return TrainConfig(
            rank=self.rank,
            alpha=2.0 * self.rank,
            local_steps=self.local_steps,
            batch_size=self.batch_size,
            grad_accum=self.grad_accum,
            lr=self.lr,
            head_lr=self.head_lr,
            eval_every=self.eval_every,
            device=self.device,
        )


_SMOKE: dict[str, Any] = dict(
    n_seeds=1,
    n_per_task=1,
    n_train=16,
    n_test=8,
    rounds=3,
    warmup=1,
    local_steps=1,
    batch_size=4,
    n_layers=2,
    d_model=16,
    seq_len=10,
    pretrain_steps=0,
    corpus_size=64,
)
# quick: 12 clients (3 per task), 8 rounds of 10 steps, one sub-seed (the headline is over runner seeds 0-2)
_QUICK: dict[str, Any] = dict(
    n_seeds=1,
    n_per_task=3,
    n_train=160,
    # Deviation (issue 62, after the controls): 300 test examples per client (was 100); see _paired
    n_test=300,
    rounds=8,
    warmup=2,
    local_steps=10,
    batch_size=16,
    corpus_size=600,
    eval_every=4,
)

#: preconditions (fixed before the runs of issue 62): a logistic-regression probe on the frozen backbone's
#: pooled features reads every task (balanced labels; chance 0.5), so the features are not collapsed ...
PROBE_BAR = 0.70
#: ... and Local training learns every task: accuracy of Local on the run's tasks and schedule, clients with
#: balanced labels (chance 0.5), averaged over each task's clients
LOCAL_BAR = 0.65
#: the paper's effect sizes (GLUE avg, points) used by the planted controls
PAPER_GAIN_OVER_FEDIT = 92.36 - 87.20
PAPER_GAIN_OVER_FEDLEASE = 92.36 - 91.19
PAPER_GAIN_OVER_INDEPENDENT = 92.36 - 89.47
PAPER_GAIN_OVER_FIXED = 92.36 - 91.45
#: a null arm for a non-inferiority margin of 0.5 points: this many points worse than the reference
NULL_BELOW_MARGIN = 1.5


def _engine(cfg: FedConfig) -> Callable[..., FederatedRun]:
    """The function that runs one federation: :func:`.simulator.simulate`, or the Flower app with its signature
    (:func:`.flower_app.simulate_on_flower`; needs ``flwr``)."""
    if cfg.engine == "flower":
        from .flower_app import simulate_on_flower

        return simulate_on_flower
    return simulate


def _backbone(cfg: FedConfig, rng: np.random.Generator) -> Backbone:
    if cfg.model:
        # a user's checkpoint, read through the core loader; nothing is pre-trained here
        return load_backbone(cfg.model, dtype=cfg.dtype, device=str(resolve_device(cfg.device)))
    bc = BackboneConfig(n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads, seq_len=cfg.seq_len)
    r_corpus, r_pre = spawn(rng, 2)
    if cfg.pretrain_steps == 0:
        # Deviation (issue 62): no MLM pre-training by default; 150 steps collapsed the features (spread
        # across inputs 0.021 against 0.154 untrained) and Local learned nothing. The probe precondition
        # checks the frozen features carry every task.
        bb = Backbone.from_config(bc, seed=int(r_pre.integers(0, 2**31 - 1)))
        bb.model.to(resolve_device(cfg.device))
        return bb
    return pretrain_backbone(
        make_corpus(cfg.corpus_size, cfg.seq_len, r_corpus),
        bc,
        cfg.pretrain_steps,
        64,
        3e-3,
        r_pre,
        device=resolve_device(cfg.device),
    )


def _for_backbone(clients: list[Client], backbone: Backbone) -> list[Client]:
    """The clients' data in the backbone's own tokens (a loaded checkpoint's tokenizer), else as they are."""
    if backbone.tokenizer is None:
        return clients
    return tokenize_clients(clients, backbone.tokenizer, backbone.max_len)


def _frozen_probe(cfg: FedConfig, backbone: Backbone, rng: np.random.Generator, n: int = 200) -> dict[str, float]:
    """Precondition: per task, a logistic-regression probe's test accuracy on the frozen pooled features
    (``n`` balanced train and ``n`` test examples)."""
    out = {}
    for task in TASKS:
        y = np.tile([0, 0, 1, 1], n // 2)  # every other example to train: balanced halves
        x = make_task_data(task, y, cfg.seq_len, rng)
        (c,) = _for_backbone([Client(x[::2], y[::2], x[1::2], y[1::2], task)], backbone)
        f_tr = pooled_features(backbone, c.x_train, c.mask_train)
        f_te = pooled_features(backbone, c.x_test, c.mask_test)
        scaler = StandardScaler().fit(f_tr)
        probe = LogisticRegression(max_iter=2000).fit(scaler.transform(f_tr), c.y_train)
        out[task] = float(probe.score(scaler.transform(f_te), c.y_test))
    return out


def _make_clients(
    cfg: FedConfig, tasks: Sequence[str], rng: np.random.Generator
) -> tuple[list[Client], list[int] | None]:
    """The clients of one sub-seed, with the control's changes: ``planted`` makes the clients of a task copies
    (same data, same batch stream: the tasks are separable by construction); ``null`` draws every client from
    one task (the task labels the ARI is scored against are then arbitrary)."""
    if cfg.control == "null":
        return make_clients([tasks[0]] * len(tasks), cfg.n_train, cfg.n_test, cfg.seq_len, cfg.dirichlet, rng), None
    if cfg.control == "planted":
        clients = make_clients(tasks, cfg.n_train, cfg.n_test, cfg.seq_len, cfg.dirichlet, rng, shared_within_task=True)
        return clients, [list(tasks).index(t) for t in tasks]
    return make_clients(tasks, cfg.n_train, cfg.n_test, cfg.seq_len, cfg.dirichlet, rng), None


def _run_methods(
    cfg: FedConfig,
    rng: np.random.Generator,
    tasks: Sequence[str],
    methods: dict[str, Callable[[], Strategy]],
    what: str,
    backbone: Backbone | None = None,
    repeat: Sequence[str] | Callable[[dict[str, FederatedRun]], Sequence[str]] = (),
    control_tree: Callable[[], Strategy] | None = None,
) -> tuple[list[dict[str, FederatedRun]], list[np.ndarray]]:
    """Every method on the same clients, initial adapters and batch streams per sub-seed (paired); the
    methods named in ``repeat`` also run once more on another simulation seed (key ``"<name>'"``): an
    independent run of the same method, which the controls use as the second arm (``repeat`` may be a function
    of the sub-seed's runs that names them). The methods always run on the experiment's own clients; under a
    control, ``control_tree`` runs once more on the control's clients (:func:`_make_clients`, key
    ``CONTROL_TREE``): the federation the tree-recovery check reads.

    # Deviation (issue 62, after the controls): the controls' accuracy arms ran on the control's clients
    # (planted: copies within a task, 4 distinct clients; null: one task); with 4 distinct clients the
    # run-to-run spread was about 2 points (planted FedIT-gap values 3.66-8.41 for a planted 5.16), more than
    # on the experiment's own clients, so only the tree-recovery check keeps them."""
    backbone = backbone or _backbone(cfg, rng)
    runs: list[dict[str, FederatedRun]] = []
    labels: list[np.ndarray] = []
    seeds = spawn(rng, cfg.n_seeds)
    for r in track(seeds, f"{what}: seeds x methods", total=cfg.n_seeds):
        r_data, r_sim = spawn(r, 2)
        clients, _ = _make_clients(dataclasses.replace(cfg, control="none"), tasks, r_data)
        clients = _for_backbone(clients, backbone)
        sim_seed, other_seed = (int(v) for v in r_sim.integers(0, 2**63 - 1, 2))
        out: dict[str, FederatedRun] = {}
        for phase in (0, 1):  # the methods, then the repeats (which may depend on the methods' runs)
            if phase == 0:
                jobs = [(name, make, sim_seed) for name, make in methods.items()]
            else:
                again = repeat(out) if callable(repeat) else repeat
                jobs = [(f"{name}'", methods[name], other_seed) for name in again]
            for name, make, seed in track(jobs, f"{what}: methods", total=len(jobs)):
                # same seed for every method: identical initial adapters and batch stream (paired)
                out[name] = _engine(cfg)(
                    make(),
                    clients,
                    cfg.rounds,
                    np.random.default_rng(seed),
                    backbone=backbone,
                    train=cfg.train(),
                )
        if control_tree is not None and cfg.control != "none":
            (r_ctrl,) = spawn(r, 1)  # a third child: the first two (clients, simulation) are unchanged
            c_clients, streams = _make_clients(cfg, tasks, r_ctrl)
            out[CONTROL_TREE] = _engine(cfg)(
                control_tree(),
                _for_backbone(c_clients, backbone),
                cfg.rounds,
                np.random.default_rng(sim_seed),
                backbone=backbone,
                train=cfg.train(),
                streams=streams,
            )
        runs.append(out)
        labels.append(np.array([TASKS.index(t) for t in tasks]))
    return runs, labels


def _control_acc(cfg: FedConfig, r: dict[str, FederatedRun], arm: str, ref: str, gain: float) -> np.ndarray:
    """(N,) final accuracy of each client under ``arm`` (0-1), or under a control: each client's accuracy in
    the independent run of ``ref`` (``ref'``) shifted by ``gain`` points (planted: the paper's effect; null: 0,
    or ``-NULL_BELOW_MARGIN`` for a non-inferiority claim, passed as ``gain`` by the caller). The shift is
    not clipped at 1, so that the mean moves by exactly ``gain``."""
    if cfg.control == "none":
        return np.asarray(r[arm].final_acc, float)
    return np.asarray(r[f"{ref}'"].final_acc, float) + gain / 100.0


def _diff(cfg: FedConfig, r: dict[str, FederatedRun], arm: str, ref: str, gain: float = 0.0) -> np.ndarray:
    """(N,) per-client paired difference, in points, of ``arm`` (or its control) minus ``ref``."""
    return 100.0 * (_control_acc(cfg, r, arm, ref, gain) - np.asarray(r[ref].final_acc, float))


#: label proportions of the learnability precondition's clients: Dirichlet(1e4) puts each within ~1% of 1/2
BALANCED_ALPHA = 1e4


def _precondition_metrics(
    metrics: dict[str, float],
    cfg: FedConfig,
    backbone: Backbone,
    tasks: Sequence[str],
    rng: np.random.Generator,
) -> list[Check]:
    """The setup's preconditions: the frozen features carry every task (linear probe), and Local training, on
    this run's schedule, learns every task of the run on clients with balanced labels (so that the clients'
    majority-class rate cannot pass for learning)."""
    r_probe, r_data, r_sim = spawn(rng, 3)
    probe = _frozen_probe(cfg, backbone, r_probe)
    for t, v in probe.items():
        metrics[f"frozen_probe_acc_{t}"] = v
    metrics["frozen_probe_acc_min_task"] = min(probe.values())
    clients = make_clients(tasks, cfg.n_train, cfg.n_test, cfg.seq_len, BALANCED_ALPHA, r_data)
    local = _engine(cfg)(
        LocalOnly(), _for_backbone(clients, backbone), cfg.rounds, r_sim, backbone=backbone, train=cfg.train()
    )
    per_task = {
        t: float(local.final_acc[[i for i, tt in enumerate(tasks) if tt == t]].mean()) for t in dict.fromkeys(tasks)
    }
    for t, v in per_task.items():
        metrics[f"local_balanced_acc_{t}"] = v
    metrics["local_balanced_acc_min_task"] = min(per_task.values())
    return [
        # fails when the frozen features are collapsed (the 150-step MLM backbone of issue 62) or a task
        # cannot be read from them at all
        Check(
            "frozen_probe_acc_min_task",
            metrics["frozen_probe_acc_min_task"],
            f">= {PROBE_BAR}",
            role="precondition",
        ),
        # fails when a client task is not learned by Local training (issue 62: pair / contain at 0.5)
        Check(
            "local_balanced_acc_min_task",
            metrics["local_balanced_acc_min_task"],
            f">= {LOCAL_BAR}",
            role="precondition",
        ),
    ]


def _heterogeneity(
    metrics: dict[str, float],
    runs: list[dict[str, FederatedRun]],
    clients_rates: list[np.ndarray],
    labels: list[np.ndarray],
) -> None:
    """Both heterogeneities in the warm-up distances the tree is built from, reported (not checked): the
    silhouette of the true task partition per layer, and the correlation of the distances with the clients'
    label-rate gap (label skew)."""
    sil: list[list[float]] = []
    corr: list[list[float]] = []
    for r, lab, rates in zip(runs, labels, clients_rates, strict=True):
        dists = r[TREE].structure.info["distances"]
        iu = np.triu_indices(len(lab), 1)
        gap = np.abs(np.subtract.outer(rates, rates))[iu]
        corr.append([float(np.corrcoef(d[iu], gap)[0, 1]) if gap.std() > 0 and d[iu].std() > 0 else 0.0 for d in dists])
        if 2 <= len(np.unique(lab)) <= len(lab) - 1:
            sil.append([_phi(lab, d, tau=float("nan")) for d in dists])
    for layer in range(len(corr[0])):
        _put(metrics, f"label_gap_corr_layer{layer + 1}", [c[layer] for c in corr])
        if sil:
            _put(metrics, f"task_silhouette_layer{layer + 1}", [s[layer] for s in sil])


def _stats(vals: Sequence[float]) -> tuple[float, float, float, float]:
    a = np.asarray(vals, float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0, float(a.min()), float(a.max())


def _put(metrics: dict[str, float], key: str, vals: Sequence[float]) -> None:
    """Mean, sd, min, max over sub-seeds, and the bounds mean -/+ 2 sd / sqrt(n) that the checks use
    (a comparison is claimed only when it clears the sub-seed noise; with n = 1 the bounds are the mean)."""
    m, sd, lo, hi = _stats(vals)
    metrics[key], metrics[f"{key}_sd"], metrics[f"{key}_min"], metrics[f"{key}_max"] = m, sd, lo, hi
    half = 2.0 * sd / np.sqrt(len(vals))
    metrics[f"{key}_lcb"], metrics[f"{key}_ucb"] = m - half, m + half


#: client bootstrap of the paired comparisons: resamples, one-sided level of the bounds, and the fixed seed
#: of the resampling (the bounds are a deterministic function of the run's accuracies)
N_BOOT = 4000
BOUND_LEVEL = 0.95
_BOOT_SEED = 20260


def _boot_means(diffs: Sequence[np.ndarray], g: np.random.Generator) -> np.ndarray:
    """``N_BOOT`` bootstrap replicates of the mean of the per-client values ``diffs`` (one array per
    sub-seed): clients resampled with replacement within each sub-seed, the mean over every client."""
    total = np.zeros(N_BOOT)
    for d in diffs:
        d = np.asarray(d, float)
        total += d[g.integers(0, d.size, (N_BOOT, d.size))].sum(1)
    return total / sum(np.asarray(d).size for d in diffs)


def _paired(metrics: dict[str, float], key: str, diffs: Sequence[np.ndarray]) -> None:
    """A comparison on per-client paired differences (points; one (N,) array per sub-seed: both arms on the
    same clients, test sets, initial adapters and batch streams): ``key`` the mean over clients and sub-seeds,
    ``key_lcb`` / ``key_ucb`` its one-sided ``BOUND_LEVEL`` bounds from a client bootstrap stratified by
    sub-seed; ``_sd`` / ``_min`` / ``_max`` over the sub-seed means (reported).

    # Deviation (issue 62, after the controls): the bounds were mean -/+ 2 SE over sub-seeds, which with one
    # sub-seed (quick) is the point value: false-positive rates 0.40 / 0.60 / 0.80 for the FedLEASE-flat,
    # coupling and per-layer-clustering checks (controls.json of 2026-12-07, one sub-seed)."""
    _put(metrics, key, [float(np.mean(d)) for d in diffs])
    metrics[key] = float(np.mean(np.concatenate([np.asarray(d, float) for d in diffs])))
    boot = _boot_means(diffs, np.random.default_rng(_BOOT_SEED))
    metrics[f"{key}_lcb"] = float(np.quantile(boot, 1.0 - BOUND_LEVEL))
    metrics[f"{key}_ucb"] = float(np.quantile(boot, BOUND_LEVEL))


def _fmt(vals: Sequence[float] | None) -> str:
    return "n/a" if vals is None else " ".join(f"{v:.3f}" for v in vals)


def _best_window_silhouettes(run: FederatedRun) -> list[float]:
    """Largest silhouette (phi at c >= 2) in each layer's candidate window (-1, the silhouette's floor, where
    the window holds c = 1 only)."""
    return [max((v for c, v in sc.items() if c >= 2), default=-1.0) for sc in run.structure.info["scores"]]


def _curves(runs: list[dict[str, FederatedRun]], title: str, names: Sequence[str]) -> Any:
    fig, ax = new_figure(title, "round", "mean personalised accuracy (mean over seeds)")
    for name in names:
        rounds = runs[0][name].eval_rounds
        acc = np.mean([[a.mean() for a in r[name].acc] for r in runs], axis=0)
        ax.plot(rounds, 100 * acc, marker="o", label=name)
    ax.legend(fontsize=7)
    return fig


def _method_table(runs: list[dict[str, FederatedRun]], names: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for s, r in enumerate(runs):
        for name in names:
            run = r[name]
            row: dict[str, Any] = {
                "seed": s,
                "method": name,
                "acc": round(100 * run.mean_acc, 2),
                "cuts": "-".join(map(str, run.cuts)),
                "up_MB_per_client": round(run.bytes_up.sum(0).mean() / 1e6, 4),
            }
            for t in TASKS:
                sel = [i for i, tt in enumerate(run.tasks) if tt == t]
                if sel:
                    row[t] = round(100 * float(run.final_acc[sel].mean()), 1)
            rows.append(row)
    return rows


TREE = "FedTreeLoRA"
#: the key of the tree run on a control's clients (planted copies, or one task for every client)
CONTROL_TREE = "FedTreeLoRA[control clients]"


@experiment(
    "fedtreelora.headline",
    claim="On 20 clients over 4 synthetic tasks (Dirichlet 0.5 label skew), FedTreeLoRA's layer-wise tree "
    "aggregation beats FedIT by >= 3 accuracy points, is within 0.5 of FedLEASE-flat or better, and its "
    "final-layer partition recovers the tasks (ARI >= 0.8), at FedIT's upload cost.",
    presets={
        "smoke": FedConfig(**_SMOKE),
        "quick": FedConfig(**_QUICK),
        "full": FedConfig(),
        # controls of the comparative checks at the quick size (the verdict the card reports)
        "planted": FedConfig(**{**_QUICK, "control": "planted"}),
        "null": FedConfig(**{**_QUICK, "control": "null"}),
    },
)
def headline(cfg: FedConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a missing device fails here, before any work
    tasks = [t for t in TASKS for _ in range(cfg.n_per_task)]
    methods: dict[str, Callable[[], Strategy]] = {
        TREE: lambda: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup),
        "FedIT": FedIT,
        "Local": LocalOnly,
        "FedLEASE-flat": lambda: FedLEASEFlat(tau=cfg.tau, warmup_rounds=cfg.warmup),
        "FedALT-scalar": FedALTScalar,
    }
    r_bb, r_runs, r_probe = spawn(rng, 3)
    backbone = _backbone(cfg, r_bb)
    repeat = ("FedIT", "FedLEASE-flat") if cfg.control != "none" else ()
    runs, labels = _run_methods(
        cfg, r_runs, tasks, methods, "headline", backbone, repeat=repeat, control_tree=methods[TREE]
    )
    metrics: dict[str, float] = {}
    checks = _precondition_metrics(metrics, cfg, backbone, tasks, r_probe)
    for name in methods:
        _put(metrics, f"acc_{name}", [100 * r[name].mean_acc for r in runs])
    plant = {"planted": 1.0, "null": 0.0, "none": 0.0}[cfg.control]
    ni_gain = {"planted": PAPER_GAIN_OVER_FEDLEASE, "null": -NULL_BELOW_MARGIN, "none": 0.0}[cfg.control]
    _paired(metrics, "tree_minus_fedit", [_diff(cfg, r, TREE, "FedIT", plant * PAPER_GAIN_OVER_FEDIT) for r in runs])
    _paired(metrics, "tree_minus_lease", [_diff(cfg, r, TREE, "FedLEASE-flat", ni_gain) for r in runs])
    plain = dataclasses.replace(cfg, control="none")  # reported under every control: the method's own runs
    _paired(metrics, "tree_minus_local", [_diff(plain, r, TREE, "Local") for r in runs])
    # the tree recovery: on the experiment's clients, or under a control on the control's clients
    tree_key = CONTROL_TREE if cfg.control != "none" else TREE
    aris = [adjusted_rand_score(lab, r[tree_key].structure.partitions[-1]) for r, lab in zip(runs, labels, strict=True)]
    _put(metrics, "final_layer_ari", aris)
    cuts = np.array([r[TREE].cuts for r in runs])
    for layer in range(cuts.shape[1]):
        metrics[f"cut_layer{layer + 1}_mean"] = float(cuts[:, layer].mean())
    mono = [all(a <= b for a, b in zip(c, c[1:], strict=False)) for c in cuts.tolist()]
    refine = [
        all(is_refinement(f, c) for c, f in zip(p, p[1:], strict=False))
        for p in (r[TREE].structure.partitions for r in runs)
    ]
    # reported, not checked: task and label-skew structure of the warm-up distances the tree chose from, and
    # the best silhouette the cut search saw (c >= 2 needs one above tau)
    rates = [np.array(r[TREE].label_rates) for r in runs]
    _heterogeneity(metrics, runs, rates, labels)
    best_sil = np.array([_best_window_silhouettes(r[TREE]) for r in runs])
    for layer in range(best_sil.shape[1]):
        _put(metrics, f"best_window_silhouette_layer{layer + 1}", best_sil[:, layer].tolist())
    metrics["cuts_monotone_fraction"] = float(np.mean(mono))
    metrics["partitions_nested_fraction"] = float(np.mean(refine))
    # criterion 5, per client per round after the warm-up (the warm-up's first rounds send nothing)
    w = cfg.warmup
    up = [np.max(np.abs(r[TREE].bytes_up[w:] / np.maximum(r["FedIT"].bytes_up[w:], 1) - 1)) for r in runs]
    metrics["upload_per_round_max_rel_diff_vs_fedit"] = float(np.max(up))
    metrics["download_ratio_vs_fedit"] = float(
        np.mean([r[TREE].bytes_down[w:].sum() / max(r["FedIT"].bytes_down[w:].sum(), 1) for r in runs])
    )
    metrics["extra_params_per_client"] = float(runs[0][TREE].lambdas.shape[0])
    metrics["lambda_mean"] = float(np.mean([r[TREE].lambdas.mean() for r in runs]))
    checks += [
        # superiority is stated on the one-sided 95% lower bound of the mean per-client paired difference (client
        # bootstrap, see _paired). Planted control: the FedTreeLoRA arm is an independent FedIT run plus the
        # paper's gain (5.16 points); null: an independent FedIT run.
        Check(
            "tree_minus_fedit_points_lcb",
            metrics["tree_minus_fedit_lcb"],
            ">= 3.0",
            paper="92.36 vs 87.20 (GLUE avg)",
            comparative=True,
        ),
        # non-inferiority: the mean per-client paired difference against the margin (the margin is the
        # tolerance; a 95% bound costs ~1.2 points at quick size, more than the paper's 1.17-point effect).
        # planted = an independent FedLEASE-flat run plus the paper's gain (1.17 points); null = an independent
        # FedLEASE-flat run 1.5 points worse (3x the margin)
        Check(
            "tree_minus_fedlease_flat_points",
            metrics["tree_minus_lease"],
            ">= -0.5",
            paper="92.36 vs 91.19 (GLUE avg)",
            comparative=True,
        ),
        # the tree against the truth. Planted control: the clients of a task are copies (same data and batch
        # stream), so the tasks are separable by construction; null: every client from one task, scored
        # against the four nominal task groups
        Check(
            "final_layer_partition_ari_vs_tasks_lcb",
            metrics["final_layer_ari_lcb"],
            ">= 0.8",
            paper="—",
            comparative=True,
        ),
        # criterion 3 (exact, every run)
        Check("cuts_monotone_all_seeds", metrics["cuts_monotone_fraction"], "== 1", paper="c*_1 <= ... <= c*_L"),
        Check(
            "partitions_nested_all_seeds", metrics["partitions_nested_fraction"], "== 1", paper="no topological drift"
        ),
    ]
    part_rows = [
        {
            "seed": s,
            "cuts": "-".join(map(str, r[TREE].cuts)),
            "final_layer_partition": " ".join(map(str, r[TREE].structure.partitions[-1].tolist())),
            "tasks": " ".join(map(str, lab.tolist())),
            "ari": round(a, 3),
            "best_window_silhouette_per_layer": _fmt(best_sil[s].tolist()),
        }
        for s, (r, lab, a) in enumerate(zip(runs, labels, aris, strict=True))
    ]
    fig_b, ax = new_figure("Final mean personalised accuracy (min-max bars over sub-seeds)", "method", "accuracy (%)")
    names = list(methods)
    means = [metrics[f"acc_{n}"] for n in names]
    err = [
        [metrics[f"acc_{n}"] - metrics[f"acc_{n}_min"] for n in names],
        [metrics[f"acc_{n}_max"] - metrics[f"acc_{n}"] for n in names],
    ]
    ax.bar(range(len(names)), means, yerr=err, tick_label=names)
    ax.tick_params(axis="x", labelsize=7)
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_curves": _curves(runs, "Accuracy per round", names), "final_accuracy": fig_b},
        tables={"per_seed": _method_table(runs, names), "tree": part_rows},
    )


@experiment(
    "fedtreelora.ablation",
    claim="Adaptive layer-wise cuts beat independent per-layer clustering and are within 0.5 points of the "
    "best fixed cut (c = 1, 4, 8 in every layer); the cluster-only variant (no external expert) is reported.",
    presets={
        "smoke": FedConfig(**_SMOKE),
        "quick": FedConfig(**{**_QUICK, "n_per_task": 2}),
        "full": FedConfig(),
        "planted": FedConfig(**{**_QUICK, "n_per_task": 2, "control": "planted"}),
        "null": FedConfig(**{**_QUICK, "n_per_task": 2, "control": "null"}),
    },
)
def ablation(cfg: FedConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a missing device fails here, before any work
    tasks = [t for t in TASKS for _ in range(cfg.n_per_task)]
    n = len(tasks)
    fixed = sorted({c for c in (1, 4, 8) if c <= n})
    methods: dict[str, Callable[[], Strategy]] = {
        TREE: lambda: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup)
    }
    for c in fixed:
        methods[f"fixed c={c}"] = lambda c=c: FedTreeLoRA(  # type: ignore[misc]
            K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup, fixed_c=c
        )
    methods["independent"] = lambda: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup, independent=True)
    if cfg.control == "none":  # reported, in no comparative check: the controls skip it
        methods["cluster-only"] = lambda: FedTreeLoRA(
            K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup, use_external=False
        )
    r_bb, r_runs, r_probe = spawn(rng, 3)
    backbone = _backbone(cfg, r_bb)

    def _best_fixed(r: dict[str, FederatedRun]) -> str:
        return max((f"fixed c={c}" for c in fixed), key=lambda m: (r[m].mean_acc, -int(m.split("=")[1])))

    def repeat(r: dict[str, FederatedRun]) -> Sequence[str]:
        return ("independent", _best_fixed(r)) if cfg.control != "none" else ()

    runs, _ = _run_methods(cfg, r_runs, tasks, methods, "ablation", backbone, repeat=repeat)
    metrics: dict[str, float] = {}
    checks = _precondition_metrics(metrics, cfg, backbone, tasks, r_probe)
    for name in methods:
        _put(metrics, f"acc_{name}", [100 * r[name].mean_acc for r in runs])
    plant = {"planted": PAPER_GAIN_OVER_INDEPENDENT, "null": 0.0, "none": 0.0}[cfg.control]
    _paired(metrics, "tree_minus_independent", [_diff(cfg, r, TREE, "independent", plant) for r in runs])
    best_fixed = max(fixed, key=lambda c: metrics[f"acc_fixed c={c}"])
    metrics["best_fixed_c"] = float(best_fixed)
    ni = {"planted": PAPER_GAIN_OVER_FIXED, "null": -NULL_BELOW_MARGIN, "none": 0.0}[cfg.control]
    # the best fixed cut over the sub-seeds' mean; a control's reference is each sub-seed's best (its repeat)
    refs = [_best_fixed(r) if cfg.control != "none" else f"fixed c={best_fixed}" for r in runs]
    _paired(metrics, "tree_minus_best_fixed", [_diff(cfg, r, TREE, ref, ni) for r, ref in zip(runs, refs, strict=True)])
    if "cluster-only" in methods:
        _paired(metrics, "tree_minus_cluster_only", [_diff(cfg, r, TREE, "cluster-only") for r in runs])
    indep_nested = [
        all(is_refinement(f, c) for c, f in zip(p, p[1:], strict=False))
        for p in (r["independent"].structure.partitions for r in runs)
    ]
    metrics["independent_nested_fraction"] = float(np.mean(indep_nested))
    checks += [
        # fails if the global tree / nested window brought nothing over clustering each layer on its own
        # (one-sided 95% lower bound of the per-client paired difference, _paired).
        # Planted: the tree arm is an independent run of per-layer clustering plus the paper's gain (2.89);
        # null: an independent run of per-layer clustering.
        Check(
            "tree_minus_independent_points_lcb",
            metrics["tree_minus_independent_lcb"],
            "> 0",
            paper="92.36 vs 89.47 (GLUE avg)",
            comparative=True,
        ),
        # non-inferiority to the best fixed cut: the mean per-client paired difference against the margin.
        # Planted: an independent run of that fixed cut plus the paper's gain (0.91); null: the same 1.5 points
        # worse (3x the margin).
        Check(
            "tree_minus_best_fixed_c_points",
            metrics["tree_minus_best_fixed"],
            ">= -0.5",
            paper="92.36 vs 91.45 (fixed c=4)",
            comparative=True,
        ),
    ]
    names = list(methods)
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_curves": _curves(runs, "Ablations", names)},
        tables={"per_seed": _method_table(runs, names)},
    )


#: the planted coupling effect (points): with 4 tasks, sharing every layer gains this much less than with 1.
#: The paper states the coupling qualitatively (pilot: forced deep aggregation can fall below Local); *ours*:
#: the headline's 3-point margin.
PLANTED_COUPLING = 3.0


@experiment(
    "fedtreelora.coupling",
    claim="Coupling of the two heterogeneities (reported, soft): with 8 clients drawn from more tasks, the best "
    "FedPer-LoRA sharing depth k is no deeper (m = 4 tasks vs m = 1 task).",
    presets={
        "smoke": FedConfig(**{**_SMOKE, "n_per_task": 1}),
        "quick": FedConfig(**{**_QUICK, "n_per_task": 2, "n_seeds": 1, "all_depths": 0}),
        "full": FedConfig(n_per_task=2),
        "planted": FedConfig(**{**_QUICK, "n_per_task": 2, "n_seeds": 1, "all_depths": 0, "control": "planted"}),
        "null": FedConfig(**{**_QUICK, "n_per_task": 2, "n_seeds": 1, "all_depths": 0, "control": "null"}),
    },
)
def coupling(cfg: FedConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a missing device fails here, before any work
    # 4 * n_per_task clients in total; m tasks each with 4 * n_per_task / m clients
    n = 4 * cfg.n_per_task
    metrics: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    best: dict[int, int] = {}
    gains: dict[int, list[np.ndarray]] = {}
    r_bb, r_probe, *r_m = spawn(rng, 4)
    backbone = _backbone(cfg, r_bb)
    # controls: both arms are federations of one task (no coupling); planted lowers the 4-task arm's gain by
    # PLANTED_COUPLING points by construction, null leaves it
    m_tasks = {1: 1, 4: 1 if cfg.control != "none" else 4}
    depths = list(range(cfg.n_layers + 1)) if cfg.all_depths else [0, cfg.n_layers]
    for m, r in zip((1, 4), r_m, strict=True):
        tasks = [TASKS[i * m_tasks[m] // n] for i in range(n)]
        methods: dict[str, Callable[[], Strategy]] = {
            f"k={k}": lambda k=k: FedPerLoRA(k)  # type: ignore[misc]
            for k in depths
        }
        sub = dataclasses.replace(cfg, control="none")
        runs, _ = _run_methods(sub, r, tasks, methods, f"coupling m={m}", backbone)
        accs = {k: float(np.mean([100 * run[f"k={k}"].mean_acc for run in runs])) for k in depths}
        shift = PLANTED_COUPLING if (m == 4 and cfg.control == "planted") else 0.0
        # gain of sharing every layer (k = L) over sharing none (k = 0), per sub-seed
        gains[m] = [
            100 * (np.asarray(run[f"k={cfg.n_layers}"].final_acc, float) - np.asarray(run["k=0"].final_acc, float))
            - shift
            for run in runs
        ]
        _paired(metrics, f"m{m}_full_sharing_gain", gains[m])
        for k, a in accs.items():
            metrics[f"m{m}_acc_k{k}"] = a
            rows.append({"m_tasks": m, "k_shared_layers": k, "acc": round(a, 2)})
        best[m] = max(accs, key=lambda k: (accs[k], -k))
        metrics[f"m{m}_best_k"] = float(best[m])
    checks = _precondition_metrics(metrics, cfg, backbone, [TASKS[i * 4 // n] for i in range(n)], r_probe)
    metrics["best_k_m4_minus_m1"] = float(best[4] - best[1])
    # the brief's statistic (arg-max depth) is reported; it flipped between seeds at quick scale, so the check
    # uses a continuous one: sharing all layers must help less with 4 tasks than with 1. Each federation's gain
    # is a per-client paired difference (k = L vs k = 0 on the same clients and seed); the two federations are
    # independent, so the bound is the one-sided 95% upper quantile of the difference of their client
    # bootstraps (the bound was mean + 2 SE over sub-seeds: false-positive rate 0.60 at one sub-seed).
    d = metrics["m4_full_sharing_gain"] - metrics["m1_full_sharing_gain"]
    g = np.random.default_rng(_BOOT_SEED)
    boot = _boot_means(gains[4], g) - _boot_means(gains[1], g)
    metrics["gain_m4_minus_m1"] = float(d)
    metrics["gain_m4_minus_m1_lcb"] = float(np.quantile(boot, 1.0 - BOUND_LEVEL))
    metrics["gain_m4_minus_m1_ucb"] = float(np.quantile(boot, BOUND_LEVEL))
    checks += [
        # fails if sharing deep layers were as useful across 4 tasks as within one (no coupling)
        Check(
            "full_sharing_gain_m4_minus_m1_ucb",
            metrics["gain_m4_minus_m1_ucb"],
            "< 0",
            paper="safe sharing depth shrinks as clients grow more different",
            comparative=True,
        ),
    ]
    fig, ax = new_figure("FedPer-LoRA(k): accuracy vs shared depth", "shared shallow layers k", "accuracy (%)")
    for m in (1, 4):
        ax.plot(
            depths,
            [metrics[f"m{m}_acc_k{k}"] for k in depths],
            marker="o",
            label=f"m = {m} tasks",
        )
    ax.legend()
    return Outcome(metrics=metrics, checks=checks, figures={"depth": fig}, tables={"fedper": rows})
