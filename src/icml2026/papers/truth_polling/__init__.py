"""Consensus is not verification: polling-style inference scaling fails for truthfulness.

"Consensus is Not Verification: Why Crowd Wisdom Strategies Fail for LLM Truthfulness", arXiv:2603.06612
(2026). No official code is known; the simulator, corpora and small model families are our reconstruction
from the brief (see README.md).

Symbols (paper / brief -> code)
-------------------------------
answers[m, s, q]        ``answers`` of :func:`aggregate` (models x samples x questions)
k, cost                 ``Rule.k`` (samples per model), ``Aggregation.cost`` (answers + meta-predictions)
c (confidence)          ``confidences[m, s, q]`` in [0, 1]; log-odds weight log(c / (1 - c))
meta-prediction         ``meta_predictions[m, (s,) q, V]`` over ``options`` (surprisingly popular)
a_m, theta_q, eps_mq    ``SimulatorParams.a``, ``sigma_theta``, ``tau`` (logit P(correct) = a + theta + eps)
rho, A                  ``SimulatorParams.rho`` (shared attractor), ``n_options``
p_q                     ``probs[q, A]`` of :func:`plurality_accuracy_exact` / :func:`plurality_accuracy_limit`
P(a = a' | both wrong)  :func:`agreement_when_both_wrong` (``rate``, independence ``baseline``)
"""

from .aggregate import RULES, Aggregation, Rule, aggregate, encode_answers, normalize_answer, vote_counts
from .baselines import dawid_skene
from .correlation import (
    BothWrong,
    SocialVsTruth,
    agreement_when_both_wrong,
    auroc,
    bootstrap_ci,
    cohen_kappa,
    error_overlap,
    expected_calibration_error,
    mutual_information,
    permutation_pvalue_mi,
    phi_matrix,
    social_vs_truth,
)
from .data import (
    ArithmeticTask,
    FactCorpus,
    RandomDigitTask,
    make_arithmetic,
    make_fact_corpus,
    make_random_digit_task,
    subsample_lines,
)
from .models import FAMILIES, AnswerModel, FamilyConfig, make_family, sample_answers
from .pipeline import (
    Poll,
    format_meta_prompt,
    format_prompt,
    parse_answer,
    parse_confidence,
    parse_meta_prediction,
    poll_models,
)
from .simulator import (
    SimulatedPoll,
    SimulatorParams,
    answer_distributions,
    plurality_accuracy_exact,
    plurality_accuracy_limit,
    simulate_polling,
)

__all__ = [
    "FAMILIES",
    "RULES",
    "Aggregation",
    "AnswerModel",
    "ArithmeticTask",
    "BothWrong",
    "FactCorpus",
    "FamilyConfig",
    "Poll",
    "RandomDigitTask",
    "Rule",
    "SimulatedPoll",
    "SimulatorParams",
    "SocialVsTruth",
    "aggregate",
    "agreement_when_both_wrong",
    "answer_distributions",
    "auroc",
    "bootstrap_ci",
    "cohen_kappa",
    "dawid_skene",
    "encode_answers",
    "error_overlap",
    "expected_calibration_error",
    "format_meta_prompt",
    "format_prompt",
    "make_arithmetic",
    "make_fact_corpus",
    "make_family",
    "make_random_digit_task",
    "mutual_information",
    "normalize_answer",
    "parse_answer",
    "parse_confidence",
    "parse_meta_prediction",
    "permutation_pvalue_mi",
    "phi_matrix",
    "plurality_accuracy_exact",
    "plurality_accuracy_limit",
    "poll_models",
    "sample_answers",
    "simulate_polling",
    "social_vs_truth",
    "subsample_lines",
    "vote_counts",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
