"""Registered experiments of fedtreelora: the headline table, the ablations and the coupling sweep.

Every experiment pre-trains one small frozen backbone (masked LM on a task-agnostic corpus), then loops over
``n_seeds`` sub-seeds; within a sub-seed every method sees the same clients, the same initial adapters and
the same batch stream (a paired comparison). Claims are stated on the mean over sub-seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import adjusted_rand_score

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track

from .baselines import FedALTScalar, FedIT, FedLEASEFlat, FedPerLoRA, LocalOnly
from .data import TASKS, make_clients, make_corpus
from .method import FedTreeLoRA, Strategy
from .model import Backbone, BackboneConfig, pretrain_backbone
from .simulator import FederatedRun, TrainConfig, simulate
from .tree import _phi, is_refinement


@config
class FedConfig:
    """Scale of one run (brief's values in the comments; CPU-scale defaults)."""

    n_seeds: int = param(3, 1, 5, help="sub-seeds (clients, inits, batches) per run")
    n_per_task: int = param(5, 1, 10, help="clients per task (brief: 5 -> 20 clients over 4 tasks)")
    n_train: int = param(400, 8, 1000, help="train examples per client (brief: 400)")
    n_test: int = param(200, 8, 500, help="test examples per client (brief: 200)")
    dirichlet: float = param(0.5, 0.05, 100.0, help="label-skew Dirichlet alpha (brief: 0.5)")
    rounds: int = param(30, 2, 60, help="total rounds incl. warm-up (brief: 3 + 27)")
    warmup: int = param(3, 1, 10, help="E_warm local rounds before the tree (brief: 3)")
    local_steps: int = param(20, 1, 40, help="local AdamW steps per round (brief: 20)")
    batch_size: int = param(32, 2, 64, help="local batch (brief: 32)")
    lr: float = param(3e-2, 1e-5, 0.3, help="LoRA learning rate (brief: 1e-3; see card)")
    head_lr: float = param(3e-2, 1e-5, 0.3, help="local head and lambda learning rate")
    rank: int = param(4, 1, 16, help="LoRA rank (brief: 4); alpha = 2 * rank")
    n_layers: int = param(4, 2, 8, help="backbone layers (brief: 6)")
    d_model: int = param(32, 8, 128, help="backbone width (brief: 128)")
    n_heads: int = param(2, 1, 8, help="attention heads (brief: 4)")
    seq_len: int = param(12, 10, 48, help="sequence length (brief: 48)")
    pretrain_steps: int = param(150, 0, 1000, help="masked-LM pre-training steps of the backbone")
    corpus_size: int = param(2000, 64, 10000, help="pre-training corpus size")
    K: int = param(2, 1, 6, help="cut window width (ours: 2)")
    tau: float = param(0.25, 0.0, 1.0, lo_open=True, hi_open=True, help="phi(1) (ours: 0.25)")
    eval_every: int = param(5, 1, 60, help="evaluate every this many rounds (and after the last)")
    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.warmup >= self.rounds:
            raise ValueError(f"warmup = {self.warmup}: must be < rounds = {self.rounds}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads = {self.n_heads}: must divide d_model = {self.d_model}")

    def train(self) -> TrainConfig:
        return TrainConfig(
            rank=self.rank,
            alpha=2.0 * self.rank,
            local_steps=self.local_steps,
            batch_size=self.batch_size,
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
    pretrain_steps=2,
    corpus_size=64,
)
# quick: 12 clients (3 per task), 8 rounds of 6 steps; see the card for what this scale can and cannot show
_QUICK: dict[str, Any] = dict(
    n_seeds=3,
    n_per_task=3,
    n_train=160,
    n_test=100,
    rounds=8,
    warmup=2,
    local_steps=6,
    batch_size=16,
    pretrain_steps=60,
    corpus_size=600,
    eval_every=4,
)


def _backbone(cfg: FedConfig, rng: np.random.Generator) -> Backbone:
    bc = BackboneConfig(n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads, seq_len=cfg.seq_len)
    r_corpus, r_pre = spawn(rng, 2)
    return pretrain_backbone(
        make_corpus(cfg.corpus_size, cfg.seq_len, r_corpus), bc, cfg.pretrain_steps, 64, 3e-3, r_pre,
        device=resolve_device(cfg.device),
    )


def _run_methods(
    cfg: FedConfig,
    rng: np.random.Generator,
    tasks: Sequence[str],
    methods: dict[str, Callable[[], Strategy]],
    what: str,
    backbone: Backbone | None = None,
) -> tuple[list[dict[str, FederatedRun]], list[np.ndarray]]:
    backbone = backbone or _backbone(cfg, rng)
    runs: list[dict[str, FederatedRun]] = []
    labels: list[np.ndarray] = []
    seeds = spawn(rng, cfg.n_seeds)
    for r in track(seeds, f"{what}: seeds x methods", total=cfg.n_seeds):
        r_data, r_sim = spawn(r, 2)
        clients = make_clients(tasks, cfg.n_train, cfg.n_test, cfg.seq_len, cfg.dirichlet, r_data)
        sim_seed = int(r_sim.integers(0, 2**63 - 1))
        out = {}
        for name, make in track(list(methods.items()), f"{what}: methods", total=len(methods)):
            # same seed for every method: identical initial adapters and batch stream (paired)
            out[name] = simulate(
                make(), clients, cfg.rounds, np.random.default_rng(sim_seed), backbone=backbone, train=cfg.train()
            )
        runs.append(out)
        labels.append(np.array([TASKS.index(t) for t in tasks]))
    return runs, labels


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


def _task_silhouettes(run: FederatedRun, task_labels: np.ndarray) -> list[float] | None:
    """Silhouette of the true task partition on each layer's distance matrix at tree construction; None where
    a silhouette is undefined (one task, or one client per task)."""
    if not 2 <= len(np.unique(task_labels)) <= len(task_labels) - 1:
        return None
    # the cut search's own score (k >= 2 here, so its tau is never used)
    return [_phi(task_labels, d, tau=float("nan")) for d in run.structure.info["distances"]]


def _fmt(vals: Sequence[float] | None) -> str:
    return "n/a" if vals is None else " ".join(f"{v:.3f}" for v in vals)


def _best_window_silhouettes(run: FederatedRun) -> list[float]:
    """Largest silhouette (phi at c >= 2) in each layer's candidate window (-1, the silhouette's floor, where
    the window holds c = 1 only)."""
    return [max((v for c, v in sc.items() if c >= 2), default=-1.0) for sc in run.structure.info["scores"]]


def _curves(runs: list[dict[str, FederatedRun]], title: str) -> Any:
    fig, ax = new_figure(title, "round", "mean personalised accuracy (mean over seeds)")
    for name in runs[0]:
        rounds = runs[0][name].eval_rounds
        acc = np.mean([[a.mean() for a in r[name].acc] for r in runs], axis=0)
        ax.plot(rounds, 100 * acc, marker="o", label=name)
    ax.legend(fontsize=7)
    return fig


def _method_table(runs: list[dict[str, FederatedRun]]) -> list[dict[str, Any]]:
    rows = []
    for s, r in enumerate(runs):
        for name, run in r.items():
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


@experiment(
    "fedtreelora.headline",
    claim="On 20 clients over 4 synthetic tasks (Dirichlet 0.5 label skew), FedTreeLoRA's layer-wise tree "
    "aggregation beats FedIT by >= 3 accuracy points, is within 0.5 of FedLEASE-flat or better, and its "
    "final-layer partition recovers the tasks (ARI >= 0.8), at FedIT's upload cost.",
    presets={"smoke": FedConfig(**_SMOKE), "quick": FedConfig(**_QUICK), "full": FedConfig()},
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
    runs, labels = _run_methods(cfg, rng, tasks, methods, "headline")
    metrics: dict[str, float] = {}
    for name in methods:
        _put(metrics, f"acc_{name}", [100 * r[name].mean_acc for r in runs])
    _put(metrics, "tree_minus_fedit", [100 * (r[TREE].mean_acc - r["FedIT"].mean_acc) for r in runs])
    _put(metrics, "tree_minus_lease", [100 * (r[TREE].mean_acc - r["FedLEASE-flat"].mean_acc) for r in runs])
    _put(metrics, "tree_minus_local", [100 * (r[TREE].mean_acc - r["Local"].mean_acc) for r in runs])
    aris = [adjusted_rand_score(lab, r[TREE].structure.partitions[-1]) for r, lab in zip(runs, labels, strict=True)]
    _put(metrics, "final_layer_ari", aris)
    cuts = np.array([r[TREE].cuts for r in runs])
    for layer in range(cuts.shape[1]):
        metrics[f"cut_layer{layer + 1}_mean"] = float(cuts[:, layer].mean())
    mono = [all(a <= b for a, b in zip(c, c[1:], strict=False)) for c in cuts.tolist()]
    refine = [
        all(is_refinement(f, c) for c, f in zip(p, p[1:], strict=False))
        for p in (r[TREE].structure.partitions for r in runs)
    ]
    # reported, not checked: how well the tasks separate in the warm-up distances the tree chose from. The
    # cut search picks c >= 2 only where a partition's silhouette beats tau, so a task silhouette below tau
    # says the tasks were not recoverable from these B's whatever the search did.
    sils = [_task_silhouettes(r[TREE], lab) for r, lab in zip(runs, labels, strict=True)]
    best_sil = np.array([_best_window_silhouettes(r[TREE]) for r in runs])
    for layer in range(best_sil.shape[1]):
        _put(metrics, f"best_window_silhouette_layer{layer + 1}", best_sil[:, layer].tolist())
        if all(v is not None for v in sils):
            _put(metrics, f"task_silhouette_layer{layer + 1}", [v[layer] for v in sils])  # type: ignore[index]
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
    checks = [
        # fails when sharing across tasks costs FedIT nothing (e.g. all clients drawn from one task)
        # comparisons are stated on the lower bound of the paired sub-seed differences (see _put)
        Check(
            "tree_minus_fedit_points_lcb", metrics["tree_minus_fedit_lcb"], ">= 3.0", paper="92.36 vs 87.20 (GLUE avg)"
        ),
        # fails if one flat partition served every layer as well as the tree (paper: the tree is better)
        Check(
            "tree_minus_fedlease_flat_points_lcb",
            metrics["tree_minus_lease_lcb"],
            ">= -0.5",
            paper="92.36 vs 91.19 (GLUE avg)",
        ),
        # fails if the deepest layer's blocks mix tasks (e.g. warm-up too short for B to carry the task)
        Check("final_layer_partition_ari_vs_tasks_lcb", metrics["final_layer_ari_lcb"], ">= 0.8", paper="—"),
        # criterion 3: fails for a per-layer search without the nested window (see the ablation's
        # independent-clustering metric)
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
            "task_silhouette_per_layer": _fmt(sils[s]),
            "best_window_silhouette_per_layer": _fmt(best_sil[s].tolist()),
        }
        for s, (r, lab, a) in enumerate(zip(runs, labels, aris, strict=True))
    ]
    fig_b, ax = new_figure("Final mean personalised accuracy (3 seeds, min-max bars)", "method", "accuracy (%)")
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
        figures={"accuracy_curves": _curves(runs, "Accuracy per round"), "final_accuracy": fig_b},
        tables={"per_seed": _method_table(runs), "tree": part_rows},
    )


@experiment(
    "fedtreelora.ablation",
    claim="Adaptive layer-wise cuts beat independent per-layer clustering and are within 0.5 points of the "
    "best fixed cut (c = 1, 4, 8 in every layer); the cluster-only variant (no external expert) is reported.",
    presets={"smoke": FedConfig(**_SMOKE), "quick": FedConfig(**_QUICK), "full": FedConfig()},
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
        methods[f"fixed c={c}"] = lambda c=c: FedTreeLoRA(
            K=cfg.K,
            tau=cfg.tau,
            warmup_rounds=cfg.warmup,  # type: ignore[misc]
            fixed_c=c,
        )
    methods["independent"] = lambda: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup, independent=True)
    methods["cluster-only"] = lambda: FedTreeLoRA(K=cfg.K, tau=cfg.tau, warmup_rounds=cfg.warmup, use_external=False)
    runs, _ = _run_methods(cfg, rng, tasks, methods, "ablation")
    metrics: dict[str, float] = {}
    for name in methods:
        _put(metrics, f"acc_{name}", [100 * r[name].mean_acc for r in runs])
    _put(metrics, "tree_minus_independent", [100 * (r[TREE].mean_acc - r["independent"].mean_acc) for r in runs])
    best_fixed = max(fixed, key=lambda c: metrics[f"acc_fixed c={c}"])
    metrics["best_fixed_c"] = float(best_fixed)
    _put(
        metrics, "tree_minus_best_fixed", [100 * (r[TREE].mean_acc - r[f"fixed c={best_fixed}"].mean_acc) for r in runs]
    )
    _put(metrics, "tree_minus_cluster_only", [100 * (r[TREE].mean_acc - r["cluster-only"].mean_acc) for r in runs])
    indep_nested = [
        all(is_refinement(f, c) for c, f in zip(p, p[1:], strict=False))
        for p in (r["independent"].structure.partitions for r in runs)
    ]
    metrics["independent_nested_fraction"] = float(np.mean(indep_nested))
    checks = [
        # fails if the global tree / nested window brought nothing over clustering each layer on its own
        Check(
            "tree_minus_independent_points_lcb",
            metrics["tree_minus_independent_lcb"],
            "> 0",
            paper="92.36 vs 89.47 (GLUE avg)",
        ),
        # fails if one fixed depth-agnostic cut were clearly better than the adaptive one
        Check(
            "tree_minus_best_fixed_c_points_lcb",
            metrics["tree_minus_best_fixed_lcb"],
            ">= -0.5",
            paper="92.36 vs 91.45 (fixed c=4)",
        ),
    ]
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"accuracy_curves": _curves(runs, "Ablations")},
        tables={"per_seed": _method_table(runs)},
    )


@experiment(
    "fedtreelora.coupling",
    claim="Coupling of the two heterogeneities (reported, soft): with 8 clients drawn from more tasks, the best "
    "FedPer-LoRA sharing depth k is no deeper (m = 4 tasks vs m = 1 task).",
    presets={
        "smoke": FedConfig(**{**_SMOKE, "n_per_task": 1}),
        "quick": FedConfig(**{**_QUICK, "n_per_task": 2, "n_seeds": 3}),
        "full": FedConfig(n_per_task=2),
    },
)
def coupling(cfg: FedConfig, rng: np.random.Generator) -> Outcome:
    resolve_device(cfg.device)  # a missing device fails here, before any work
    # 4 * n_per_task clients in total; m tasks each with 4 * n_per_task / m clients
    n = 4 * cfg.n_per_task
    metrics: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    best: dict[int, int] = {}
    gains: dict[int, list[float]] = {}
    r_bb, *r_m = spawn(rng, 3)
    backbone = _backbone(cfg, r_bb)
    for m, r in zip((1, 4), r_m, strict=True):
        tasks = [TASKS[i * m // n] for i in range(n)]
        methods: dict[str, Callable[[], Strategy]] = {
            f"k={k}": lambda k=k: FedPerLoRA(k)  # type: ignore[misc]
            for k in range(cfg.n_layers + 1)
        }
        runs, _ = _run_methods(cfg, r, tasks, methods, f"coupling m={m}", backbone)
        accs = {k: float(np.mean([100 * run[f"k={k}"].mean_acc for run in runs])) for k in range(cfg.n_layers + 1)}
        # gain of sharing every layer (k = L) over sharing none (k = 0), per sub-seed
        gains[m] = [100 * (run[f"k={cfg.n_layers}"].mean_acc - run["k=0"].mean_acc) for run in runs]
        _put(metrics, f"m{m}_full_sharing_gain", gains[m])
        for k, a in accs.items():
            metrics[f"m{m}_acc_k{k}"] = a
            rows.append({"m_tasks": m, "k_shared_layers": k, "acc": round(a, 2)})
        best[m] = max(accs, key=lambda k: (accs[k], -k))
        metrics[f"m{m}_best_k"] = float(best[m])
    metrics["best_k_m4_minus_m1"] = float(best[4] - best[1])
    # the brief's statistic (arg-max depth) is reported; it flipped between seeds at quick scale, so the check
    # uses a continuous one that noise does not pass by chance: sharing all layers must help less with 4 tasks
    # than with 1 (upper bound of the difference of the two independent sub-seed means < 0)
    d = metrics["m4_full_sharing_gain"] - metrics["m1_full_sharing_gain"]
    se = np.hypot(metrics["m4_full_sharing_gain_sd"], metrics["m1_full_sharing_gain_sd"]) / np.sqrt(cfg.n_seeds)
    metrics["gain_m4_minus_m1"], metrics["gain_m4_minus_m1_ucb"] = float(d), float(d + 2 * se)
    checks = [
        # fails if sharing deep layers were as useful across 4 tasks as within one (no coupling)
        Check(
            "full_sharing_gain_m4_minus_m1_ucb",
            metrics["gain_m4_minus_m1_ucb"],
            "< 0",
            paper="safe sharing depth shrinks as clients grow more different",
        ),
    ]
    fig, ax = new_figure("FedPer-LoRA(k): accuracy vs shared depth", "shared shallow layers k", "accuracy (%)")
    for m in (1, 4):
        ax.plot(
            range(cfg.n_layers + 1),
            [metrics[f"m{m}_acc_k{k}"] for k in range(cfg.n_layers + 1)],
            marker="o",
            label=f"m = {m} tasks",
        )
    ax.legend()
    return Outcome(metrics=metrics, checks=checks, figures={"depth": fig}, tables={"fedper": rows})
