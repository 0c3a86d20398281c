"""Issue 16: the random-string probes reach every model family, so that the experiment can test whether
different models produce correlated "random" outputs; and the probe statistics separate shared marginals
from per-prompt dependence."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.core import make_rng, spawn
from icml2026.papers.truth_polling import FAMILIES, FamilyConfig, make_family, make_random_digit_task
from icml2026.papers.truth_polling.experiments import _probe

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

FAST = FamilyConfig(d_model=32, lm_steps=40, lr=1e-2, cnn_epochs=5)


@pytest.fixture(scope="module")
def fitted() -> tuple[list, object]:  # type: ignore[type-arg]
    """One model of each family trained on its own random-digit corpus (~5 s)."""
    rng = make_rng(0)
    task = make_random_digit_task(len(FAMILIES), 200, 60, rng, shared=True)
    models = [
        make_family(name, FAST).fit(corpus, r)
        for name, corpus, r in zip(FAMILIES, task.corpora, spawn(rng, len(FAMILIES)), strict=True)
    ]
    return models, task


def test_every_family_output_depends_on_the_probe(fitted) -> None:  # type: ignore[no-untyped-def]
    models, task = fitted
    for model in models:
        probs = model.answer_probs(task.probes, task.options)  # (probes, 10)
        # before the fix the three word-level families read <unk> for every probe: s.d. <= 8e-15
        assert probs.std(axis=0).max() > 1e-3, model.family


def test_contiguous_out_of_vocabulary_probes_would_not_reach_word_models(fitted) -> None:  # type: ignore[no-untyped-def]
    """The negative control of the test above: probes written as one unseen word each (the old format)
    give the word-level families one fixed output, so the dependence test can fail."""
    models, task = fitted
    contiguous = ["".join(p.split()[:-1]) + " digit" for p in task.probes]
    for model in models:
        if model.family in ("transformer", "gru", "trigram"):
            probs = model.answer_probs(contiguous, task.options)
            assert probs.std(axis=0).max() < 1e-6, model.family


def test_probe_statistics_separate_marginals_from_per_prompt_dependence() -> None:
    rng = make_rng(1)
    n_probes, n_v = 4000, 10
    shared_bias = np.full(n_v, 0.02)
    shared_bias[3] = 0.82  # both models prefer digit 3 on every prompt, independently of the prompt
    marginal_only = np.broadcast_to(shared_bias, (2, n_probes, n_v)).copy()
    stats = _probe(marginal_only, rng, n_perm=20)
    # raw agreement far above 1/V, but exactly at the independence level: no per-prompt dependence
    assert stats["agreement"] / stats["chance"] > 5
    assert stats["expected_agreement"] == pytest.approx(stats["expected_independence"], rel=1e-12)
    # two models that both output a prompt-determined digit: dependence beyond the marginals
    digit = rng.integers(0, n_v, size=n_probes)
    copied = np.full((2, n_probes, n_v), 0.01)
    copied[:, np.arange(n_probes), digit] = 0.91
    stats = _probe(copied, rng, n_perm=20)
    assert stats["expected_agreement"] / stats["expected_independence"] > 5
    assert stats["min_mi_pvalue"] <= 1 / 21 + 1e-12  # no permutation reaches the observed MI
