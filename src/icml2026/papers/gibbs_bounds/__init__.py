"""P19 — Generalization of Gibbs and Langevin Monte Carlo algorithms in the interpolation regime.

A. Maurer, E. Mirzaei, M. Pontil, ICML 2026, arXiv:2510.06028 (https://arxiv.org/abs/2510.06028).
Official code: https://github.com/erfunmirzaei/Gibbs-Generalization.

Symbols (paper -> code)
-----------------------
==========================  ==========================================================================
pi = N(0, s^2 I)            prior; ``SGLDConfig.prior_std`` = s (paper: 5)
L_S(theta)                  training loss; bounded BCE ``bounded_bce`` / ``l_max`` in [0, 1]
Q_beta ∝ exp(-beta L_S) pi  Gibbs posterior; ``run_sgld_chain`` (SGLD), ``gibbs_posterior`` (finite class)
beta_0 = 0 < ... < beta_K   ``betas`` (must start at 0, strictly increasing)
Lbar_k = E_{Q_beta_k} L_S   ``mean_train_losses`` / ``GridRow.train_loss``
Gamma_k (KL estimate)       ``gibbs_kl(betas, mean_train_losses, lam=...)`` (left-Riemann rule)
lam                         calibration factor; ``calibrate_lambda``
kl(p || q)                  ``kl_bernoulli``; its upper inverse ``kl_inverse_upper(q, bound)``
B = (KL + ln(2 sqrt n/delta))/n   ``pac_bayes_complexity``; bound ``pac_bayes_kl_bound``
psi(p), l_max               ``bounded_bce(logits, labels, l_max)`` (paper: l_max = 4)
lr, h = lr / (2 beta)       ``SGLDConfig.lr``; ``sgld_update``
==========================  ==========================================================================
"""

from .bounds import (
    KL_INVERSE_CAP,
    BoundCurve,
    bound_curve,
    calibrate_lambda,
    gibbs_kl,
    kl_bernoulli,
    kl_inverse_upper,
    pac_bayes_complexity,
    pac_bayes_kl_bound,
    relaxed_kl_bound,
)
from .data import (
    BinaryTask,
    digits_binary_task,
    make_mnist1d,
    mnist1d_binary_task,
    randomize_labels,
)
from .finite import (
    FiniteClassProblem,
    exact_gibbs_kl,
    gibbs_expected,
    gibbs_expected_curve,
    gibbs_posterior,
    log_partition,
    make_finite_linear_problem,
    sample_empirical_risks,
)
from .folder import load_folder_task, model_factory
from .langevin import (
    GridRow,
    bounded_bce,
    make_mlp,
    rows_from_csv,
    rows_to_csv,
    run_beta_grid,
    sample_prior_weights,
)
from .sampler import ChainDivergedError, ChainResult, SGLDConfig, run_sgld_chain, sgld_step, sgld_update

__all__ = [
    "load_folder_task",
    "model_factory",
    "KL_INVERSE_CAP",
    "BinaryTask",
    "BoundCurve",
    "ChainResult",
    "FiniteClassProblem",
    "GridRow",
    "SGLDConfig",
    "ChainDivergedError",
    "bound_curve",
    "bounded_bce",
    "calibrate_lambda",
    "digits_binary_task",
    "exact_gibbs_kl",
    "gibbs_expected",
    "gibbs_expected_curve",
    "gibbs_kl",
    "gibbs_posterior",
    "kl_bernoulli",
    "kl_inverse_upper",
    "log_partition",
    "make_finite_linear_problem",
    "make_mlp",
    "make_mnist1d",
    "mnist1d_binary_task",
    "pac_bayes_complexity",
    "pac_bayes_kl_bound",
    "randomize_labels",
    "relaxed_kl_bound",
    "rows_from_csv",
    "rows_to_csv",
    "run_beta_grid",
    "run_sgld_chain",
    "sample_empirical_risks",
    "sample_prior_weights",
    "sgld_step",
    "sgld_update",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
