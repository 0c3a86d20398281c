"""Registered experiments of correctness_models (brief Sec. 7, criteria 1-7)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, cast

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

if TYPE_CHECKING:
    from .cms import Embedder
    from .pipeline import Histories

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
    no_preconditions="analytic: each check compares a metric with its closed form or an independent library on "
    "scores built to a known answer, so there is no setup that could fail to express it",
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
#: bars of the preconditions, fixed before the first run of issue 58: a target must answer at least 10% of
#: the evaluation questions (the issue: targets answering 1-2% are no targets) and have >= 50 correct and
#: >= 50 wrong answers there (a per-target AUROC on fewer positives has a bootstrap sd of 0.03-0.05, too
#: wide for the 0.01 margins), and each target's SCM must have learned something (AUROC >= 0.6)
_MIN_ACCURACY, _MIN_CLASS_COUNT, _MIN_SCM_AUROC = 0.10, 50, 0.6
#: effect sizes of the planted controls (the paper gives no recoverable figure; brief Sec. 5): criterion
#: 3's "GCM >= SCM + 0.01 on average", criterion 5's 0.05 bar doubled, and criterion 7 planted as a
#: ranking 0.02 AUROC better than the target's max-prob on every target
_PLANTED_GCM_GAIN, _PLANTED_PHRASING_GAP, _PLANTED_SELECTION_GAIN = 0.01, 0.10, 0.02
#: non-inferiority nulls: an arm worse than the margin by construction (criterion 3: 0.02 AUROC below the
#: SCM, twice the 0.01 margin; criterion 4: 0.85 x SCM AUROC against the 0.9 x SCM bar)
_NULL_GCM_LOSS, _NULL_LOTO_RATIO = 0.02, 0.85


@config
class GCMConfig:
    n_questions: int = param(20_000, 200, 40_000, help="world questions (brief: 20k)")
    n_entities: int = param(4000, 50, 20_000, help="entities of the fact KB")
    regularity: float = param(0.8, 0.0, 1.0, help="share of facts whose value follows a rule of the entity's name "
                              "(0: every fact arbitrary, the world before issue 58)")
    corpus_arith: int = param(3000, 10, 100_000, help="arithmetic problems in a target's corpus")
    corpus_fact: int = param(20_000, 10, 200_000, help="fact statements in a target's corpus (Zipf-weighted)")
    lm_steps: int = param(600, 1, 20_000, help="training steps of the tiny GPT-2 target")
    gru_steps: int = param(600, 1, 20_000, help="training steps of the GRU target")
    mlp_steps: int = param(400, 1, 20_000, help="training steps of the bag-of-characters MLP target")
    cm_c: float = param(1.0, 1e-4, 1e4, help="inverse L2 strength of the feature CMs")
    retrieval_k: int = param(16, 1, 256, help="retrieved past examples per query (paper's main GCM: k = 0)")
    overconfidence: float = param(4.0, 1.5, 20.0, help="logit scale making the over-confident CM (criterion 2)")
    n_bootstrap: int = param(200, 10, 2000, help="bootstrap resamples of the paired intervals")
    encoder: Literal["minilm", "hashed"] = "minilm"  # "hashed": cheap trigram encoder of the smoke preset
    control: str = param("none", choices=("none", "planted", "null"),
                         help="replace the method arms of the comparative checks by a control built from the other "
                         "arm: 'planted' = an effect of the paper's size, 'null' = no effect (or one worse than "
                         "a non-inferiority margin)")
    model: str = param("", help="a causal LM (Hugging Face folder or .gguf file) trained with LoRA as every CM "
                       "(SCM, GCM, LOTO, phrasing CMs); empty: the MiniLM feature CMs")
    lora_r: int = param(32, 1, 1024, help="LoRA rank (paper: 32)")
    lora_alpha: int = param(16, 1, 4096, help="LoRA alpha (paper: 16)")
    lora_lr: float = param(1e-5, 1e-8, 1.0, help="LoRA learning rate (paper: 1e-5)")
    lora_steps: int = param(10_000_000, 1, 10_000_000, help="cap on the optimizer steps of each LoRA CM, which trains "
                            "for one epoch (paper) or this many steps, whichever is fewer")
    lora_batch: int = param(1, 1, 4096, help="per-step micro-batch of the LoRA CMs (paper: 1)")
    grad_accum: int = param(4, 1, 4096, help="gradient accumulation steps of the LoRA CMs (paper: 4)")
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"  # LoRA CM weights (bfloat16 on a GPU)
    device: str = param("cpu", help="torch device of the targets and MiniLM: cpu, cuda, cuda:<n>, mps (--device)")

    def __post_init__(self) -> None:
        check_device_name(self.device)
        if self.n_questions > 6 * self.n_entities:
            raise ValueError(f"n_entities = {self.n_entities}: must be >= n_questions / 6 = "
                             f"{self.n_questions / 6:g} (half the questions are facts, 3 attributes each)")
        if self.model:
            from icml2026.core.errors import BadInput
            from icml2026.core.loaders import check_model_path

            try:
                check_model_path(self.model, kinds=("hf", "gguf"))
            except BadInput as exc:
                raise ValueError(str(exc)) from None


def _target_scale(cfg: GCMConfig):  # type: ignore[no-untyped-def]
    from .targets import TargetScale

    # Deviation (issue 58): the GRU's loss on its answers only, at lr 1e-2 (it answered 2-3% before)
    return TargetScale(corpus_arith=cfg.corpus_arith, corpus_fact=cfg.corpus_fact, lm_steps=cfg.lm_steps,
                       gru_steps=cfg.gru_steps, mlp_steps=cfg.mlp_steps, device=cfg.device,
                       answer_only_loss=True, gru_lr=1e-2)


def _cm_factory(cfg: GCMConfig, emb, names):  # type: ignore[no-untyped-def]
    """A function variant -> unfitted CM with ``fit(q, r, t, y, rng)`` and ``predict(q, r, t)``."""
    from .cms import FeatureCM
    from .lora_cm import LoraLMCM

    if cfg.model:
        return lambda variant: LoraLMCM(cfg.model, variant=variant, r=cfg.lora_r, alpha=cfg.lora_alpha,
                                        lr=cfg.lora_lr, max_steps=cfg.lora_steps, batch_size=cfg.lora_batch,
                                        grad_accum=cfg.grad_accum, dtype=cfg.dtype, device=cfg.device)

    class _Feature(FeatureCM):
        def fit(self, q, r, t, y, rng=None):  # type: ignore[no-untyped-def,override]
            return super().fit(q, r, t, y)

    return lambda variant: _Feature(emb, variant=variant, c=cfg.cm_c, target_names=names)


#: Per-process memo of the parts of a control run that do not depend on the control (issue 58): the planted and
#: null presets of one seed train the same targets, embed the same texts and fit the same feature CMs, and
#: ``icml2026 controls`` runs them in one process (planted seeds, then null seeds), so the null run of a seed
#: reuses what the planted run of that seed computed. Each entry is a pure function of its key (the config
#: fields it reads, the state of the random generator it consumes, the texts and labels it is fitted on), so a
#: reused value is the value a fresh run computes; used only when ``control`` is "planted" or "null" (an ordinary
#: run computes everything) and never for the LoRA CMs (their fits consume the generator).
_CONTROL_MEMO: dict[object, object] = {}
#: Also share with ordinary runs (control "none") of the same seed and sizes: off by default, so that a
#: ``icml2026 run`` computes everything (and the contract's same-seed-twice test compares two computations); a
#: caller running the controls and the quick runs of the same seeds in one process may switch it on.
SHARE_WITH_ORDINARY_RUNS = False


def _memo_key(*parts: object) -> str:
    import hashlib
    import pickle

    return hashlib.sha256(pickle.dumps(parts, protocol=4)).hexdigest()


def _fit_predict(make, variant, train, evals, rng, memo_key=None):  # type: ignore[no-untyped-def]
    """Fit a CM of ``variant`` on ``train`` and predict each of ``evals``; None when training has one class.
    With ``memo_key`` (a control run's feature CMs), the predictions are kept in :data:`_CONTROL_MEMO`."""
    qs, rs, ts, ys, _ = train
    if ys.min() == ys.max():
        return [None for _ in evals]
    if memo_key is not None:
        key = _memo_key("fit", memo_key, variant, train[:4], [e[:3] for e in evals])
        if key not in _CONTROL_MEMO:
            _CONTROL_MEMO[key] = _fit_predict(make, variant, train, evals, rng)
        return list(_CONTROL_MEMO[key])  # type: ignore[call-overload]
    cm = make(variant).fit(qs, rs, ts, ys, rng)
    return [cm.predict(e[0], e[1], e[2]) for e in evals]


def _mean_over_targets(per_target: Callable[[int, np.ndarray], float], strata: list[np.ndarray], n_boot: int,
                       rng: np.random.Generator) -> tuple[float, float, float]:
    """(point, low, high): the mean over targets of ``per_target(i, items)``, and its paired 95% percentile
    bootstrap interval (each target's eval items resampled on their own; both arms of a comparison read the
    same resampled items)."""
    point = float(np.mean([per_target(i, s) for i, s in enumerate(strata)]))

    def stat(*idx: np.ndarray) -> float:
        vals = [per_target(i, s[j]) for i, (s, j) in enumerate(zip(strata, idx, strict=True))]
        return float(np.mean(vals)) if np.all(np.isfinite(vals)) else float("nan")

    lo, hi = _percentile_interval([np.arange(s.size) for s in strata], stat, n_boot, rng)
    return point, lo, hi


@experiment(
    "correctness_models.gcm",
    claim="A generalized CM trained on the pooled histories of five target families matches or beats each "
    "target's specific CM, transfers to a held-out family, ranks answers for abstention better than the "
    "targets' own confidence, reads answer phrasing, and post-hoc calibration removes most of its ECE.",
    presets={
        "smoke": GCMConfig(n_questions=300, n_entities=100, corpus_arith=200, corpus_fact=300, lm_steps=10,
                           gru_steps=10, mlp_steps=10, n_bootstrap=10, encoder="hashed"),
        "quick": GCMConfig(n_questions=2000, n_entities=500, corpus_arith=2000, corpus_fact=4000, lm_steps=250,
                           gru_steps=250, mlp_steps=300, n_bootstrap=100),
        "full": GCMConfig(),
        # controls of the comparative checks at the quick size (the verdict the card reports). Deviation (issue
        # 58): 100 bootstrap resamples at this size (200 before): the resampled AUROCs were ~40% of a run's CPU
        "planted": GCMConfig(n_questions=2000, n_entities=500, corpus_arith=2000, corpus_fact=4000, lm_steps=250,
                             gru_steps=250, mlp_steps=300, n_bootstrap=100, control="planted"),
        "null": GCMConfig(n_questions=2000, n_entities=500, corpus_arith=2000, corpus_fact=4000, lm_steps=250,
                          gru_steps=250, mlp_steps=300, n_bootstrap=100, control="null"),
    },
)
def gcm(cfg: GCMConfig, rng: np.random.Generator) -> Outcome:
    from .arms import with_auroc_gain, with_auroc_loss
    from .baselines import RetrievalCM
    from .cms import Embedder, HashedEncoder
    from .pipeline import build_histories

    resolve_device(cfg.device)  # a missing device fails here, before any work (the parts take its name)
    r_hist, r_boot, r_cm, r_ctl = spawn(rng, 4)
    control = cfg.control
    # a control run shares its targets, embeddings and feature-CM fits with the other control of its seed
    memo = None
    if control != "none" or SHARE_WITH_ORDINARY_RUNS:
        memo = _memo_key(cfg.n_questions, cfg.n_entities, cfg.regularity, cfg.corpus_arith, cfg.corpus_fact,
                         cfg.lm_steps, cfg.gru_steps, cfg.mlp_steps, cfg.device, cfg.encoder, cfg.cm_c,
                         r_hist.bit_generator.state)
    if memo is not None and ("hist", memo) in _CONTROL_MEMO:
        hist = cast("Histories", _CONTROL_MEMO[("hist", memo)])
        emb = cast("Embedder", _CONTROL_MEMO[("emb", memo)])
    else:
        hist = build_histories(cfg.n_questions, _target_scale(cfg), r_hist, n_entities=cfg.n_entities,
                               popularity=0.0, regularity=cfg.regularity)
        emb = Embedder(HashedEncoder() if cfg.encoder == "hashed" else None, device=cfg.device)
        if memo is not None:
            _CONTROL_MEMO[("hist", memo)], _CONTROL_MEMO[("emb", memo)] = hist, emb
    fit_memo = memo if not cfg.model else None
    fams = hist.families
    make = _cm_factory(cfg, emb, fams)
    m: dict[str, float] = {}
    ev = {f: hist.part([f], "eval") for f in fams}
    cal = {f: hist.part([f], "cal") for f in fams}
    tr = {f: hist.part([f], "train") for f in fams}
    pooled_train = hist.part(list(fams), "train")
    pooled_cal = hist.part(list(fams), "cal")

    # SCM per target; GCM pooled (Model Alpha, no name); GCM with the model name; leave-one-target-out.
    gcm_preds = _fit_predict(make, "answerful", pooled_train, [ev[f] for f in fams] + [pooled_cal], r_cm,
                             fit_memo)
    named_preds = (_fit_predict(make, "with_model_name", pooled_train, [ev[f] for f in fams], r_cm)
                   if control == "none" else [None] * len(fams))
    retr = RetrievalCM(emb, k=cfg.retrieval_k).fit(*pooled_train[:4]) if control == "none" and not cfg.model else None
    fig_rc, ax_rc = new_figure("Risk-coverage per target (eval split)", "coverage", "risk (target error rate)")
    arms: dict[str, dict[str, np.ndarray]] = {k: {} for k in ("scm", "gcm", "loto", "loto_iso", "maxprob",
                                                               "maxprob_iso", "select")}
    labels: dict[str, np.ndarray] = {}
    usable = True
    for i, f in enumerate(fams):
        qs, rs, ts, y, conf = ev[f]
        labels[f] = y
        m[f"base_rate_{f}"] = float(y.mean())
        m[f"eval_positives_{f}"] = float(y.sum())
        m[f"eval_negatives_{f}"] = float(y.size - y.sum())
        (p_scm,) = _fit_predict(make, "answerful", tr[f], [ev[f]], r_cm, fit_memo)
        others = [g for g in fams if g != f]
        # the controls replace the LOTO arm (and its calibrated ECE arm) by construction: not fitted there
        p_loto, p_loto_cal = (_fit_predict(make, "answerful", hist.part(others, "train"), [ev[f], cal[f]], r_cm)
                              if control == "none" else (p_scm, p_scm))
        p_gcm, p_named = gcm_preds[i], named_preds[i]
        cq, cr, ct, cy, cconf = cal[f]
        if p_scm is None or p_gcm is None or p_loto is None or y.min() == y.max() or cy.min() == cy.max():
            usable = False
            continue
        iso_self = fit_calibrator("isotonic", cconf, cy)
        p_maxprob_iso = iso_self.predict(conf)
        p_loto_iso = (fit_calibrator("isotonic", p_loto_cal, cy).predict(p_loto) if control == "none"
                      else p_maxprob_iso)
        m[f"auroc_gcm_measured_{f}"] = auroc(p_gcm, y)
        p_select = p_gcm
        if control == "planted":
            # the GCM: the SCM with the brief's +0.01 AUROC; LOTO: as good as the SCM (ratio 1); the ECE arm:
            # the target's max-prob made calibrated (isotonic on the 5% split); the selection ranking: the
            # max-prob with +0.02 AUROC
            p_gcm = with_auroc_gain(p_scm, y, _PLANTED_GCM_GAIN, r_ctl)
            p_loto = p_scm
            p_loto_iso = p_maxprob_iso
            p_select = with_auroc_gain(conf, y, _PLANTED_SELECTION_GAIN, r_ctl)
        elif control == "null":
            # worse than criterion 3's margin, below criterion 4's 0.9 x SCM bar, and the target's own
            # max-prob as both arms of the ECE and the selection comparisons
            p_gcm = with_auroc_loss(p_scm, y, _NULL_GCM_LOSS, r_ctl)
            p_loto = with_auroc_loss(p_scm, y, (1 - _NULL_LOTO_RATIO) * auroc(p_scm, y), r_ctl)
            p_loto_iso = conf
            p_select = conf
        arms["scm"][f], arms["gcm"][f], arms["loto"][f], arms["loto_iso"][f] = p_scm, p_gcm, p_loto, p_loto_iso
        arms["maxprob"][f], arms["maxprob_iso"][f], arms["select"][f] = conf, p_maxprob_iso, p_select
        for name, p in (("scm", p_scm), ("gcm", p_gcm), ("gcm_named", p_named), ("loto", p_loto),
                        ("maxprob", conf), ("select", p_select)):
            m[f"auroc_{name}_{f}"] = float("nan") if p is None else _nan_if_undefined(auroc, p, y)
        if retr is not None:
            m[f"auroc_retrieval_{f}"] = _nan_if_undefined(auroc, retr.predict(qs, rs, ts), y)
        m[f"ece_maxprob_{f}"] = expected_calibration_error(conf, y)
        m[f"ece_maxprob_iso_{f}"] = expected_calibration_error(p_maxprob_iso, y)
        m[f"ece_loto_iso_{f}"] = expected_calibration_error(p_loto_iso, y)
        m[f"loto_over_scm_{f}"] = m[f"auroc_loto_{f}"] / m[f"auroc_scm_{f}"]
        m[f"aurc_select_{f}"] = aurc(p_select, y)
        m[f"aurc_maxprob_{f}"] = aurc(conf, y)
        m[f"acc_at_50_select_{f}"] = accuracy_at_coverage(p_select, y, 0.5)
        m[f"acc_at_50_maxprob_{f}"] = accuracy_at_coverage(conf, y, 0.5)
        m[f"acc_at_80_select_{f}"] = accuracy_at_coverage(p_select, y, 0.8)
        m[f"acc_at_80_maxprob_{f}"] = accuracy_at_coverage(conf, y, 0.8)
        rc = risk_coverage(p_select, y)
        line = ax_rc.plot(rc.coverage, rc.risk, label=f"{f} GCM")[0]
        rc0 = risk_coverage(conf, y)
        ax_rc.plot(rc0.coverage, rc0.risk, linestyle="--", color=line.get_color(), label=f"{f} max-prob")
    ax_rc.legend(fontsize=6, ncol=2)

    # Preconditions: every target answers often enough, with enough of both classes, and its SCM learned.
    m["min_eval_accuracy"] = float(min(m[f"base_rate_{f}"] for f in fams))
    m["min_eval_class_count"] = float(min(min(m[f"eval_positives_{f}"], m[f"eval_negatives_{f}"]) for f in fams))
    m["min_auroc_scm"] = float(min(m.get(f"auroc_scm_{f}", float("nan")) for f in fams)) if usable else float("nan")

    # The comparative statistics: means over targets, with paired bootstrap intervals.
    nan3 = (float("nan"),) * 3
    if usable:
        strata = [np.arange(labels[f].size) for f in fams]

        def diff(a: str, b: str, fn: Callable[[np.ndarray, np.ndarray], float] = auroc, scale_b: float = 1.0
                 ) -> Callable[[int, np.ndarray], float]:
            def per(i: int, s: np.ndarray) -> float:
                f = fams[i]
                y = labels[f][s]
                if y.min() == y.max():
                    return float("nan")
                return fn(arms[a][f][s], y) - scale_b * fn(arms[b][f][s], y)
            return per

        def ece(p: np.ndarray, y: np.ndarray) -> float:
            return expected_calibration_error(p, y)

        def neg_aurc(p: np.ndarray, y: np.ndarray) -> float:
            return -aurc(p, y)

        r3, r4, r4e, r7 = spawn(r_boot, 4)
        gs = _mean_over_targets(diff("gcm", "scm"), strata, cfg.n_bootstrap, r3)
        lt = _mean_over_targets(diff("loto", "scm", scale_b=0.9), strata, cfg.n_bootstrap, r4)
        le = _mean_over_targets(diff("maxprob", "loto_iso", fn=ece), strata, cfg.n_bootstrap, r4e)
        sp = _mean_over_targets(diff("select", "maxprob", fn=neg_aurc), strata, cfg.n_bootstrap, r7)
    else:
        gs = lt = le = sp = nan3
    m["gcm_minus_scm_mean"], m["gcm_minus_scm_ci_low"], m["gcm_minus_scm_ci_high"] = gs
    m["gcm_minus_scm_min"] = (float(min(m[f"auroc_gcm_{f}"] - m[f"auroc_scm_{f}"] for f in fams)) if usable
                              else float("nan"))
    m["loto_minus_09scm_mean"], m["loto_minus_09scm_ci_low"], m["loto_minus_09scm_ci_high"] = lt
    m["loto_min_ratio"] = float(min(m[f"loto_over_scm_{f}"] for f in fams)) if usable else float("nan")
    m["ece_maxprob_minus_loto_iso_mean"], m["ece_maxprob_minus_loto_iso_ci_low"], _ = le
    m["aurc_gain_mean"], m["aurc_gain_ci_low"], m["aurc_gain_ci_high"] = sp
    m["aurc_gcm_wins"] = (float(sum(m[f"aurc_select_{f}"] < m[f"aurc_maxprob_{f}"] for f in fams)) if usable
                          else float("nan"))

    # Criterion 5: answerful vs answerless, with phrasing and with bare answers (control of the brief).
    gap_inputs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = {}
    for tag, phrasing in (("phrased", True), ("bare", False)):
        trp, evp = hist.part(list(fams), "train", phrasing=phrasing), hist.part(list(fams), "eval", phrasing=phrasing)
        (p_al,) = _fit_predict(make, "answerless", trp, [evp], r_cm, fit_memo)
        # the controls replace the answerful arm by construction: not fitted there
        (p_af,) = _fit_predict(make, "answerful", trp, [evp], r_cm) if control == "none" else (p_al,)
        gap_inputs[tag] = None if p_af is None or p_al is None else (p_af, p_al, np.asarray(evp[3]))
    if gap_inputs["phrased"] is not None and gap_inputs["bare"] is not None:
        p_af, p_al, yp = gap_inputs["phrased"]
        b_af, b_al, yb = gap_inputs["bare"]
        if control == "planted":
            # answerful = answerless + 0.10 AUROC; with bare answers the gap shrinks to a quarter of it
            p_af = with_auroc_gain(p_al, yp, _PLANTED_PHRASING_GAP, r_ctl)
            b_af = with_auroc_gain(b_al, yb, 0.25 * _PLANTED_PHRASING_GAP, r_ctl)
        elif control == "null":
            # the answer carries nothing (answerful = answerless), and removing phrasing changes nothing
            p_af = p_al
            b_af, b_al = p_af, p_al
        gap_inputs = {"phrased": (p_af, p_al, yp), "bare": (b_af, b_al, yb)}
    for tag, inp in gap_inputs.items():
        m[f"auroc_answerful_{tag}"] = float("nan") if inp is None else _nan_if_undefined(auroc, inp[0], inp[2])
        m[f"auroc_answerless_{tag}"] = float("nan") if inp is None else _nan_if_undefined(auroc, inp[1], inp[2])
        m[f"gap_{tag}"] = m[f"auroc_answerful_{tag}"] - m[f"auroc_answerless_{tag}"]
    m["gap_bare_over_phrased"] = m["gap_bare"] / m["gap_phrased"] if m["gap_phrased"] > 0 else float("nan")
    r5a, r5b = spawn(r_boot, 2)
    if gap_inputs.get("phrased") is not None:
        p_af, p_al, yp = gap_inputs["phrased"]  # type: ignore[misc]

        def gap(s: np.ndarray) -> float:
            return float("nan") if yp[s].min() == yp[s].max() else auroc(p_af[s], yp[s]) - auroc(p_al[s], yp[s])

        m["gap_phrased_ci_low"] = _percentile_interval([np.arange(yp.size)], gap, cfg.n_bootstrap, r5a)[0]
    else:
        m["gap_phrased_ci_low"] = float("nan")
    m["gap_bare_over_phrased_ci_high"] = _ratio_ci_high(gap_inputs, cfg.n_bootstrap, r5b)

    # Criterion 2: a deliberately over-confident CM (the pooled GCM with its logits scaled), calibrated on
    # the 5% calibration split, evaluated on the eval split. Controls: the labels redrawn as Bernoulli(p) of
    # the GCM's own scores p, so that p is calibrated by construction. Planted: the over-confident CM is p
    # with the same logit scale, and the calibrated arm is p itself (the paper's "extremely low ECE": a
    # calibration that recovers the true probabilities), as every other planted arm replaces the method's
    # arm by a construction. Null: the CM is left calibrated and the calibrators are fitted (nothing to remove).
    # Deviation (issue 58, after the planted runs of seeds 0-2): the planted arm used to be each calibrator
    # fitted to the over-confident p; the official raw-p Platt removed 54%, 53% and 18% of the ECE there (and
    # 57% on average in a simulation), so the control measured the calibrator's capacity, which is the claim,
    # instead of the check's power; the claim run still fits every calibrator to the real over-confident GCM.
    figures = {"risk_coverage": fig_rc}
    for kind in CALIBRATORS:
        m[f"ece_reduction_{kind}"] = float("nan")
    if gcm_preds[-1] is not None and all(p is not None for p in gcm_preds[:-1]):
        p_raw = np.concatenate(gcm_preds[:-1])  # type: ignore[arg-type]
        y_eval = hist.part(list(fams), "eval")[3]
        p_cal_raw, y_cal = gcm_preds[-1], pooled_cal[3]
        scale = cfg.overconfidence
        if control != "none":
            y_eval = (r_ctl.random(p_raw.size) < p_raw).astype(np.int64)
            y_cal = (r_ctl.random(p_cal_raw.size) < p_cal_raw).astype(np.int64)
            scale = cfg.overconfidence if control == "planted" else 1.0
        p_eval, p_cal = _sharpen(p_raw, scale), _sharpen(p_cal_raw, scale)
        m["ece_overconfident"] = expected_calibration_error(p_eval, y_eval)
        m["ece_gcm_raw"] = expected_calibration_error(p_raw, y_eval)
        m["brier_overconfident"] = brier_score(p_eval, y_eval)
        fig_rel, ax_rel = new_figure("Reliability of the over-confident CM", "predicted p(yes)", "observed accuracy")
        ax_rel.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
        mp, obs, cnt = reliability_bins(p_eval, y_eval, 10)
        ax_rel.plot(mp[cnt > 0], obs[cnt > 0], marker="o", label="before")
        for kind in CALIBRATORS:
            key = f"ece_{kind}"
            m[key] = float("nan")
            if control == "planted":
                cal_p = p_raw  # the planted calibration: the true probabilities of the redrawn labels
                m[key] = expected_calibration_error(cal_p, y_eval)
            elif y_cal.min() != y_cal.max():
                cal_p = fit_calibrator(kind, p_cal, y_cal).predict(p_eval)
                m[key] = expected_calibration_error(cal_p, y_eval)
                mp, obs, cnt = reliability_bins(cal_p, y_eval, 10)
                ax_rel.plot(mp[cnt > 0], obs[cnt > 0], marker=".", label=f"after {kind}")
            m[f"ece_reduction_{kind}"] = 1.0 - m[key] / m["ece_overconfident"]
        ax_rel.legend(fontsize=7)
        figures["reliability"] = fig_rel
    checks = [
        # Preconditions (issue 58; bars fixed before the first run): the targets answer often enough for the
        # labels to carry information, and every SCM learned to predict its target's correctness.
        Check("min_eval_accuracy", m["min_eval_accuracy"], f">= {_MIN_ACCURACY}", role="precondition"),
        Check("min_eval_class_count", m["min_eval_class_count"], f">= {_MIN_CLASS_COUNT}", role="precondition"),
        Check("min_auroc_scm", m["min_auroc_scm"], f">= {_MIN_SCM_AUROC}", role="precondition"),
        # criterion 3, "GCM matches/exceeds SCMs", as a non-inferiority test: the paired 95% interval of the
        # mean over targets of AUROC(GCM) - AUROC(SCM) lies above -0.01. Deviation (issue 58): the brief's
        # per-target minimum >= -0.01 and mean >= +0.01 are point values (reported), which two equal CMs pass
        # ~14% of the time and a GCM of the brief's effect size passes half the time.
        Check("gcm_minus_scm_ci_low", m["gcm_minus_scm_ci_low"], ">= -0.01", paper="GCM matches/exceeds SCMs",
              comparative=True),
        # criterion 4: the held-out family's LOTO GCM reaches 0.9 x its SCM's AUROC (mean over families held
        # out in turn, paired 95% interval above 0) ...
        Check("loto_minus_09scm_ci_low", m["loto_minus_09scm_ci_low"], ">= 0",
              paper="GCM transfers to held-out targets", comparative=True),
        # ... and, isotonic-calibrated on the held-out target's 5% split, beats the target's raw max-prob ECE
        Check("ece_maxprob_minus_loto_iso_ci_low", m["ece_maxprob_minus_loto_iso_ci_low"], "> 0",
              paper="GCM transfers to held-out targets", comparative=True),
        # criterion 7: GCM-ranked abstention has a lower AURC than the target's max-prob (mean over targets,
        # paired 95% interval of AURC(max-prob) - AURC(GCM) above 0); the brief's ">= 4/5 wins" is reported
        Check("aurc_gain_ci_low", m["aurc_gain_ci_low"], "> 0", paper="GCM improves selective prediction",
              comparative=True),
        # criterion 5: answerful - answerless >= 0.05 (95% lower bound), and with bare answers the gap at most
        # half of it (95% upper bound of the ratio)
        Check("gap_phrased_ci_low", m["gap_phrased_ci_low"], ">= 0.05", paper="answerful >> answerless",
              comparative=True),
        Check("gap_bare_over_phrased_ci_high", m["gap_bare_over_phrased_ci_high"], "<= 0.5",
              paper="answer phrasing is a strong predictor", comparative=True),
    ] + [
        # criterion 2: isotonic, Platt (the official form, on raw p) and spline each remove >= 50% of the
        # over-confident CM's ECE
        Check(f"ece_reduction_{kind}", m[f"ece_reduction_{kind}"], ">= 0.5",
              paper="post-hoc calibration gives extremely low ECE", comparative=True)
        for kind in ("isotonic", "platt", "spline")
    ]
    return Outcome(metrics=m, checks=checks, figures=figures)


# ------------------------------------------------------------------------ criterion 6: self vs cross
@config
class SelfCrossConfig:
    n_questions: int = param(2400, 200, 40_000, help="world questions")
    n_entities: int = param(4000, 50, 20_000, help="entities of the fact KB")
    regularity: float = param(0.8, 0.0, 1.0, help="share of facts whose value follows a rule of the entity's name "
                              "(0: every fact arbitrary, the world before issue 58)")
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
    hist = build_histories(cfg.n_questions, scale, r_hist, n_entities=cfg.n_entities, families=("tinylm",),
                           regularity=cfg.regularity)
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
    m["eval_positives"] = float(ey.sum())
    m["eval_negatives"] = float(ey.size - ey.sum())
    m["min_auroc_cm"] = min(m.get("auroc_self", float("nan")), m.get("auroc_cross", float("nan")))
    checks = [
        # Preconditions (issue 58; bars fixed before the run, as in gcm): the target answers >= 10% of the
        # eval questions with >= 50 of each class, and both CMs learned (AUROC >= 0.6), so that "no better"
        # is not the statement that two CMs which learned nothing tie
        Check("eval_accuracy", m["base_rate_eval"], f">= {_MIN_ACCURACY}", role="precondition"),
        Check("eval_class_count", min(m["eval_positives"], m["eval_negatives"]), f">= {_MIN_CLASS_COUNT}",
              role="precondition"),
        Check("min_auroc_cm", m["min_auroc_cm"], f">= {_MIN_SCM_AUROC}", role="precondition"),
        # The paper's RQ1 answer: self-prediction is no better. Stated as: the 95% interval of
        # AUROC(self) - AUROC(cross) reaches down to 0 or below (self not significantly better). Not a
        # comparative check in the sense of the controls: it states the absence of an effect, which a null
        # (two equal CMs) passes by design; its counterpart is the interval's width, reported.
        Check("self_minus_cross_ci_low", m["self_minus_cross_ci_low"], "<= 0",
              paper="self no better than cross (Qwen vs Llama)"),
    ]
    return Outcome(metrics=m, checks=checks)
