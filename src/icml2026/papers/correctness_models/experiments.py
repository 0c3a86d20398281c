"""Registered experiments of correctness_models (brief Sec. 7, criteria 1-7)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np

from icml2026.core import Check, Outcome, experiment, spawn
from icml2026.core.config import config, param
from icml2026.core.device import check_device_name, resolve_device
from icml2026.core.plotting import new_figure

from .calibration import CALIBRATORS, fit_calibrator
from .metrics import (
    accuracy_at_coverage,
    aurc,
    auroc,
    brier_score,
    expected_calibration_error,
    reliability_bins,
    risk_coverage,
    rms_calibration_error,
)

__all__ = ["GCMConfig", "MetricsConfig", "SelfCrossConfig"]


# ------------------------------------------------------------------------------------------ helpers
def _nan_if_undefined(fn, *args, **kwargs) -> float:  # type: ignore[no-untyped-def]
    """The metric, or NaN where it is undefined (one class only); a NaN metric fails its checks."""
    try:
        return float(fn(*args, **kwargs))
    except ValueError:
        return float("nan")


def _sharpen(p: np.ndarray, temperature: float) -> np.ndarray:
    """sigmoid(temperature * logit(p)): the same ranking, made over-confident for temperature > 1."""
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return 1.0 / (1.0 + np.exp(-temperature * np.log(q / (1 - q))))


def _percentile_interval(strata: list[np.ndarray], statistic: Callable[..., float], n_boot: int,
                         rng: np.random.Generator, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*index_arrays)``, each stratum's index array resampled
    with replacement on its own (``scipy.stats.bootstrap``, one sample per stratum, ``paired=False``).

    ``statistic`` returns NaN on a resample where it is undefined (one class only, a ratio's denominator
    <= 0): such resamples are left out of the interval, as before the move to scipy, and with fewer than
    10 defined resamples the interval is NaN (which fails its check).
    """
    from scipy.stats import DegenerateDataWarning, bootstrap

    if min(len(s) for s in strata) < 2:  # scipy needs two items a sample; one item is one class anyway
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        # scipy warns that its own interval is NaN when a resample is undefined; those are dropped below
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = bootstrap(tuple(strata), statistic, n_resamples=n_boot, paired=False, vectorized=False,
                        method="percentile", confidence_level=level, rng=rng)
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    dist = dist[np.isfinite(dist)]
    if dist.size < 10:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    lo, hi = np.quantile(dist, [a, 1 - a])  # linear interpolation, as scipy's own percentile interval
    return float(lo), float(hi)


def _bootstrap_diff(a: np.ndarray, b: np.ndarray, y: np.ndarray, groups: np.ndarray, n_boot: int,
                    rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of mean_g [AUROC(a) - AUROC(b)] over targets g, resampling eval items
    within each target; resamples with one class are skipped."""
    strata = [np.flatnonzero(groups == g) for g in np.unique(groups)]

    def mean_diff(*idx: np.ndarray) -> float:
        per = []
        for s in idx:
            if y[s].min() == y[s].max():
                return float("nan")
            per.append(auroc(a[s], y[s]) - auroc(b[s], y[s]))
        return float(np.mean(per))

    return _percentile_interval(strata, mean_diff, n_boot, rng)


def _ratio_ci_high(inputs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None], n_boot: int,
                   rng: np.random.Generator) -> float:
    """97.5th percentile of gap(bare) / gap(phrased) over bootstrap resamples, gap = AUROC(answerful) -
    AUROC(answerless) on the same resampled eval items (each condition's items resampled on their own);
    NaN when a condition is missing or too few resamples are defined (one class, or a phrased gap <= 0)."""
    bare, phrased = inputs.get("bare"), inputs.get("phrased")
    if bare is None or phrased is None:
        return float("nan")

    def ratio(s_bare: np.ndarray, s_phrased: np.ndarray) -> float:
        gaps = []
        for (p_af, p_al, y), s in ((bare, s_bare), (phrased, s_phrased)):
            if y[s].min() == y[s].max():
                return float("nan")
            gaps.append(auroc(p_af[s], y[s]) - auroc(p_al[s], y[s]))
        return gaps[0] / gaps[1] if gaps[1] > 0 else float("nan")

    return _percentile_interval([np.arange(bare[2].size), np.arange(phrased[2].size)], ratio, n_boot, rng)[1]


# --------------------------------------------------------------------------- criterion 1: metrics
@config
class MetricsConfig:
    n_calibrated: int = param(200_000, 1000, 5_000_000, help="samples of the calibrated-scores check (brief: 200k)")
    n_oracle: int = param(10_000, 100, 5_000_000, help="size of the oracle-ranking AURC check (brief: 10000)")
    error_rate: float = param(0.3, 0.0, 1.0, lo_open=True, hi_open=True, help="error rate e of the AURC check")
    accuracy: float = param(0.7, 0.0, 1.0, lo_open=True, hi_open=True, help="accuracy of the p=1 ECE check")


@experiment(
    "correctness_models.metrics",
    claim="The official metrics behave as their definitions require: ECE ~ 0 for calibrated scores, "
    "ECE = 1 - accuracy for p = 1, AURC of the oracle ranking = e + (1 - e) ln(1 - e), ECE equals netcal.",
    presets={"smoke": MetricsConfig(n_calibrated=20_000, n_oracle=1000), "quick": MetricsConfig(),
             "full": MetricsConfig(n_calibrated=2_000_000, n_oracle=100_000)},
)
def metrics(cfg: MetricsConfig, rng: np.random.Generator) -> Outcome:
    from netcal.metrics import ECE

    r1, r2 = spawn(rng, 2)
    p = r1.random(cfg.n_calibrated)
    y = (r1.random(cfg.n_calibrated) < p).astype(np.int64)  # labels ~ Bernoulli(p): calibrated by design
    ece_cal = expected_calibration_error(p, y)
    n_p1 = 100_000
    # exactly round(accuracy * n) correct labels in random order, so the target 1 - accuracy is exact
    n_right = int(round(cfg.accuracy * n_p1))
    y1 = r2.permutation(np.r_[np.ones(n_right), np.zeros(n_p1 - n_right)]).astype(np.int64)
    ece_one = expected_calibration_error(np.ones(n_p1), y1)
    acc_one = float(y1.mean())
    e = cfg.error_rate
    n_err = int(round(e * cfg.n_oracle))
    correct = np.r_[np.ones(cfg.n_oracle - n_err), np.zeros(n_err)].astype(np.int64)
    conf = np.linspace(1.0, 0.0, cfg.n_oracle)  # strictly decreasing: all correct first
    aurc_oracle = aurc(conf, correct)
    e_real = n_err / cfg.n_oracle
    closed = e_real + (1 - e_real) * np.log(1 - e_real)
    pred = (p > 0.5).astype(np.int64)
    netcal_ece = float(ECE(bins=30).measure(np.where(pred == 1, p, 1 - p), (pred == y).astype(np.int64)))
    m = {
        "ece_calibrated": ece_cal,
        "ece_p1": ece_one,
        "one_minus_accuracy_p1": 1 - acc_one,
        "aurc_oracle": aurc_oracle,
        "aurc_closed_form": float(closed),
        "aurc_oracle_err": abs(aurc_oracle - closed),
        "ece_minus_netcal": abs(ece_cal - netcal_ece),
        "rmsce_calibrated": rms_calibration_error(p, y, formula="rms"),
    }
    checks = [
        Check("ece_calibrated", ece_cal, "< 0.005"),  # brief criterion 1
        # |ECE - (1 - accuracy)| <= 0.005 (brief criterion 1: 0.30 for 70% accurate labels); a p = 1 that
        # fell outside the bins (or a positive-class ECE on labels of 0) would miss it
        Check("ece_p1_minus_1_minus_acc", abs(ece_one - (1 - acc_one)), "<= 0.005"),
        Check("aurc_oracle_err", abs(aurc_oracle - closed), "< 1e-3"),  # brief: within 1e-3
        Check("ece_minus_netcal", m["ece_minus_netcal"], "< 1e-9"),  # same definition, float round-off only
    ]
    return Outcome(metrics=m, checks=checks)


# ------------------------------------------------------------------- criteria 2, 3, 4, 5, 7: GCM
@config
class GCMConfig:
    n_questions: int = param(20_000, 200, 40_000, help="world questions (brief: 20k)")
    n_entities: int = param(4000, 50, 20_000, help="entities of the fact KB")
    corpus_arith: int = param(3000, 10, 100_000, help="arithmetic problems in a target's corpus")
    corpus_fact: int = param(20_000, 10, 200_000, help="fact statements in a target's corpus (Zipf-weighted)")
    lm_steps: int = param(600, 1, 20_000, help="training steps of the tiny GPT-2 target")
    gru_steps: int = param(600, 1, 20_000, help="training steps of the GRU target")
    mlp_steps: int = param(400, 1, 20_000, help="training steps of the bag-of-characters MLP target")
    cm_c: float = param(1.0, 1e-4, 1e4, help="inverse L2 strength of the feature CMs")
    retrieval_k: int = param(16, 1, 256, help="retrieved past examples per query (paper's main GCM: k = 0)")
    overconfidence: float = param(4.0, 1.5, 20.0, help="logit scale making the over-confident CM (criterion 2)")
    n_bootstrap: int = param(200, 10, 2000, help="bootstrap resamples of the GCM - SCM interval")
    encoder: Literal["minilm", "hashed"] = "minilm"  # "hashed": cheap trigram encoder of the smoke preset
    device: str = param("cpu", help="torch device of the targets and MiniLM: cpu, cuda, cuda:<n>, mps (--device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_questions > 6 * self.n_entities:
            raise ValueError(f"n_entities = {self.n_entities}: must be >= n_questions / 6 = "
                             f"{self.n_questions / 6:g} (half the questions are facts, 3 attributes each)")


def _target_scale(cfg: GCMConfig):  # type: ignore[no-untyped-def]
    from .targets import TargetScale

    return TargetScale(corpus_arith=cfg.corpus_arith, corpus_fact=cfg.corpus_fact, lm_steps=cfg.lm_steps,
                       gru_steps=cfg.gru_steps, mlp_steps=cfg.mlp_steps, device=cfg.device)


def _fit_predict(embedder, variant, c, train, evals, names):  # type: ignore[no-untyped-def]
    """Fit a FeatureCM on ``train`` and predict each of ``evals``; None when training has one class."""
    from .cms import FeatureCM

    qs, rs, ts, ys, _ = train
    if ys.min() == ys.max():
        return [None for _ in evals]
    cm = FeatureCM(embedder, variant=variant, c=c, target_names=names).fit(qs, rs, ts, ys)
    return [cm.predict(e[0], e[1], e[2]) for e in evals]


@experiment(
    "correctness_models.gcm",
    claim="A generalized CM trained on the pooled histories of five target families matches or beats each "
    "target's specific CM, transfers to a held-out family, ranks answers for abstention better than the "
    "targets' own confidence, reads answer phrasing, and post-hoc calibration removes most of its ECE.",
    presets={
        "smoke": GCMConfig(n_questions=300, n_entities=100, corpus_arith=200, corpus_fact=300, lm_steps=10,
                           gru_steps=10, mlp_steps=10, n_bootstrap=10, encoder="hashed"),
        "quick": GCMConfig(n_questions=1600, n_entities=400, corpus_arith=2000, corpus_fact=4000, lm_steps=250,
                           gru_steps=250,
                           mlp_steps=300, n_bootstrap=100),
        "full": GCMConfig(),
    },
)
def gcm(cfg: GCMConfig, rng: np.random.Generator) -> Outcome:
    from .baselines import RetrievalCM
    from .cms import Embedder, HashedEncoder
    from .pipeline import build_histories

    resolve_device(cfg.device)  # a missing device fails here, before any work (the parts take its name)
    r_hist, r_boot = spawn(rng, 2)
    hist = build_histories(cfg.n_questions, _target_scale(cfg), r_hist, n_entities=cfg.n_entities)
    fams = hist.families
    emb = Embedder(HashedEncoder() if cfg.encoder == "hashed" else None, device=cfg.device)
    m: dict[str, float] = {}
    ev = {f: hist.part([f], "eval") for f in fams}
    cal = {f: hist.part([f], "cal") for f in fams}
    tr = {f: hist.part([f], "train") for f in fams}
    pooled_train = hist.part(list(fams), "train")
    pooled_cal = hist.part(list(fams), "cal")

    # SCM per target; GCM pooled (Model Alpha, no name); GCM with the model name; leave-one-target-out.
    gcm_preds = _fit_predict(emb, "answerful", cfg.cm_c, pooled_train,
                             [ev[f] for f in fams] + [pooled_cal], fams)
    named_preds = _fit_predict(emb, "with_model_name", cfg.cm_c, pooled_train, [ev[f] for f in fams], fams)
    retr = RetrievalCM(emb, k=cfg.retrieval_k).fit(*pooled_train[:4])
    fig_rc, ax_rc = new_figure("Risk-coverage per target (eval split)", "coverage", "risk (target error rate)")
    gcm_all, scm_all, y_all, g_all = [], [], [], []
    n_aurc_win = 0
    loto_ok = 0
    for i, f in enumerate(fams):
        qs, rs, ts, y, conf = ev[f]
        m[f"base_rate_{f}"] = float(y.mean())
        (p_scm,) = _fit_predict(emb, "answerful", cfg.cm_c, tr[f], [ev[f]], fams)
        others = [g for g in fams if g != f]
        p_loto, p_loto_cal = _fit_predict(emb, "answerful", cfg.cm_c, hist.part(others, "train"),
                                          [ev[f], cal[f]], fams)
        p_gcm, p_named = gcm_preds[i], named_preds[i]
        p_retr = retr.predict(qs, rs, ts)
        for name, p in (("scm", p_scm), ("gcm", p_gcm), ("gcm_named", p_named), ("loto", p_loto),
                        ("maxprob", conf), ("retrieval", p_retr)):
            m[f"auroc_{name}_{f}"] = float("nan") if p is None else _nan_if_undefined(auroc, p, y)
        m[f"ece_maxprob_{f}"] = expected_calibration_error(conf, y)
        m[f"ece_maxprob_iso_{f}"] = float("nan")
        m[f"ece_loto_iso_{f}"] = float("nan")
        cq, cr, ct, cy, cconf = cal[f]
        if cy.min() != cy.max():
            iso_self = fit_calibrator("isotonic", cconf, cy)
            m[f"ece_maxprob_iso_{f}"] = expected_calibration_error(iso_self.predict(conf), y)
            if p_loto is not None:
                iso = fit_calibrator("isotonic", p_loto_cal, cy)
                m[f"ece_loto_iso_{f}"] = expected_calibration_error(iso.predict(p_loto), y)
        scm_auc = m[f"auroc_scm_{f}"]
        ratio = m[f"auroc_loto_{f}"] / scm_auc if scm_auc > 0 else float("nan")
        m[f"loto_over_scm_{f}"] = ratio
        loto_ok += int(ratio >= 0.9 and m[f"ece_loto_iso_{f}"] < m[f"ece_maxprob_{f}"])
        if p_gcm is not None:
            m[f"aurc_gcm_{f}"] = aurc(p_gcm, y)
            m[f"aurc_maxprob_{f}"] = aurc(conf, y)
            m[f"acc_at_50_gcm_{f}"] = accuracy_at_coverage(p_gcm, y, 0.5)
            m[f"acc_at_50_maxprob_{f}"] = accuracy_at_coverage(conf, y, 0.5)
            m[f"acc_at_80_gcm_{f}"] = accuracy_at_coverage(p_gcm, y, 0.8)
            m[f"acc_at_80_maxprob_{f}"] = accuracy_at_coverage(conf, y, 0.8)
            n_aurc_win += int(m[f"aurc_gcm_{f}"] < m[f"aurc_maxprob_{f}"])
            rc = risk_coverage(p_gcm, y)
            line = ax_rc.plot(rc.coverage, rc.risk, label=f"{f} GCM")[0]
            rc0 = risk_coverage(conf, y)
            ax_rc.plot(rc0.coverage, rc0.risk, linestyle="--", color=line.get_color(), label=f"{f} max-prob")
        if p_gcm is not None and p_scm is not None:
            gcm_all.append(p_gcm)
            scm_all.append(p_scm)
            y_all.append(y)
            g_all.append(np.full(y.size, i))
    ax_rc.legend(fontsize=6, ncol=2)
    diffs = np.array([m[f"auroc_gcm_{f}"] - m[f"auroc_scm_{f}"] for f in fams])
    m["gcm_minus_scm_min"] = float(np.min(diffs))
    m["gcm_minus_scm_mean"] = float(np.mean(diffs))
    m["gcm_minus_scm_ci_low"], m["gcm_minus_scm_ci_high"] = (
        _bootstrap_diff(np.concatenate(gcm_all), np.concatenate(scm_all), np.concatenate(y_all),
                        np.concatenate(g_all), cfg.n_bootstrap, r_boot)
        if len(gcm_all) == len(fams) else (float("nan"), float("nan")))
    m["loto_min_ratio"] = float(np.min([m[f"loto_over_scm_{f}"] for f in fams]))
    m["loto_targets_passing"] = float(loto_ok)
    m["aurc_gcm_wins"] = float(n_aurc_win)

    # Criterion 5: answerful vs answerless, with phrasing and with bare answers (control).
    gap_inputs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = {}
    for tag, phrasing in (("phrased", True), ("bare", False)):
        trp, evp = hist.part(list(fams), "train", phrasing=phrasing), hist.part(list(fams), "eval", phrasing=phrasing)
        (p_af,) = _fit_predict(emb, "answerful", cfg.cm_c, trp, [evp], fams)
        (p_al,) = _fit_predict(emb, "answerless", cfg.cm_c, trp, [evp], fams)
        m[f"auroc_answerful_{tag}"] = float("nan") if p_af is None else _nan_if_undefined(auroc, p_af, evp[3])
        m[f"auroc_answerless_{tag}"] = float("nan") if p_al is None else _nan_if_undefined(auroc, p_al, evp[3])
        m[f"gap_{tag}"] = m[f"auroc_answerful_{tag}"] - m[f"auroc_answerless_{tag}"]
        gap_inputs[tag] = None if p_af is None or p_al is None else (p_af, p_al, np.asarray(evp[3]))
    m["gap_bare_over_phrased"] = m["gap_bare"] / m["gap_phrased"] if m["gap_phrased"] > 0 else float("nan")
    # The control is a statement with 95% confidence: the upper end of the bootstrap interval of the ratio
    # (eval items resampled within each condition). Its point value sits on the brief's 0.5 at our scale
    # (0.46-0.56 over three seeds), where a point verdict is decided by the seed.
    m["gap_bare_over_phrased_ci_high"] = _ratio_ci_high(gap_inputs, cfg.n_bootstrap, r_boot)

    # Criterion 2: a deliberately over-confident CM (the pooled GCM with its logits scaled), calibrated on
    # the 5% calibration split, evaluated on the eval split.
    figures = {"risk_coverage": fig_rc}
    if gcm_preds[-1] is not None:
        ev_all = hist.part(list(fams), "eval")
        p_eval = _sharpen(np.concatenate(gcm_preds[:-1]), cfg.overconfidence)
        y_eval = ev_all[3]
        p_cal = _sharpen(gcm_preds[-1], cfg.overconfidence)
        m["ece_overconfident"] = expected_calibration_error(p_eval, y_eval)
        m["ece_gcm_raw"] = expected_calibration_error(np.concatenate(gcm_preds[:-1]), y_eval)
        m["brier_overconfident"] = brier_score(p_eval, y_eval)
        fig_rel, ax_rel = new_figure("Reliability of the over-confident CM", "predicted p(yes)", "observed accuracy")
        ax_rel.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
        mp, obs, cnt = reliability_bins(p_eval, y_eval, 10)
        ax_rel.plot(mp[cnt > 0], obs[cnt > 0], marker="o", label="before")
        for kind in CALIBRATORS:
            key = f"ece_{kind}"
            m[key] = float("nan")
            if pooled_cal[3].min() != pooled_cal[3].max():
                cal_p = fit_calibrator(kind, p_cal, pooled_cal[3]).predict(p_eval)
                m[key] = expected_calibration_error(cal_p, y_eval)
                mp, obs, cnt = reliability_bins(cal_p, y_eval, 10)
                ax_rel.plot(mp[cnt > 0], obs[cnt > 0], marker=".", label=f"after {kind}")
            m[f"ece_reduction_{kind}"] = 1.0 - m[key] / m["ece_overconfident"]
        ax_rel.legend(fontsize=7)
        figures["reliability"] = fig_rel
    else:
        for kind in CALIBRATORS:
            m[f"ece_reduction_{kind}"] = float("nan")
    n = len(fams)
    checks = [
        # criterion 3: GCM >= SCM - 0.01 on every target, and >= SCM + 0.01 on average
        Check("gcm_minus_scm_min", m["gcm_minus_scm_min"], ">= -0.01", paper="GCM matches/exceeds SCMs"),
        Check("gcm_minus_scm_mean", m["gcm_minus_scm_mean"], ">= 0.01", paper="GCM matches/exceeds SCMs"),
        # criterion 4, every family held out in turn: AUROC >= 0.9 x SCM and isotonic ECE < max-prob ECE
        Check("loto_targets_passing", m["loto_targets_passing"], f">= {n}", paper="GCM transfers to held-out targets"),
        # criterion 7: lower AURC than the target's own max-prob on >= 4 of 5 targets
        Check("aurc_gcm_wins", m["aurc_gcm_wins"], ">= 4", paper="GCM improves selective prediction"),
        # criterion 5: answerful - answerless >= 0.05, and the bare-answer gap at most half of it
        Check("gap_phrased", m["gap_phrased"], ">= 0.05", paper="answerful >> answerless"),
        Check("gap_bare_over_phrased_ci_high", m["gap_bare_over_phrased_ci_high"], "<= 0.5",
              paper="answer phrasing is a strong predictor"),
    ] + [
        # criterion 2: isotonic, Platt and spline each remove >= 50% of the over-confident CM's ECE
        Check(f"ece_reduction_{kind}", m[f"ece_reduction_{kind}"], ">= 0.5",
              paper="post-hoc calibration gives extremely low ECE")
        for kind in ("isotonic", "platt", "spline")
    ]
    return Outcome(metrics=m, checks=checks, figures=figures)


# ------------------------------------------------------------------------ criterion 6: self vs cross
@config
class SelfCrossConfig:
    n_questions: int = param(2400, 200, 40_000, help="world questions")
    n_entities: int = param(4000, 50, 20_000, help="entities of the fact KB")
    corpus_arith: int = param(3000, 10, 100_000, help="arithmetic problems in each LM's corpus")
    corpus_fact: int = param(6000, 10, 200_000, help="fact statements in each LM's corpus")
    lm_steps: int = param(600, 1, 20_000, help="pre-training steps of the target LM and the unrelated LM")
    cm_steps: int = param(400, 1, 20_000, help="CM fine-tuning steps (loss on the yes/no token)")
    cm_batch: int = param(16, 1, 256, help="CM fine-tuning batch size")
    cm_lr: float = param(1e-3, 1e-6, 1.0, help="CM fine-tuning learning rate (paper: 1e-5 with LoRA)")
    n_bootstrap: int = param(200, 10, 2000, help="bootstrap resamples of the self - cross interval")
    device: str = param("cpu", help="torch device of the LMs and CMs: cpu, cuda, cuda:<n>, mps (icml2026 run --device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_questions > 6 * self.n_entities:
            raise ValueError(f"n_entities = {self.n_entities}: must be >= n_questions / 6 = {self.n_questions / 6:g}")


@experiment(
    "correctness_models.self_vs_cross",
    claim="A CM initialised from the target itself predicts the target's correctness no better than a CM "
    "initialised from an unrelated model trained on the same history.",
    presets={
        "smoke": SelfCrossConfig(n_questions=300, n_entities=100, corpus_arith=200, corpus_fact=300, lm_steps=10,
                                 cm_steps=5, n_bootstrap=10),
        "quick": SelfCrossConfig(n_questions=1600, n_entities=400, corpus_arith=2000, corpus_fact=4000, lm_steps=250,
                                 cm_steps=150, n_bootstrap=100),
        "full": SelfCrossConfig(),
    },
)
def self_vs_cross(cfg: SelfCrossConfig, rng: np.random.Generator) -> Outcome:
    from .cms import TinyLMCM
    from .pipeline import build_histories
    from .targets import TargetScale, train_unrelated_lm

    resolve_device(cfg.device)  # a missing device fails here, before any work (the parts take its name)
    r_hist, r_cross, r_self, r_xcm, r_boot = spawn(rng, 5)
    scale = TargetScale(corpus_arith=cfg.corpus_arith, corpus_fact=cfg.corpus_fact, lm_steps=cfg.lm_steps,
                        device=cfg.device)
    hist = build_histories(cfg.n_questions, scale, r_hist, n_entities=cfg.n_entities, families=("tinylm",))
    target = hist.answers["tinylm"].backend
    unrelated = train_unrelated_lm(hist.world, scale, r_cross)
    qs, rs, _, y, _ = hist.part(["tinylm"], "train")
    eq, er, _, ey, econf = hist.part(["tinylm"], "eval")
    m: dict[str, float] = {"base_rate_train": float(y.mean()), "base_rate_eval": float(ey.mean())}
    preds: dict[str, np.ndarray] = {}
    if y.min() != y.max():
        for name, init, r in (("self", target, r_self), ("cross", unrelated, r_xcm)):
            cm = TinyLMCM(init.model, init.tokenizer, n_steps=cfg.cm_steps, batch_size=cfg.cm_batch, lr=cfg.cm_lr,
                          prompt_format="compact").fit(qs, rs, y, r)
            preds[name] = cm.predict(eq, er)
            m[f"auroc_{name}"] = _nan_if_undefined(auroc, preds[name], ey)
            m[f"ece_{name}"] = expected_calibration_error(preds[name], ey)
            raw = cm.predict(eq, er, renorm=False)
            m[f"auroc_{name}_no_renorm"] = _nan_if_undefined(auroc, raw, ey)
            m[f"ece_{name}_no_renorm"] = expected_calibration_error(raw, ey)
            m[f"final_loss_{name}"] = float(np.mean(cm.losses_[-max(1, cfg.cm_steps // 10):]))
    m["auroc_maxprob"] = _nan_if_undefined(auroc, econf, ey)
    if preds:
        m["self_minus_cross"] = m["auroc_self"] - m["auroc_cross"]
        m["self_minus_cross_ci_low"], m["self_minus_cross_ci_high"] = _bootstrap_diff(
            preds["self"], preds["cross"], ey, np.zeros(ey.size, dtype=np.int64), cfg.n_bootstrap, r_boot)
    else:
        m["self_minus_cross"] = m["self_minus_cross_ci_low"] = m["self_minus_cross_ci_high"] = float("nan")
    m["abs_self_minus_cross"] = abs(m["self_minus_cross"])
    checks = [
        # The paper's RQ1 answer: self-prediction is no better. Stated as: the 95% interval of
        # AUROC(self) - AUROC(cross) reaches down to 0 or below (self not significantly better).
        Check("self_minus_cross_ci_low", m["self_minus_cross_ci_low"], "<= 0",
              paper="self no better than cross (Qwen vs Llama)"),
    ]
    return Outcome(metrics=m, checks=checks)
