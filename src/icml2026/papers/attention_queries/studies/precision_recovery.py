"""Float32 and float16 oracles: the precision inferred from the answers, recovery to it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml2026.core import Check, Outcome, spawn
from icml2026.core.config import config, param

from .._threads import single_blas_thread
from ..data import random_sequences, random_single_head, relative_error
from ..exact import NotIdentifiableError, recover_exact
from ..low_rank import recover_low_rank
from ..model import SingleHeadAttention
from ..oracle import CountingOracle
from ..precision import LowPrecisionHead
from ..queries import NoisyConditionError, SaturationError
from ._grid import nanmax
from ._preconditions import rank_gap_check, rounding_check, rounding_over_eps, value_norm_check

#: Random single tokens on which each oracle's rounding is compared with the float64 head (single tokens: the
#: answer v^T x carries no softmax, so its rounding does not grow with the entries of A).
_N_PROBES = 64


@config
class PrecisionConfig:
    d: int = param(16, 2, 48, help="dimension of the exact-recovery instances")
    scale_big: float = param(20.0, 1.0, 100.0, help="entry scale of A of the saturating instances (issue 28: 20)")
    lr_d: int = param(32, 8, 64, help="dimension of the low-rank instance (issue 28: 32)")
    lr_rank: int = param(3, 1, 8, help="rank of the low-rank instance (issue 28: 3)")
    n_seeds: int = param(3, 1, 20, help="random heads per case")

    def __post_init__(self) -> None:
        if (2 * self.lr_rank + 2) * self.lr_d >= self.lr_d**2 + self.lr_d:
            raise ValueError(f"lr_rank = {self.lr_rank}: must be < (lr_d - 1) / 2 (else the exact method is used)")


def precision_recovery(cfg: PrecisionConfig, rng: np.random.Generator) -> Outcome:
    with single_blas_thread():
        return _precision_recovery(cfg, rng)


def _precision_recovery(cfg: PrecisionConfig, rng: np.random.Generator) -> Outcome:
    rows: list[dict[str, Any]] = []
    n_refused = 0
    rng_e, rng_l = spawn(rng, 2)
    # A third stream, spawned after the two above, draws the precondition's probes: the runs' other numbers
    # are those of the experiment without the preconditions.
    probe_e, probe_l = spawn(spawn(rng, 1)[0], 2)
    probes = random_sequences(cfg.d, _N_PROBES, 1, probe_e)
    lr_probes = random_sequences(cfg.lr_d, _N_PROBES, 1, probe_l)
    heads: list[SingleHeadAttention] = []
    rounding: dict[str, list[float]] = {"float32": [], "float16": []}
    for child in spawn(rng_e, cfg.n_seeds):
        for dtype, scale, hrng in zip(
            ("float32", "float32", "float16", "float16"),
            (1.0, cfg.scale_big, 1.0, cfg.scale_big),
            spawn(child, 4),
            strict=True,
        ):
            head = random_single_head(cfg.d, cfg.d, hrng, scale=scale)
            oracle = LowPrecisionHead(head.A, head.v, dtype)
            heads.append(head)
            rounding[dtype].append(rounding_over_eps(oracle, head, probes))
            row: dict[str, Any] = {"dtype": dtype, "scale": scale}
            for prec in ("float64", "auto"):
                try:
                    est = recover_exact(CountingOracle(oracle), cfg.d, precision=prec)
                except (NoisyConditionError, NotIdentifiableError, SaturationError):
                    n_refused += 1  # counted by a check, never dropped
                    for key in ("rel_err", "queries", "error_over_bar"):
                        row[f"{key}_{prec}"] = math.nan
                    row[f"source_{prec}"] = "refused"
                    continue
                assert est.error_bound_A is not None
                # the float32 cast of A itself is part of the error: the bar is widened by it (2 eps ||A||)
                cast = float(np.linalg.norm(oracle.A.astype(oracle.dtype).astype(np.float64) - head.A))
                row[f"rel_err_{prec}"] = relative_error(est.A, head.A)
                row[f"queries_{prec}"] = est.n_queries
                row[f"error_over_bar_{prec}"] = float(np.linalg.norm(est.A - head.A)) / (est.error_bound_A + cast)
                row[f"source_{prec}"] = est.precision_source
            rows.append(row)
    lr_rows: list[dict[str, Any]] = []
    lr_heads: list[SingleHeadAttention] = []
    for child in spawn(rng_l, cfg.n_seeds):
        h_rng, r_rng = spawn(child, 2)
        head = random_single_head(cfg.lr_d, cfg.lr_rank, h_rng)
        oracle = LowPrecisionHead(head.A, head.v, "float32")
        heads.append(head)
        lr_heads.append(head)
        rounding["float32"].append(rounding_over_eps(oracle, head, lr_probes))
        for prec in ("float64", "auto"):
            try:
                est = recover_low_rank(CountingOracle(oracle), cfg.lr_d, rng=r_rng, precision=prec)
            except (NoisyConditionError, NotIdentifiableError, SaturationError):
                n_refused += prec == "auto"
                nan = math.nan
                lr_rows.append(
                    {"precision": prec, "rank": -1, "queries": nan, "queries_over_2r_plus_2_d": nan, "rel_err_A": nan,
                     "probes": nan, "retries": nan, "unprobed_over_2r_plus_2_d": nan}
                )
                continue
            lr_rows.append(
                {
                    "precision": prec,
                    "rank": est.rank,
                    "queries": est.n_queries,
                    "queries_over_2r_plus_2_d": est.n_queries / ((2 * cfg.lr_rank + 2) * cfg.lr_d),
                    "rel_err_A": relative_error(est.A, head.A),
                    "probes": est.n_probe_queries,
                    "retries": est.n_rescale_queries,
                    # the queries other than the counted probes, against the budget (issue 68)
                    "unprobed_over_2r_plus_2_d": (est.n_queries - est.n_probe_queries)
                    / ((2 * cfg.lr_rank + 2) * cfg.lr_d),
                }
            )

    def worst(key: str, dtype: str) -> float:
        return nanmax([r[key] for r in rows if r["dtype"] == dtype])

    auto_lr = [r for r in lr_rows if r["precision"] == "auto"]
    f64_lr = [r for r in lr_rows if r["precision"] == "float64"]
    rank_err = sum(r["rank"] != cfg.lr_rank for r in auto_lr)
    # Preconditions: the planted heads are identifiable (v far from 0; the low-rank ones of rank lr_rank), and
    # each oracle rounds like the dtype the claim is about (a float64 or a float16 oracle posing as float32
    # would make the precision claims say nothing).
    pre = [
        value_norm_check(heads),
        rank_gap_check((h, cfg.lr_rank) for h in lr_heads),
        rounding_check("float32", rounding["float32"]),
        rounding_check("float16", rounding["float16"]),
    ]
    return Outcome(
        metrics={
            **{c.name: c.value for c in pre},
            "n_refused_auto": n_refused,
            "float32_max_rel_err_auto": worst("rel_err_auto", "float32"),
            "float32_max_rel_err_float64_assumed": worst("rel_err_float64", "float32"),
            "float16_max_rel_err_auto": worst("rel_err_auto", "float16"),
            "float16_max_rel_err_float64_assumed": worst("rel_err_float64", "float16"),
            "max_error_over_bar_auto": nanmax([r["error_over_bar_auto"] for r in rows]),
            "max_queries_over_d2_plus_d_auto": nanmax([r["queries_auto"] for r in rows]) / (cfg.d**2 + cfg.d),
            "float32_lowrank_rank_errors_auto": rank_err,
            "float32_lowrank_max_queries_over_2r_plus_2_d_auto": nanmax(
                [r["queries_over_2r_plus_2_d"] for r in auto_lr]
            ),
            "float32_lowrank_max_rel_err_auto": nanmax([r["rel_err_A"] for r in auto_lr]),
            "float32_lowrank_max_unprobed_over_2r_plus_2_d_auto": nanmax(
                [r["unprobed_over_2r_plus_2_d"] for r in auto_lr]
            ),
            "float32_lowrank_max_probes_auto": nanmax([r["probes"] for r in auto_lr]),
            "float32_lowrank_max_retries_auto": nanmax([r["retries"] for r in auto_lr]),
            "float32_lowrank_rank_errors_float64_assumed": sum(r["rank"] != cfg.lr_rank for r in f64_lr),
            "float32_lowrank_max_queries_over_2r_plus_2_d_float64_assumed": max(
                r["queries_over_2r_plus_2_d"] for r in f64_lr
            ),
        },
        checks=[
            *pre,
            # targets: ~30 float32 epsilons (1.2e-7) and ~50 float16 epsilons; issue 28 measured 0.27 for float32
            # at entries ~20 with the float64 settings
            Check("n_refused_auto", n_refused, "== 0", paper="—"),
            Check("float32_max_rel_err_auto", worst("rel_err_auto", "float32"), "< 1e-5", paper="—"),
            Check("float16_max_rel_err_auto", worst("rel_err_auto", "float16"), "< 0.05", paper="—"),
            # fails if the precision-derived bars are too small for a real low-precision oracle
            Check("max_error_over_bar_auto", nanmax([r["error_over_bar_auto"] for r in rows]), "<= 1", paper="—"),
            # issue 28: rank 25 and 1664 queries (6.5 x (2r+2)d) with the fixed 1e-8 tolerance.
            Check("float32_lowrank_rank_errors_auto", rank_err, "== 0", paper="rank estimated"),
            # issue 68: (2r+2)d plus the counted probes (1 precision probe, 4 per rank confirmation; card).
            # Changed after seeing 312-358 queries at d = 32, r = 3 against (2r+2)d = 256 (before: "<= 2" on
            # the total): the SNR re-ask of 2b was dropped, and the target is now the budget itself.
            Check(
                "float32_lowrank_max_unprobed_over_2r_plus_2_d_auto",
                nanmax([r["unprobed_over_2r_plus_2_d"] for r in auto_lr]),
                "<= 1",
                paper="(2r+2)d",
            ),
            Check("float32_lowrank_max_probes_auto", nanmax([r["probes"] for r in auto_lr]), "<= 9",
                  paper="(ours) counted probes"),
            Check("float32_lowrank_max_rel_err_auto", nanmax([r["rel_err_A"] for r in auto_lr]), "< 1e-4", paper="—"),
        ],
        tables={"exact": rows, "low_rank": lr_rows},
    )
