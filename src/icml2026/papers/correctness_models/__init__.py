"""Generalized Correctness Models: calibrated, cross-model correctness prediction from historical patterns.

Hanqi Xiao, Vaidehi Patil, Hyunji Lee, Elias Stengel-Eskin, Mohit Bansal, arXiv 2509.24988
(https://arxiv.org/abs/2509.24988); official code: github.com/The-Inscrutable-X/CalibratedModelAgnosticCorrectness.

A correctness model (CM) outputs P(response a of target M to question q is correct). Reduced-scale,
faithful reproduction: the official metrics, post-hoc calibrators, prompt formats and LLM backends in
full; small CMs trained from scratch over the graded histories of five small target families.

=====================  =================================================================
paper                  here
=====================  =================================================================
target model M         ``targets.FAMILIES`` (tinylm, gru, bagmlp, knn, rules)
history (q, a, y)      ``pipeline.Histories.records`` (official jsonl schema)
SCM / GCM              ``FeatureCM`` fitted on one / all targets' train split
p(yes)                 ``FeatureCM.predict``, ``TinyLMCM.predict``, ``prob_yes_local``,
                       ``YesNoHTTPBackend.prob_yes``
ECE, RMSCE, AURC       ``expected_calibration_error``, ``rms_calibration_error``, ``aurc``
=====================  =================================================================
"""

from .backends import YesNoHTTPBackend, next_token_distribution, prob_yes_local, serve_yes_no_model
from .baselines import RetrievalCM, calibrated_self_confidence, self_confidence
from .calibration import CALIBRATORS, Calibrator, fit_calibrator
from .cms import Embedder, FeatureCM, TinyLMCM, yes_no_token_ids
from .data import HISTORY_FIELDS, Split, World, make_world, read_history, split_by_question, write_history
from .metrics import (
    RiskCoverage,
    accuracy_at_coverage,
    aurc,
    auroc,
    brier_score,
    cm_accuracy,
    expected_calibration_error,
    reliability_bins,
    risk_coverage,
    rms_calibration_error,
)
from .pipeline import Histories, build_histories
from .prompts import PROMPT_VARIANTS, HistoryExample, cm_prompt, history_prompt, parse_verbalized, verbalized_prompt
from .targets import FAMILIES, TargetScale, answer_with_target

__all__ = [
    "CALIBRATORS",
    "FAMILIES",
    "HISTORY_FIELDS",
    "PROMPT_VARIANTS",
    "Calibrator",
    "Embedder",
    "FeatureCM",
    "Histories",
    "HistoryExample",
    "RetrievalCM",
    "RiskCoverage",
    "Split",
    "TargetScale",
    "TinyLMCM",
    "World",
    "YesNoHTTPBackend",
    "accuracy_at_coverage",
    "answer_with_target",
    "auroc",
    "aurc",
    "brier_score",
    "build_histories",
    "calibrated_self_confidence",
    "cm_accuracy",
    "cm_prompt",
    "expected_calibration_error",
    "fit_calibrator",
    "history_prompt",
    "make_world",
    "next_token_distribution",
    "parse_verbalized",
    "prob_yes_local",
    "read_history",
    "reliability_bins",
    "risk_coverage",
    "rms_calibration_error",
    "self_confidence",
    "serve_yes_no_model",
    "split_by_question",
    "verbalized_prompt",
    "write_history",
    "yes_no_token_ids",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
