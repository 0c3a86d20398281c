"""Registered experiments of truth_polling: simulator, small-model facts, arithmetic, random strings."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Literal

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure
from icml2026.core.progress import track

from .aggregate import Aggregation, Rule, aggregate
from .correlation import (
    agreement_when_both_wrong,
    auroc,
    cohen_kappa,
    error_overlap,
    expected_calibration_error,
    mutual_information,
    permutation_pvalue_mi,
    phi_matrix,
    social_vs_truth,
)
from .data import make_arithmetic, make_fact_corpus, make_random_digit_task, subsample_lines
from .models import FAMILIES, FamilyConfig, make_family, sample_answers
from .planted import corpus_answer_frequencies, planted_fact_probs, planted_sum_probs
from .simulator import (
    SimulatorParams,
    plurality_accuracy_exact,
    plurality_accuracy_limit,
    simulate_polling,
)

__all__ = ["ArithmeticConfig", "FactsConfig", "RandomStringsConfig", "SimulatorConfig"]


def _accuracy(res: Aggregation, gold: np.ndarray) -> float:
    chosen = np.array([-1 if a is None else int(a) for a in res.answers])
    return float(np.mean(chosen == gold))


def _single(answers: np.ndarray, gold: np.ndarray) -> float:
    """Expected accuracy of one sample of one model: sample 0, averaged over models (cost 1)."""
    return float(np.mean(answers[:, 0, :] == gold[None, :]))


def _self_consistency(answers: np.ndarray, gold: np.ndarray, k: int, rng: np.random.Generator) -> float:
    """majority_self(k) averaged over models."""
    return float(
        np.mean(
            [
                _accuracy(aggregate(answers, Rule("majority_self", k=k, models=(m,)), rng=rng), gold)
                for m in range(answers.shape[0])
            ]
        )
    )


# ------------------------------------------------------------------------------------------ simulator
MAX_VOTE_STATES = 20_000  # count vectors enumerated by the exact plurality formula (memory: 256 x states x A)


def _check_regime(name: str, regime: tuple[float, float, float, float]) -> None:
    a, sigma_theta, tau, rho = regime
    if sigma_theta < 0 or tau < 0:
        raise ValueError(f"{name} = {regime}: sigma_theta and tau (entries 2 and 3) must be >= 0")
    if not 0 <= rho <= 1:
        raise ValueError(f"{name} = {regime}: rho (entry 4) must be in [0, 1]")


@config
class SimulatorConfig:
    # Upper bounds keep the (models x samples x questions x options) arrays under ~1 GB.
    n_questions: int = param(4000, 10, 20_000, help="questions; brief Sec. 5 prototype: 4000")
    n_models: int = param(5, 2, 10, help="models polled; brief: 5")
    n_samples: int = param(25, 5, 50, help="samples per model = pooled votes at 25x; brief: 25")
    n_options: int = param(4, 2, 10, help="answer options A; brief: 4")
    large_k: int = param(2001, 1, 100_000, help="samples per model standing in for k -> infinity")
    independent: tuple[float, float, float, float] = param(
        (0.4, 0.0, 0.3, 0.0), -20, 20, help="(a, sigma_theta, tau, rho) of the independent regime"
    )
    correlated: tuple[float, float, float, float] = param(
        (0.0, 3.0, 0.3, 0.8), -20, 20, help="(a, sigma_theta, tau, rho) of the correlated regime"
    )

    def __post_init__(self) -> None:
        if self.n_models > self.n_samples:
            raise ValueError(f"n_models = {self.n_models}: must be <= n_samples ({self.n_samples})")
        states = comb(self.n_samples + self.n_options - 1, self.n_options - 1)
        if states > MAX_VOTE_STATES:
            raise ValueError(
                f"n_samples = {self.n_samples}: with n_options = {self.n_options} the exact plurality formula "
                f"enumerates {states} vote counts (at most {MAX_VOTE_STATES})"
            )
        _check_regime("independent", self.independent)
        _check_regime("correlated", self.correlated)


@experiment(
    "truth_polling.simulator",
    claim="With independent errors 25 pooled votes lift accuracy far above one sample; with shared "
    "difficulty and a shared wrong attractor they add nothing; exact plurality formulas match simulation.",
    presets={
        "smoke": SimulatorConfig(n_questions=200, large_k=101),
        "quick": SimulatorConfig(n_questions=2000, large_k=1001),
        "full": SimulatorConfig(),
        # controls: the brief's two regimes are the planted effects (planted = quick); the null exchanges them,
        # so that each check sees the regime in which its effect is absent
        "planted": SimulatorConfig(n_questions=2000, large_k=1001),
        "null": SimulatorConfig(n_questions=2000, large_k=1001, independent=(0.0, 3.0, 0.3, 0.8),
                                correlated=(0.4, 0.0, 0.3, 0.0)),
    },
)
def simulator(cfg: SimulatorConfig, rng: np.random.Generator) -> Outcome:
    metrics: dict[str, float] = {}
    fig, ax = new_figure("Simulator: accuracy vs compute", "compute (samples per question)", "accuracy")
    k_cross = cfg.n_samples // cfg.n_models  # samples per model so that the pool has n_samples votes
    for regime, (a, s_theta, tau, rho) in (("independent", cfg.independent), ("correlated", cfg.correlated)):
        params = SimulatorParams(cfg.n_models, cfg.n_samples, cfg.n_questions, cfg.n_options, a, s_theta, tau, rho)
        poll = simulate_polling(params, rng)
        ans, gold = poll.answers, poll.gold
        single = _single(ans, gold)
        costs = list(range(1, cfg.n_models + 1)) + [cfg.n_models * k for k in range(2, k_cross + 1)]
        cross = []
        for c in costs:
            rule = (
                Rule("majority_cross", k=1, models=tuple(range(c)))
                if c <= cfg.n_models
                else Rule("majority_cross", k=c // cfg.n_models)
            )
            cross.append(_accuracy(aggregate(ans, rule, rng=rng), gold))
        self_k = [
            _accuracy(aggregate(ans, Rule("majority_self", k=k), rng=rng), gold) for k in range(1, cfg.n_samples + 1)
        ]
        exact_self = float(plurality_accuracy_exact(poll.probs[0], gold, cfg.n_samples).mean())
        limit = float(plurality_accuracy_limit(poll.probs.mean(axis=0), gold).mean())
        pooled = rng.multinomial(cfg.large_k, poll.probs).sum(axis=0)  # (q, A) votes of all models
        keys = np.where(pooled == pooled.max(axis=1, keepdims=True), rng.random(pooled.shape), -1.0)
        large = float(np.mean(keys.argmax(axis=1) == gold))
        pairs = [
            agreement_when_both_wrong(ans[i, 0], ans[j, 0], gold, cfg.n_options)
            for i, j in itertools.combinations(range(cfg.n_models), 2)
        ]
        metrics.update(
            {
                f"{regime}_single": single,
                f"{regime}_cross{cfg.n_samples}": cross[-1],
                f"{regime}_self{cfg.n_samples}": self_k[-1],
                f"{regime}_gain": cross[-1] - single,
                f"{regime}_self_exact": exact_self,
                f"{regime}_self_exact_err": abs(exact_self - self_k[-1]),
                f"{regime}_limit": limit,
                f"{regime}_large_k": large,
                f"{regime}_limit_err": abs(limit - large),
                f"{regime}_both_wrong_agree": float(np.mean([p.rate for p in pairs])),
                f"{regime}_both_wrong_baseline": float(np.mean([p.baseline for p in pairs])),
            }
        )
        ax.plot(costs, cross, marker="o", label=f"{regime}: majority_cross")
        ax.plot(range(1, cfg.n_samples + 1), self_k, linestyle="--", label=f"{regime}: majority_self")
        ax.axhline(limit, color="grey", linewidth=0.8)
    ax.legend(fontsize=7)
    chance = 1.0 / (cfg.n_options - 1)
    metrics["both_wrong_chance"] = chance
    ratio = metrics["correlated_both_wrong_agree"] / chance
    metrics["correlated_both_wrong_ratio"] = ratio
    checks = [
        Check("independent_gain_25x", metrics["independent_gain"], ">= 0.30", comparative=True),
        Check(
            "correlated_abs_gain_25x",
            abs(metrics["correlated_gain"]),
            "<= 0.03",
            paper="no consistent gain from polling (abstract)",
            comparative=True,
        ),
        Check(
            "correlated_both_wrong_over_chance",
            ratio,
            ">= 2.0",
            paper="errors strongly correlated (abstract)",
            comparative=True,
        ),
        # Preconditions: the sampled polls follow the generative model (simulation equals the closed forms
        # within 0.01, the brief's tolerance), so that the gains above are the model's and not the sampler's.
        Check("independent_exact_self_err", metrics["independent_self_exact_err"], "<= 0.01", role="precondition"),
        Check("correlated_exact_self_err", metrics["correlated_self_exact_err"], "<= 0.01", role="precondition"),
        Check("independent_limit_err", metrics["independent_limit_err"], "<= 0.01", role="precondition"),
        Check("correlated_limit_err", metrics["correlated_limit_err"], "<= 0.01", role="precondition"),
    ]
    return Outcome(metrics=metrics, checks=checks, figures={"simulator_accuracy_vs_compute": fig})


# ---------------------------------------------------------------------------------------- small models
def _train_families(
    corpora: list[list[tuple[str, str]]],
    prompts: list[str],
    options: list[str],
    fam: FamilyConfig,
    families: tuple[str, ...],
    rng: np.random.Generator,
) -> np.ndarray:
    """Train family i on corpora[i]; return answer distributions (m, q, V)."""
    probs = []
    jobs = list(zip(families, corpora, spawn(rng, len(families)), strict=True))
    for name, corpus, r in track(jobs, "train model families", total=len(jobs)):
        probs.append(make_family(name, fam).fit(corpus, r).answer_probs(prompts, options))
    return np.stack(probs)


def _family(cfg: FactsConfig | ArithmeticConfig | RandomStringsConfig, device: str) -> FamilyConfig:
    return FamilyConfig(
        d_model=cfg.d_model,
        lm_steps=cfg.lm_steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        cnn_epochs=cfg.cnn_epochs,
        knn_k=cfg.knn_k,
        smoothing=cfg.smoothing,
        device=device,
    )


_FAMILY_NAMES = tuple(FAMILIES)


def _verbal_confidence(probs: np.ndarray, ans: np.ndarray) -> np.ndarray:
    """(m, s, q) verbalised confidence "NN%": each model's own probability of its sampled answer, to the percent."""
    n_s = ans.shape[1]
    return np.round(np.take_along_axis(probs[:, None, :, :].repeat(n_s, 1), ans[..., None], 3)[..., 0], 2)


@dataclass(frozen=True)
class PollGains:
    """Accuracy differences on a set of questions, averaged over independent polls of the same models."""

    cross_minus_single: float  # majority_cross(k per model) - one sample
    confidence_minus_majority: float  # confidence_weighted(k per model) - majority_cross(k per model)
    sd_cross_minus_single: float  # their spread over the polls
    sd_confidence_minus_majority: float


def _poll_gains(
    probs: np.ndarray, gold: np.ndarray, n_samples: int, n_polls: int, rng: np.random.Generator
) -> PollGains:
    """C1 and C5 gains of ``n_polls`` polls drawn from the answer distributions ``probs`` (m, q, V).

    Every poll serves both arms of each difference (paired), so the gains' noise is the polls' disagreement
    only; the mean over polls estimates the expected gain of one poll on these questions.
    """
    k = n_samples // probs.shape[0]
    cross_single, conf_major = [], []
    for _ in range(n_polls):
        ans = sample_answers(probs, n_samples, rng)
        major = _accuracy(aggregate(ans, Rule("majority_cross", k=k), rng=rng), gold)
        weighted = _accuracy(
            aggregate(ans, Rule("confidence_weighted", k=k), _verbal_confidence(probs, ans), rng=rng), gold
        )
        cross_single.append(major - _single(ans, gold))
        conf_major.append(weighted - major)
    return PollGains(
        float(np.mean(cross_single)), float(np.mean(conf_major)), float(np.std(cross_single)), float(np.std(conf_major))
    )


@config
class FactsConfig:
    n_entities: int = param(2000, 20, 5000, help="questions (one per entity); brief Sec. 6: 2000")
    n_options: int = param(10, 2, 10, help="answer vocabulary; brief: 4- or 10-way")
    keep: float = param(0.8, 0.5, 1, help="fraction of the shared corpus each model sees")
    n_samples: int = param(25, 5, 100, help="samples per model (25x compute)")
    families: tuple[str, ...] = param(_FAMILY_NAMES, choices=_FAMILY_NAMES, min_len=2, max_len=5)
    # the families' training budget (FamilyConfig); upper bounds keep one run under an hour on 2 cores
    d_model: int = param(64, 4, 256, help="width of the transformer, GRU and CNN (multiple of 4)")
    lm_steps: int = param(600, 1, 5000, help="transformer and GRU optimisation steps")
    batch_size: int = param(64, 1, 1024, help="transformer and GRU batch size")
    lr: float = param(3e-2, 0, 1, lo_open=True, help="transformer and GRU learning rate")
    cnn_epochs: int = param(30, 1, 500, help="character CNN epochs")
    knn_k: int = param(5, 1, 1000, help="neighbours of the count model")
    smoothing: float = param(0.1, 0, 100, lo_open=True, help="add-alpha of the count model")
    entropy_threshold: float = param(0.5, 0, 1, hi_open=True, help="uncertain: entropy > threshold * ln V")
    n_boot: int = param(1000, 10, 10_000, help="bootstrap resamples of the C2 CIs")
    n_polls: int = param(20, 1, 1000, help="polls averaged by the C1 and C5 checks (paired)")
    control: Literal["none", "planted", "null"] = param(
        "none", help="none: train the families; planted / null: the controls' constructed distributions"
    )

    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_samples < len(self.families):
            raise ValueError(f"n_samples = {self.n_samples}: must be >= the number of families ({len(self.families)})")
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (the transformer's 4 heads)")


@experiment(
    "truth_polling.facts",
    claim="On myth facts polling 25 samples across five small model families does not beat one sample, "
    "errors "
    "agree far above chance, and confidence weighting does not help; on clean facts voting helps.",
    presets={
        "smoke": FactsConfig(n_entities=40, n_samples=10, lm_steps=10, cnn_epochs=2, n_boot=50),
        # quick: lr 1e-2 (was 3e-2, at which the transformer of seed 3 stayed near uniform: fit 0.14)
        "quick": FactsConfig(n_entities=250, lm_steps=300, lr=1e-2, cnn_epochs=20, n_boot=300),
        # controls of the comparative claims: the quick corpus, answer distributions planted instead of trained
        # (planted.py): a shared 3:1 misconception on myth facts (planted) or the same false mass spread evenly
        # over the wrong values (null)
        "planted": FactsConfig(n_entities=250, n_boot=300, control="planted"),
        "null": FactsConfig(n_entities=250, n_boot=300, control="null"),
        # full: 1500 steps at lr 1e-2 so that the transformer fits the 2000-entity corpus (600 steps at lr 3e-2
        # left it near uniform over the options: probability 0.19 on the truth of clean facts, vs 0.80 now)
        "full": FactsConfig(lm_steps=1500, lr=1e-2),
    },
)
def facts(cfg: FactsConfig, rng: np.random.Generator) -> Outcome:
    device = str(resolve_device(cfg.device))  # a device this machine lacks stops the run here
    corpus = make_fact_corpus(cfg.n_entities, rng, n_options=cfg.n_options)
    n_m = len(cfg.families)
    corpora = [subsample_lines(corpus.lines, cfg.keep, rng) for _ in range(n_m)]
    if cfg.control == "none":
        probs = _train_families(corpora, corpus.questions, corpus.options, _family(cfg, device), cfg.families, rng)
    else:  # the controls plant the answer distributions instead of training (planted.py)
        probs = planted_fact_probs(corpus, n_m, cfg.control, rng)
    ans = sample_answers(probs, cfg.n_samples, rng)
    conf = _verbal_confidence(probs, ans)
    k_cross = cfg.n_samples // n_m
    k_sp = (cfg.n_samples - n_m) // n_m  # SP: k answers per model plus one meta-prediction per model
    metrics: dict[str, float] = {}
    rows = []
    fig, ax = new_figure("Facts: accuracy vs compute (majority_cross)", "compute (samples per question)", "accuracy")
    for kind in ("clean", "myth", "rare", "all"):
        sel = np.ones(len(corpus.gold), bool) if kind == "all" else corpus.kind == kind
        a, g, c, p = ans[:, :, sel], corpus.gold[sel], conf[:, :, sel], probs[:, sel]
        opts = list(range(cfg.n_options))
        res = {
            "single": _single(a, g),
            "majority_self": _self_consistency(a, g, cfg.n_samples, rng),
            "majority_cross": _accuracy(aggregate(a, Rule("majority_cross", k=k_cross), rng=rng), g),
            "confidence_weighted": _accuracy(aggregate(a, Rule("confidence_weighted", k=k_cross), c, rng=rng), g),
            "log_odds_weighted": _accuracy(aggregate(a, Rule("log_odds_weighted", k=k_cross), c, rng=rng), g),
            "surprisingly_popular": _accuracy(
                aggregate(a, Rule("surprisingly_popular", k=k_sp), None, p, options=opts, rng=rng), g
            ),
            "dawid_skene": _accuracy(aggregate(a, Rule("dawid_skene", k=k_cross), rng=rng), g),
        }
        for rule, acc in res.items():
            metrics[f"{kind}_{rule}"] = acc
        rows.append({"facts": kind, "n": int(sel.sum()), **{r: round(v, 3) for r, v in res.items()}})
        curve = [_accuracy(aggregate(a, Rule("majority_cross", k=k), rng=rng), g) for k in range(1, k_cross + 1)]
        ax.plot([1] + [n_m * k for k in range(1, k_cross + 1)], [res["single"], *curve], marker="o", label=kind)
    ax.legend()
    myth = corpus.kind == "myth"
    correct = ans[:, 0, :] == corpus.gold[None, :]
    # per family, on myth facts: probability on the popular wrong value and on the truth (diagnostic: a
    # family that learned the myth puts most mass on it; one that did not spreads its errors)
    q_myth = np.nonzero(myth)[0]
    for m, name in enumerate(cfg.families):
        metrics[f"myth_p_myth_{name}"] = float(probs[m, q_myth, corpus.myth[q_myth]].mean())
        metrics[f"myth_p_gold_{name}"] = float(probs[m, q_myth, corpus.gold[q_myth]].mean())
    # Precondition: every family learned the corpus. Its fit is how far its mean probability on the truth of
    # clean facts moved from uniform (1/V) towards the corpus's own frequency of the truth on them (a
    # perfect learner of the shared corpus scores 1, an untrained one 0). Before this guard, the quick
    # transformer of seed 3 stayed near uniform (probability 0.11 on the truth of myths, 0.21 on the myth)
    # and alone sank the both-wrong check (its four pairs 1.6-1.9x, the other six 4.2-7.2x).
    q_clean = np.nonzero(corpus.kind == "clean")[0]
    f_clean = float(corpus_answer_frequencies(corpus)[q_clean, corpus.gold[q_clean]].mean())
    uniform = 1.0 / cfg.n_options
    for m, name in enumerate(cfg.families):
        p_clean = float(probs[m, q_clean, corpus.gold[q_clean]].mean())
        metrics[f"clean_p_gold_{name}"] = p_clean
        metrics[f"clean_fit_{name}"] = (p_clean - uniform) / (f_clean - uniform)
    metrics["clean_corpus_frequency_of_truth"] = f_clean
    metrics["min_family_clean_fit"] = min(metrics[f"clean_fit_{name}"] for name in cfg.families)
    pair_rows, ratios = [], []
    for i, j in itertools.combinations(range(n_m), 2):
        # sample s of model i is paired with sample s of model j: all n_samples pairs per question
        g_tiled = np.tile(corpus.gold[myth], cfg.n_samples)
        bw = agreement_when_both_wrong(ans[i][:, myth].ravel(), ans[j][:, myth].ravel(), g_tiled, cfg.n_options)
        ratios.append(bw.ratio)
        pair_rows.append(
            {
                "pair": f"{cfg.families[i]}-{cfg.families[j]}",
                "both_wrong_n": bw.n_both_wrong,
                "agree": round(bw.rate, 3),
                "baseline": round(bw.baseline, 3),
                "ratio": round(bw.ratio, 2),
                "kappa_all": round(cohen_kappa(ans[i, 0], ans[j, 0]), 3),
            }
        )
    phi = phi_matrix(correct)
    cond, marg = error_overlap(correct)
    off = ~np.eye(n_m, dtype=bool)
    metrics.update(
        {
            "myth_min_pair_both_wrong_ratio": float(np.nanmin(ratios)),
            "mean_phi": float(np.nanmean(phi[off])),
            "mean_p_wrong_given_wrong": float(np.nanmean(cond[off])),
            "mean_p_wrong": float(marg.mean()),
        }
    )
    sv = social_vs_truth(probs, ans, corpus.gold, rng, cfg.entropy_threshold, cfg.n_boot)
    metrics.update(
        {
            "social_acc": sv.social[0],
            "social_lo": sv.social[1],
            "social_hi": sv.social[2],
            "truth_acc": sv.truth[0],
            "truth_lo": sv.truth[1],
            "truth_hi": sv.truth[2],
            "uncertain_items": sv.n_items,
        }
    )
    ok = ans == corpus.gold[None, None, :]
    metrics["confidence_auroc_all"] = auroc(conf.ravel(), ok.ravel())
    metrics["confidence_auroc_myth"] = auroc(conf[:, :, myth].ravel(), ok[:, :, myth].ravel())
    metrics["confidence_ece_all"] = expected_calibration_error(conf, ok)
    metrics["myth_confidence_gain_one_poll"] = metrics["myth_confidence_weighted"] - metrics["myth_majority_cross"]
    metrics["myth_cross25_minus_single_one_poll"] = metrics["myth_majority_cross"] - metrics["myth_single"]
    # Deviation: the C1 and C5 checks average over n_polls polls (paired): one poll of the quick preset's 75 myth facts
    # moves the confidence-weighting gain in steps of 1/75 = 0.013, two thirds of the 0.02 margin, so that
    # one or two questions decided the check (see the card).
    gains = _poll_gains(probs[:, myth], corpus.gold[myth], cfg.n_samples, cfg.n_polls, rng)
    metrics["myth_cross25_minus_single"] = gains.cross_minus_single
    metrics["myth_confidence_gain"] = gains.confidence_minus_majority
    metrics["myth_cross25_minus_single_sd_over_polls"] = gains.sd_cross_minus_single
    metrics["myth_confidence_gain_sd_over_polls"] = gains.sd_confidence_minus_majority
    checks = [
        # Preconditions: the families learned the corpus (halfway from uniform to the corpus's frequency of
        # the truth, fixed before the seed-0-3 runs; trained families score 0.71-0.97, the seed-3 transformer
        # at the old quick budget 0.08), and polling can gain where errors are not shared (clean facts).
        Check("min_family_clean_fit", metrics["min_family_clean_fit"], ">= 0.5", role="precondition"),
        Check(
            "clean_cross25_minus_single",
            metrics["clean_majority_cross"] - metrics["clean_single"],
            ">= 0",
            role="precondition",
        ),
        Check(
            "myth_cross25_minus_single",
            metrics["myth_cross25_minus_single"],
            "<= 0.02",
            paper="no consistent gain (C1)",
            comparative=True,
        ),
        Check(
            "myth_min_pair_both_wrong_ratio",
            metrics["myth_min_pair_both_wrong_ratio"],
            ">= 2.0",
            paper="errors strongly correlated (C3)",
            comparative=True,
        ),
        Check(
            "social_minus_truth_uncertain",
            sv.social[0] - sv.truth[0],
            "> 0",
            paper="C2: social > truth",
            comparative=True,
        ),
        Check(
            "myth_confidence_weighted_gain",
            metrics["myth_confidence_gain"],
            "in [-0.02, 0.02]",
            paper="C5: no help",
            comparative=True,
        ),
    ]
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"facts_accuracy_vs_compute": fig},
        tables={"accuracy_25x": rows, "myth_pairs": pair_rows},
    )


@config
class ArithmeticConfig:
    n_test: int = param(200, 1, 500, help="test sums")
    low: int = param(10, 0, 100, help="smallest operand")
    high: int = param(99, 1, 200, help="largest operand (2-digit sums: 99)")
    train_frac: float = param(0.5, 0.1, 0.9, help="fraction of all operand pairs used for training")
    keep: float = param(0.8, 0.5, 1, help="fraction of the training lines each model sees")
    n_samples: int = param(25, 5, 100, help="samples per model (25x compute)")
    families: tuple[str, ...] = param(_FAMILY_NAMES, choices=_FAMILY_NAMES, min_len=2, max_len=5)
    # the families' training budget (FamilyConfig); upper bounds keep one run under an hour on 2 cores
    d_model: int = param(64, 4, 256, help="width of the transformer, GRU and CNN (multiple of 4)")
    lm_steps: int = param(400, 1, 5000, help="transformer and GRU optimisation steps")
    batch_size: int = param(64, 1, 1024, help="transformer and GRU batch size")
    lr: float = param(1e-2, 0, 1, lo_open=True, help="transformer and GRU learning rate")
    cnn_epochs: int = param(8, 1, 500, help="character CNN epochs")
    knn_k: int = param(5, 1, 1000, help="neighbours of the count model")
    smoothing: float = param(0.1, 0, 100, lo_open=True, help="add-alpha of the count model")
    control: Literal["none", "planted", "null"] = param(
        "none", help="none: train the families; planted / null: planted distributions, exact / accept-all verifier"
    )

    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if not self.low + 9 <= self.high <= self.low + 100:
            raise ValueError(
                f"high = {self.high}: must be in [low + 9, low + 100] = [{self.low + 9}, {self.low + 100}] "
                "(at least 100 operand pairs; at most 201 answer options)"
            )
        n_pairs = (self.high - self.low + 1) ** 2
        free = n_pairs - int(self.train_frac * n_pairs)
        if self.n_test > free:
            raise ValueError(f"n_test = {self.n_test}: only {free} operand pairs are left beside the training pairs")
        if self.n_samples < len(self.families):
            raise ValueError(f"n_samples = {self.n_samples}: must be >= the number of families ({len(self.families)})")
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (the transformer's 4 heads)")


#: Planted probability of the true sum per sample: one sample is right 2 % of the time and 25 filtered samples
#: 1 - 0.98^25 = 40 %, a verified gain of 0.38, the gain our full preset's trained families show (0.375); the
#: paper's own pass@k numbers were not recovered.
PLANTED_P_GOLD = 0.02


@experiment(
    "truth_polling.arithmetic",
    claim="In a verified domain (2-digit sums with an exact checker) 25 samples filtered by the verifier "
    "beat one "
    "sample by a wide margin (pass@k), unlike polling without a verifier.",
    presets={
        "smoke": ArithmeticConfig(n_test=20, high=29, n_samples=10, lm_steps=10, cnn_epochs=2),
        "quick": ArithmeticConfig(n_test=100, high=49, lm_steps=150),
        # controls: the quick sums, answer distributions planted (probability PLANTED_P_GOLD on the true sum);
        # planted keeps the exact verifier, null replaces it by one that accepts every answer
        "planted": ArithmeticConfig(n_test=100, high=49, control="planted"),
        "null": ArithmeticConfig(n_test=100, high=49, control="null"),
        "full": ArithmeticConfig(),
    },
)
def arithmetic(cfg: ArithmeticConfig, rng: np.random.Generator) -> Outcome:
    device = str(resolve_device(cfg.device))  # a device this machine lacks stops the run here
    task = make_arithmetic(cfg.n_test, rng, train_frac=cfg.train_frac, low=cfg.low, high=cfg.high)
    n_m = len(cfg.families)
    corpora = [subsample_lines(task.train, cfg.keep, rng) for _ in range(n_m)]
    if cfg.control == "none":
        probs = _train_families(corpora, task.questions, task.options, _family(cfg, device), cfg.families, rng)
    else:  # the controls plant the answer distributions instead of training (planted.py)
        probs = planted_sum_probs(task.gold, len(task.options), n_m, PLANTED_P_GOLD, rng)
    ans = sample_answers(probs, cfg.n_samples, rng)
    gold = task.gold

    def verifier(q: int, code: int) -> bool:
        # null control: a verifier that accepts every answer, so that verifier_filter is plain plurality
        return True if cfg.control == "null" else task.check(q, task.options[code])

    # Precondition (oracle): the exact checker accepts the true sum of every test question and nothing else.
    oracle_ok = np.array([[task.check(q, o) == (c == gold[q]) for c, o in enumerate(task.options)]
                          for q in range(len(gold))])

    ks = list(range(1, cfg.n_samples + 1))
    vf = [
        [
            _accuracy(aggregate(ans, Rule("verifier_filter", k=k, models=(m,)), verifier=verifier, rng=rng), gold)
            for k in ks
        ]
        for m in range(n_m)
    ]
    sc = [_self_consistency(ans, gold, k, rng) for k in ks]
    vf_mean = np.mean(vf, axis=0)
    single = _single(ans, gold)
    cross = _accuracy(aggregate(ans, Rule("majority_cross", k=cfg.n_samples // n_m), rng=rng), gold)
    fig, ax = new_figure("Arithmetic (verified): accuracy vs compute", "samples per question", "accuracy")
    ax.plot(ks, vf_mean, marker="o", label="verifier_filter (mean over models)")
    ax.plot(ks, sc, marker="s", label="majority_self (mean over models)")
    ax.legend()
    metrics = {
        "single": single,
        "verifier_filter_25": float(vf_mean[-1]),
        "majority_self_25": sc[-1],
        "majority_cross_25": cross,
        "verified_gain": float(vf_mean[-1]) - single,
        "checker_exact_fraction": float(oracle_ok.mean()),
        # expected one-sample accuracy (no sampling noise): the families' mean probability on the true sum
        "mean_p_gold": float(np.take_along_axis(probs, gold[None, :, None], 2).mean()),
        "chance": 1.0 / len(task.options),
    }
    metrics["mean_p_gold_over_chance"] = metrics["mean_p_gold"] / metrics["chance"]
    for m, name in enumerate(cfg.families):
        metrics[f"{name}_single"] = float(np.mean(ans[m, 0] == gold))
        metrics[f"{name}_verifier_filter_25"] = vf[m][-1]
    checks = [
        Check("checker_exact_fraction", metrics["checker_exact_fraction"], "== 1", role="precondition"),
        # the families learned some arithmetic: 1.5x the uniform guess, halfway from an untrained family (1x;
        # with 79 options even it would pass the verified-gain claim: 1 - (78/79)^25 = 0.27) to the trained
        # ones (quick seeds 0-3: 2.23-2.80x, seen before this target was set)
        Check("mean_p_gold_over_chance", metrics["mean_p_gold_over_chance"], ">= 1.5", role="precondition"),
        Check(
            "verifier_filter25_minus_single",
            metrics["verified_gain"],
            ">= 0.15",
            paper="pass@k helps with a verifier (C6)",
            comparative=True,
        ),
    ]
    rows = [
        {
            "family": n,
            "single": round(metrics[f"{n}_single"], 3),
            "verifier_filter_25": round(metrics[f"{n}_verifier_filter_25"], 3),
        }
        for n in cfg.families
    ]
    return Outcome(
        metrics=metrics,
        checks=checks,
        figures={"arithmetic_accuracy_vs_compute": fig},
        tables={"per_family": rows},
    )


@config
class RandomStringsConfig:
    n_lines: int = param(1000, 10, 20_000, help="training lines per model")
    n_probes: int = param(1000, 10, 20_000, help="unseen random-string prompts")
    string_length: int = param(6, 1, 16, help="symbols per random string")
    exponent: float = param(1.2, 0, 5, help="Zipf exponent of the digit distributions [ours]")
    families: tuple[str, ...] = param(_FAMILY_NAMES, choices=_FAMILY_NAMES, min_len=2, max_len=5)
    # the families' training budget (FamilyConfig); upper bounds keep one run under an hour on 2 cores
    d_model: int = param(64, 4, 256, help="width of the transformer, GRU and CNN (multiple of 4)")
    lm_steps: int = param(300, 1, 5000, help="transformer and GRU optimisation steps")
    batch_size: int = param(64, 1, 1024, help="transformer and GRU batch size")
    lr: float = param(1e-2, 0, 1, lo_open=True, help="transformer and GRU learning rate")
    cnn_epochs: int = param(10, 1, 500, help="character CNN epochs")
    knn_k: int = param(5, 1, 1000, help="neighbours of the count model")
    smoothing: float = param(0.1, 0, 100, lo_open=True, help="add-alpha of the count model")
    n_perm: int = param(200, 1, 1000, help="permutations of the mutual-information test")

    device: str = param("cpu", help="torch device: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.d_model % 4:
            raise ValueError(f"d_model = {self.d_model}: must be a multiple of 4 (the transformer's 4 heads)")


def _probe(task_probs: np.ndarray, rng: np.random.Generator, n_perm: int) -> dict[str, float]:
    """Cross-model agreement on the probes: sampled (one output per model and prompt, the brief's exact
    agreement) and expected from the probabilities, each beside the independence baseline from the two
    models' marginals; mutual information of the sampled outputs with a permutation test over prompts."""
    outs = sample_answers(task_probs, 1, rng)[:, 0, :]  # (m, probes): one output per model and prompt
    n_m, n_v = outs.shape[0], task_probs.shape[2]
    agree, base, expected, expected_base, mi, pvals = [], [], [], [], [], []
    for i, j in itertools.combinations(range(n_m), 2):
        agree.append(np.mean(outs[i] == outs[j]))
        pi, pj = (np.bincount(outs[x], minlength=n_v) / outs.shape[1] for x in (i, j))
        base.append(float(pi @ pj))
        # E_x[sum_v p_i(v|x) p_j(v|x)] vs sum_v pbar_i(v) pbar_j(v): > 1 means per-prompt dependence
        expected.append(float(np.mean(np.sum(task_probs[i] * task_probs[j], axis=1))))
        expected_base.append(float(task_probs[i].mean(axis=0) @ task_probs[j].mean(axis=0)))
        mi.append(mutual_information(outs[i], outs[j]))
        pvals.append(permutation_pvalue_mi(outs[i], outs[j], rng, n_perm))
    ratios = np.array(expected) / np.array(expected_base)
    return {
        "agreement": float(np.mean(agree)),
        "independence": float(np.mean(base)),
        "chance": 1.0 / n_v,
        "expected_agreement": float(np.mean(expected)),
        "expected_independence": float(np.mean(expected_base)),
        "max_pair_expected_over_independence": float(ratios.max()),
        "mean_pair_expected_over_independence": float(ratios.mean()),
        "mi_nats": float(np.mean(mi)),
        "min_mi_pvalue": float(np.min(pvals)),
        "n_pairs_mi_p_below_0.01": float(np.sum(np.array(pvals) < 0.01)),
    }


@experiment(
    "truth_polling.random_strings",
    claim="Models trained on one corpus agree on 'random' digits for out-of-distribution random-string "
    "prompts far above 1/V, through their shared digit bias; models with different digit distributions "
    "agree only at the independence level.",
    presets={
        "smoke": RandomStringsConfig(n_lines=60, n_probes=40, n_perm=10, lm_steps=10, cnn_epochs=2),
        "quick": RandomStringsConfig(n_lines=300, n_probes=300, n_perm=50, lm_steps=80, cnn_epochs=5),
        "full": RandomStringsConfig(),
    },
)
def random_strings(cfg: RandomStringsConfig, rng: np.random.Generator) -> Outcome:
    device = str(resolve_device(cfg.device))  # a device this machine lacks stops the run here
    metrics: dict[str, float] = {}
    family = _family(cfg, device)
    for shared in (True, False):
        task = make_random_digit_task(
            len(cfg.families),
            cfg.n_lines,
            cfg.n_probes,
            rng,
            shared=shared,
            exponent=cfg.exponent,
            string_length=cfg.string_length,
        )
        probs = _train_families(task.corpora, task.probes, task.options, family, cfg.families, rng)
        stats = _probe(probs, rng, cfg.n_perm)
        # how much each family's output distribution moves with the probe (0 if it cannot read it)
        spread = probs.std(axis=1).max(axis=1)  # (m,): largest per-digit s.d. across probes
        stats["min_family_output_sd"] = float(spread.min())
        tag = "same" if shared else "control"
        metrics.update({f"{tag}_{k}": v for k, v in stats.items()})
        metrics.update({f"{tag}_{name}_output_sd": float(v) for name, v in zip(cfg.families, spread, strict=True)})
    metrics["same_over_chance"] = metrics["same_agreement"] / metrics["same_chance"]
    metrics["same_over_independence"] = metrics["same_agreement"] / metrics["same_independence"]
    metrics["control_over_independence"] = metrics["control_agreement"] / metrics["control_independence"]
    metrics["same_expected_over_chance"] = metrics["same_expected_agreement"] / metrics["same_chance"]
    metrics["same_expected_over_independence"] = (
        metrics["same_expected_agreement"] / metrics["same_expected_independence"]
    )
    metrics["control_expected_over_independence"] = (
        metrics["control_expected_agreement"] / metrics["control_expected_independence"]
    )
    fig, ax = new_figure("Random-string probe: cross-model agreement", "condition", "P(outputs agree)")
    labels = ["same corpus", "control"]
    ax.bar([0, 1], [metrics["same_agreement"], metrics["control_agreement"]], width=0.35, label="agreement")
    ax.bar(
        [0.35, 1.35],
        [metrics["same_independence"], metrics["control_independence"]],
        width=0.35,
        label="independence baseline",
    )
    ax.axhline(metrics["same_chance"], color="k", linestyle=":", label="1/V")
    ax.set_xticks([0.17, 1.17], labels)
    ax.legend()
    checks = [
        Check(
            "same_corpus_agreement_over_chance",
            metrics["same_over_chance"],
            ">= 1.5",
            paper="different models produce correlated outputs (abstract)",
        ),
        Check("control_agreement_over_independence", metrics["control_over_independence"], "in [0.833, 1.2]"),
        # Precondition: the probe reaches every family (before the probes were written one symbol per word,
        # the word-level families saw <unk> for every probe and this s.d. was <= 8e-15).
        Check(
            "min_family_output_sd_across_probes",
            min(metrics["same_min_family_output_sd"], metrics["control_min_family_output_sd"]),
            "> 0.001",
            role="precondition",
        ),
    ]
    return Outcome(metrics=metrics, checks=checks, figures={"random_strings_agreement": fig})
