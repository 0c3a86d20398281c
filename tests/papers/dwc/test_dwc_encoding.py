import numpy as np
import pytest
import torch
from scipy.stats import norm

from icml2026.papers.dwc import ObsNormalizer, thermometer_encode, thermometer_thresholds

torch.set_num_threads(1)  # shared 2-core machine


@pytest.mark.parametrize("bits", [3, 5, 15, 63, 255])
def test_thresholds_criterion_5(bits):
    tau = thermometer_thresholds(bits)
    assert tau.shape == (bits,)
    assert np.all(np.diff(tau) > 0)                      # strictly increasing
    np.testing.assert_array_equal(tau, -tau[::-1])        # exactly symmetric
    assert 0.0 in tau and tau[bits // 2] == 0.0           # 0.5 quantile is one of them
    assert tau[0] == -10.0 and tau[-1] == 10.0            # outermost on the clip range


def test_thresholds_are_scaled_gaussian_quantiles():
    b = 63
    q = np.sort(np.concatenate([np.arange(1, b) / b, [0.5]]))
    expected = 10.0 / norm.ppf((b - 1) / b) * norm.ppf(q)
    np.testing.assert_allclose(thermometer_thresholds(b), expected, atol=1e-12)  # float64 rounding only


@pytest.mark.parametrize("bad", [0, 1, 2, 64, -3])
def test_thresholds_reject_bad_bits(bad):
    with pytest.raises(ValueError, match="odd|^bits: "):
        thermometer_thresholds(bad)
    with pytest.raises(TypeError):
        thermometer_thresholds(63.0)  # type: ignore[arg-type]


def test_thermometer_is_dimension_major():
    tau = torch.as_tensor(thermometer_thresholds(5))
    x = torch.tensor([[0.0, 10.0, -10.0]], dtype=torch.float64)
    bits = thermometer_encode(x, tau)[0].numpy()
    # dim 0 at 0.0: above the two negative thresholds only; dim 1 at the clip: above all but +10;
    # dim 2 at -10: above none (strict comparison).
    np.testing.assert_array_equal(bits, [1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0])


def test_normalizer_parallel_update_matches_batch_statistics():
    rng = np.random.default_rng(3)
    x = rng.normal(2.0, 3.0, size=(1000, 4))
    nz = ObsNormalizer(4)
    for chunk in np.array_split(x, [1, 7, 100, 500]):  # uneven chunks, including single rows
        nz.update(chunk)
    np.testing.assert_allclose(nz.mean.numpy(), x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(nz.var.numpy(), x.var(0), rtol=1e-10)  # Chan et al. is exact up to rounding
    out = nz.normalize(torch.as_tensor(np.array([[1e6, -1e6, 2.0, 2.0]])))
    assert out[0, 0] == 10.0 and out[0, 1] == -10.0  # clipped to +/-10
