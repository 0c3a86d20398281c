"""Vector inputs x in F^d (issue 27): values and gradient vectors, bit-exact coordinate by coordinate."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml2026.papers.fp_gradients import (
    ConstructionError,
    build_vector_construction,
    construct,
    random_vector_targets,
    verify,
)

torch.set_num_threads(1)
torch.set_flush_denormal(False)

F32 = np.float32


def _exact(xs, g, h, phi):
    con = build_vector_construction(xs, g, h, phi)
    ver = verify(con.to_sequential(), xs, g, h, phi)
    counts = (
        ver.value_mismatches_torch,
        ver.grad_mismatches_torch,
        ver.value_mismatches_reference,
        ver.grad_mismatches_reference,
    )
    assert counts == (0, 0, 0, 0), counts
    return con, ver


@pytest.mark.parametrize("phi", ["identity", "half_square", "softplus"])
def test_vector_d3_k40(phi):
    xs, g, h = random_vector_targets(40, 3, np.random.default_rng(3), phi)
    assert np.count_nonzero(h) > 40  # softplus: half the values are < -104 (seed 0, h = 0)
    con, ver = _exact(xs, g, h, phi)
    assert con.widths[0] == 3 and ver.grads_torch.shape == (40, 3)


@pytest.mark.slow
@pytest.mark.parametrize("phi", ["identity", "half_square", "softplus"])
@pytest.mark.parametrize("k, seed", [(40, s) for s in range(5)] + [(400, s) for s in range(5)])
def test_vector_acceptance(phi, k, seed):
    _exact(*random_vector_targets(k, 3, np.random.default_rng(seed), phi), phi)


def test_points_differing_in_one_coordinate_only_and_construct_dispatch():
    xs = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], F32)  # a 2 x 2 grid
    g = np.array([1.0, -2.0, 0.0, 1e-40], F32)
    h = np.array([[1.0, -1.0], [3e-41, 5e30], [0.0, 2.0], [-7.0, 0.0]], F32)
    net = construct(xs, g, h, "identity")  # 2-D xs: the vector construction
    ver = verify(net, xs, g, h, "identity")
    assert ver.ok


def test_vector_bad_input_and_conditions():
    xs = np.array([[0.0, 1.0], [0.0, 1.0]], F32)
    with pytest.raises(ValueError, match="same point twice"):
        build_vector_construction(xs, np.ones(2, F32), np.ones((2, 2), F32), "identity")
    with pytest.raises(ValueError, match="grads"):
        build_vector_construction(xs[:1], np.ones(1, F32), np.ones((1, 3), F32), "identity")
    with pytest.raises(ValueError, match="at most 4"):
        build_vector_construction(np.zeros((1, 5), F32), np.ones(1, F32), np.ones((1, 5), F32), "identity")
    # 0.5 y^2 at g = 0 has seed 0: a non-zero gradient target is unreachable
    with pytest.raises(ConstructionError, match="seed"):
        build_vector_construction(np.zeros((1, 2), F32), np.zeros(1, F32), np.ones((1, 2), F32), "half_square")


def _f32(bits: int) -> float:
    return float(np.array([bits], dtype=np.uint32).view(F32)[0])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    g=st.lists(st.integers(0, 2**32 - 1).map(_f32).filter(np.isfinite), min_size=3, max_size=3),
    h=st.lists(st.integers(0, 2**32 - 1).map(_f32).filter(np.isfinite), min_size=6, max_size=6),
    phi=st.sampled_from(["identity", "half_square", "softplus"]),
)
def test_vector_property_whole_range_exact_or_construction_error(g, h, phi):
    xs = np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 1.0]], F32)
    g32, h32 = np.array(g, F32), np.array(h, F32).reshape(3, 2)
    try:
        con = build_vector_construction(xs, g32, h32, phi)
    except ConstructionError as exc:
        assert "point" in str(exc) or "coordinate" in str(exc)
        return
    assert verify(con.to_sequential(), xs, g32, h32, phi).ok
