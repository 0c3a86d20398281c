"""The controls of the comparative claims (issue 57): the planted arms carry the paper's effect by construction,
the null arms none (or, for the shift check, the wrong sign)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from icml2026.papers.stride.data import make_protein_task  # noqa: E402
from icml2026.papers.stride.evaluate import protein_metrics  # noqa: E402
from icml2026.papers.stride.experiments import (  # noqa: E402
    PAPER_GSPO_RATES,
    PAPER_PROTEIN_GAIN,
    PAPER_SFT_RATES,
    _plant,
    _type_probs,
)


@pytest.mark.parametrize("rates", [PAPER_SFT_RATES, PAPER_GSPO_RATES])
def test_control_arm_rates_are_the_papers(rates):
    valid, strict, shift = rates
    p_invalid, p_clean, p_strict_drift, p_drift = _type_probs(*rates)
    assert 1 - p_invalid == pytest.approx(valid)
    assert p_clean + p_strict_drift == pytest.approx(strict)  # strict: clean or drifting strict edits
    assert (p_strict_drift + p_drift) / (1 - p_invalid) == pytest.approx(shift)


def test_planted_protein_arm_gains_the_papers_success():
    rng = np.random.default_rng(0)
    task = make_protein_task(rng, length=10, n_train=2, n_test=4, targets_per_source=2)
    sources = task.test_sources
    failed = [[None] * 50 for _ in sources]  # a baseline arm that never succeeds
    before = protein_metrics(task.oracle, sources, failed, task.targets).success
    planted = protein_metrics(task.oracle, sources, _plant(failed, sources, task, rng), task.targets)
    assert before == 0.0
    assert planted.success == pytest.approx(PAPER_PROTEIN_GAIN, abs=0.08)  # 200 draws: sd ~ 0.035
    assert planted.novelty == 1.0  # oracle outputs are never among the SFT targets
