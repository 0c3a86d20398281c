"""Benchmark for fp_gradients: construction/verification time and size against K, vs Sobolev training.

    python benchmarks/fp_gradients.py [--quick]

For K = 10^2, 10^3 (and 10^4 without --quick) on mild targets (phi = identity): planning time, the
dense parameter count, verification time and mismatches of the exact construction, against a standard
float32 MLP fitted to the same values and gradients by Sobolev training (time, mismatches).  At K = 10^4
the dense nn.Sequential would hold ~1e9 float32 parameters (4 GB), so it is not materialised: its size
is computed from the layer shapes and the network is verified with the sparse reference evaluator on
the construction's own coordinates (the torch column says so).  A second table gives the size and time
of the vector-input construction (d = 3, issue 27), and a third the Claim-2 sizes (K, n losses ->
network size, construction time; issue 27).  Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml2026.papers.fp_gradients import (
    build_construction,
    build_multi_construction,
    build_vector_construction,
    mild_targets,
    random_multi_targets,
    random_vector_targets,
    reference_values_and_grads,
    sobolev_fit,
    torch_values_and_grads,
    verify,
)
from icml2026.papers.fp_gradients.floats import count_mismatches

DENSE_LIMIT = 2e8  # parameters above which the dense torch network is not materialised


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 10^2 and 10^3 only, shorter training")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(False)
    ks = (100, 1000) if args.quick else (100, 1000, 10000)
    steps = 200 if args.quick else 1000
    phi = "identity"
    header = (
        f"{'K':>6} {'params':>12} {'depth':>5} {'plan s':>8} {'verify s':>9} {'mism.':>6} {'via':>14}"
        f" | {'Sobolev s':>9} {'mism.':>6} {'max|f-g|':>9} | {'time ratio':>10}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for k in ks:
        tg = mild_targets(k, np.random.default_rng(k))
        t0 = time.perf_counter()
        con = build_construction(tg.xs, tg.values, tg.grads, phi)
        t_plan = time.perf_counter() - t0
        t0 = time.perf_counter()
        if con.n_params <= DENSE_LIMIT:
            ver = verify(con.to_sequential(), tg.xs, tg.values, tg.grads, phi, reference="sparse")
            mism, via = ver.total, "torch+ref"
        else:
            y, d = reference_values_and_grads(con.layers, tg.xs, phi, mode="sparse")
            mism, via = count_mismatches(y, tg.values) + count_mismatches(d, tg.grads), "ref (sparse)"
        t_verify = time.perf_counter() - t0
        t0 = time.perf_counter()
        fit = sobolev_fit(
            tg.xs / np.float32(k / 16),
            tg.values,
            tg.grads * np.float32(k / 16),
            phi,
            torch.Generator().manual_seed(0),
            steps=steps,
        )
        t_sob = time.perf_counter() - t0
        # the MLP sees x / s (inputs rescaled to [-1, 1]); its gradient in x is D / s
        ys, ds = torch_values_and_grads(fit.net, tg.xs / np.float32(k / 16), phi)
        ds = (ds / np.float32(k / 16)).astype(np.float32)
        sob_mism = count_mismatches(ys, tg.values) + count_mismatches(ds, tg.grads)
        ratio = (t_plan + t_verify) / t_sob
        rows.append((k, con.n_params))
        print(
            f"{k:>6} {con.n_params:>12,} {con.depth:>5} {t_plan:>8.2f} {t_verify:>9.2f} {mism:>6} {via:>14}"
            f" | {t_sob:>9.2f} {sob_mism:>6} {np.max(np.abs(ys - tg.values)):>9.3g} | {ratio:>10.2f}"
        )
    if len(rows) >= 2:
        (k0, p0), (k1, p1) = rows[0], rows[-1]
        print(
            f"\nparameter growth: log-log slope {np.log(p1 / p0) / np.log(k1 / k0):.3f} "
            "(dense layers of width O(K): ~2); mismatches are counted over 2K quantities (values + grads)"
        )
    vector_sizes((40, 100) if args.quick else (40, 100, 400))
    multi_sizes((10, 40) if args.quick else (10, 40, 100, 400))
    activation_sizes((40, 100) if args.quick else (40, 100, 400))


def vector_sizes(ks: tuple[int, ...], d: int = 3) -> None:
    """Vector inputs (issue 27): size and time of the d = 3 construction on whole-range random targets."""
    print(f"\nvector inputs, d = {d}, random targets over the whole float32 range (phi = identity)")
    header = f"{'K':>6} {'params':>12} {'gain layers':>11} {'plan s':>8} {'verify s':>9} {'mism.':>6}"
    print(header)
    print("-" * len(header))
    for k in ks:
        xs, g, h = random_vector_targets(k, d, np.random.default_rng(k), "identity")
        t0 = time.perf_counter()
        con = build_vector_construction(xs, g, h, "identity")
        t_plan = time.perf_counter() - t0
        t0 = time.perf_counter()
        ver = verify(con.to_sequential(), xs, g, h, "identity", reference="sparse")
        t_verify = time.perf_counter() - t0
        print(f"{k:>6} {con.n_params:>12,} {con.n_chain:>11} {t_plan:>8.2f} {t_verify:>9.2f} {ver.total:>6}")


def multi_sizes(ks: tuple[int, ...]) -> None:
    """Claim 2 (issue 27): size and time of one network for n losses at once, whole-range targets."""
    phis_all = ("identity", "half_square", "softplus")
    print("\nClaim 2: n losses at once (the first n of identity, 0.5 y^2, softplus), whole-range random targets")
    header = f"{'K':>6} {'n':>2} {'params':>12} {'depth':>5} {'channels':>8} {'plan s':>8} {'verify s':>9} {'mism.':>6}"
    print(header)
    print("-" * len(header))
    for k in ks:
        for n in (2, 3):
            phis = phis_all[:n]
            tg = random_multi_targets(k, np.random.default_rng(k), phis)
            t0 = time.perf_counter()
            con = build_multi_construction(tg.xs, tg.values, tg.grads, phis)
            t_plan = time.perf_counter() - t0
            t0 = time.perf_counter()
            net = con.to_sequential()
            mism = sum(
                verify(net, tg.xs, tg.values, tg.grads[i], phi, reference="sparse").total for i, phi in enumerate(phis)
            )
            t_verify = time.perf_counter() - t0
            print(
                f"{k:>6} {n:>2} {con.n_params:>12,} {con.depth:>5} {con.n_channels:>8} {t_plan:>8.2f}"
                f" {t_verify:>9.2f} {mism:>6}"
            )


def activation_sizes(ks: tuple[int, ...]) -> None:
    """The five smooth activations (issue 27): size and time on whole-range targets meeting their conditions."""
    from icml2026.papers.fp_gradients.activations import (
        SMOOTH_ACTIVATIONS,
        activation_targets,
        build_activation_construction,
        verify_activation,
    )

    print("\nother activations, phi = identity, whole-range random targets (adjusted to the stated conditions)")
    header = f"{'act':>8} {'K':>6} {'params':>12} {'depth':>5} {'chain':>5} {'plan s':>8} {'verify s':>9} {'mism.':>6}"
    print(header)
    print("-" * len(header))
    for act in SMOOTH_ACTIVATIONS:
        for k in ks:
            tg, _ = activation_targets(k, np.random.default_rng(k), "identity", act)
            t0 = time.perf_counter()
            con = build_activation_construction(tg.xs, tg.values, tg.grads, "identity", act)
            t_plan = time.perf_counter() - t0
            t0 = time.perf_counter()
            ver = verify_activation(con.to_sequential(), tg.xs, tg.values, tg.grads, "identity", reference="sparse")
            t_verify = time.perf_counter() - t0
            print(
                f"{act:>8} {k:>6} {con.n_params:>12,} {con.depth:>5} {con.n_chain:>5} {t_plan:>8.2f}"
                f" {t_verify:>9.2f} {ver.total:>6}"
            )


if __name__ == "__main__":
    main()
