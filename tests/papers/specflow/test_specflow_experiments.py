"""The registered experiments' verdict structure (issue 63): preconditions (sampler, learned policies) before the
comparative claims, and the control presets that replace the compared arms."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml2026.core import make_rng  # noqa: E402
from icml2026.core.registry import get_experiment  # noqa: E402
from icml2026.papers.specflow.experiments import _control_difference, _shifted  # noqa: E402


@pytest.mark.slow
def test_headline_checks_preconditions_before_its_comparative_claims() -> None:
    exp = get_experiment("specflow.headline")
    out = exp(exp.config("smoke"), make_rng(0))
    roles = {c.name: (c.role, c.comparative) for c in out.checks}
    for name in ("denoiser_spectral_max_abs_err", "denoiser_pixel_max_abs_err", "specflow_exact_success",
                 "mvot_oracle_success", "text_success"):
        assert roles[name] == ("precondition", False)
    assert roles["specflow_minus_mvot_success"] == ("claim", True)
    assert roles["specflow_minus_text_success"] == ("claim", True)
    # the sampler precondition passes even on an untrained net's run: it is checked with a perfect denoiser
    assert next(c for c in out.checks if c.name == "denoiser_spectral_max_abs_err").passed


def test_shifted_flips_exactly_the_planted_number_of_maps() -> None:
    rng = np.random.default_rng(0)
    x = np.array([True] * 30 + [False] * 70)
    up = _shifted(x, 0.1, rng)
    down = _shifted(x, -0.1, rng)
    assert up.sum() == 40 and (up >= x).all()  # only failures became successes
    assert down.sum() == 20 and (down <= x).all()
    # with the same outcomes on both arms the control difference is the shift itself
    assert _control_difference(x, x, 0.1, rng) == pytest.approx(0.1)
    assert _control_difference(x, x, -0.2, rng) == pytest.approx(-0.2)
    # an arm with too few successes to remove: the reference arm gains the effect instead (the null stays false)
    few = np.array([True] * 2 + [False] * 98)
    assert _control_difference(few, few, -0.1, rng) == pytest.approx(-0.1)
