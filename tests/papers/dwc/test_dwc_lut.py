import numpy as np
import pytest
import torch

from icml2026.papers.dwc import MAPPING_TAU, LUTLayer, efd_constants

torch.set_num_threads(1)  # shared 2-core machine


def _efd_brute(table: np.ndarray, a: int, n: int) -> np.ndarray:
    """The brief's EFD formula as a plain loop over a' (one LUT, one address)."""
    alpha, beta = efd_constants(n)
    out = np.zeros(n)
    for l_bit in range(n):
        for ap in range(1 << n):
            ham = bin((a & ~(1 << l_bit)) ^ (ap & ~(1 << l_bit))).count("1")
            sign = 1.0 if (ap >> l_bit) & 1 else -1.0
            out[l_bit] += table[ap] * alpha * beta**ham * sign
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_efd_gradient_equals_brute_force_criterion_1(n):
    g = torch.Generator().manual_seed(n)
    layer = LUTLayer(in_bits=3 * n, n_luts=5, lut_inputs=n, mapping="random", generator=g)
    x = (torch.rand(7, 3 * n, generator=g) > 0.5).float().requires_grad_(True)
    up = torch.randn(7, 5, generator=g)
    (layer(x) * up).sum().backward()
    idx = layer.indices().numpy()
    tables = layer.tables.detach().double().numpy()
    xb = x.detach().numpy().astype(int)
    expected_x = np.zeros((7, 3 * n))
    expected_t = np.zeros_like(tables)
    for b in range(7):
        for k in range(5):
            addr = sum(int(xb[b, idx[k, i]]) << i for i in range(n))
            expected_x[b, idx[k]] += up[b, k].item() * _efd_brute(tables[k], addr, n)  # random map: x[:, idx]
            expected_t[k, addr] += up[b, k].item()                                    # scatter-add into T[k, a]
    # float32 accumulation of <= 64 terms of size <= 1: errors ~1e-7.
    np.testing.assert_allclose(x.grad.numpy(), expected_x, atol=1e-6)
    np.testing.assert_allclose(layer.tables.grad.numpy(), expected_t, atol=1e-6)


def test_forward_is_binarised_table_lookup():
    g = torch.Generator().manual_seed(0)
    layer = LUTLayer(10, 4, lut_inputs=3, mapping="random", generator=g)
    x = (torch.rand(6, 10, generator=g) > 0.5).float()
    y = layer(x).detach().numpy()
    idx, t = layer.indices().numpy(), layer.tables.detach().numpy()
    for b in range(6):
        for k in range(4):
            addr = sum(int(x[b, idx[k, i]]) << i for i in range(3))
            assert y[b, k] == float(t[k, addr] > 0)


def test_learnable_mapping_criterion_2():
    g = torch.Generator().manual_seed(1)
    layer = LUTLayer(12, 3, lut_inputs=4, mapping="learnable", generator=g)
    # Forward: argmax over rows of Wm picks the bit each LUT input reads.
    np.testing.assert_array_equal(layer.indices().numpy().ravel(), layer.wm.detach().argmax(0).numpy())
    x = (torch.rand(9, 12, generator=g) > 0.5).float().requires_grad_(True)
    up = torch.randn(9, 3, generator=g)
    (layer(x) * up).sum().backward()
    # The gradient reaching the mapped bits xm (9, 3*4) is the EFD gradient; recover it with a random map
    # layer sharing the tables and reading the same indices.
    ref = LUTLayer(12, 3, lut_inputs=4, mapping="random", generator=g)
    with torch.no_grad():
        ref.tables.copy_(layer.tables)
        ref.fixed_idx.copy_(layer.indices().reshape(-1))
    xm = x.detach()[:, ref.fixed_idx].clone().requires_grad_(True)
    from icml2026.papers.dwc import EFDLookup

    (EFDLookup.apply(xm.reshape(9, 3, 4), ref.tables, ref.efd) * up).sum().backward()
    gm = xm.grad.numpy()                                                        # dL/d(mapped bits), (9, 12)
    soft = torch.softmax(layer.wm.detach() / MAPPING_TAU, dim=0).numpy()        # (12, 12)
    np.testing.assert_allclose(layer.wm.grad.numpy(), (2 * x.detach().numpy() - 1).T @ gm, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), gm @ soft.T, atol=1e-6)


def test_random_mapping_uses_every_input_before_reuse():
    layer = LUTLayer(20, 5, lut_inputs=6, mapping="random", generator=torch.Generator().manual_seed(2))
    first = layer.fixed_idx[:20].numpy()
    assert sorted(first) == list(range(20))  # 30 reads over 20 bits: the first 20 are a permutation


def test_clamp_tables():
    layer = LUTLayer(8, 2, lut_inputs=2, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        layer.tables.mul_(5)
    layer.clamp_tables_()
    assert layer.tables.abs().max() <= 1.0


def test_same_generator_same_layer_new_generator_different():
    a = LUTLayer(30, 8, generator=torch.Generator().manual_seed(5))
    b = LUTLayer(30, 8, generator=torch.Generator().manual_seed(5))
    c = LUTLayer(30, 8, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a.tables, b.tables) and torch.equal(a.wm, b.wm)
    assert not torch.equal(a.tables, c.tables)


@pytest.mark.parametrize("kwargs, msg", [({"mapping": "fixed"}, "mapping"), ({"lut_inputs": 0}, "lut_inputs"),
                                         ({"n_luts": 0}, "n_luts")])
def test_bad_layer_arguments(kwargs, msg):
    args = {"in_bits": 8, "n_luts": 2, **kwargs}
    with pytest.raises(ValueError, match=msg):
        LUTLayer(**args)


def test_wrong_input_width():
    layer = LUTLayer(8, 2, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="shape"):
        layer(torch.zeros(3, 9))
