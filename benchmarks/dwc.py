"""Benchmark: DWC integer inference path vs the FP32 MLP actor, plus the circuit's latency and LUT count.

Prints actions per second (batch 1 and batch 1024) of ``DWCPolicy.act`` (thermometer + integer LUT path),
the numpy integer model, the FP32 256x256 MLP actor and the QAT (brevitas, fake-quantised) MLP actor, the
simulated clock cycles per action (iverilog)
and the yosys 6-LUT count / depth of the exported core. Untrained (random) networks: speed and circuit size
do not depend on the training. Usage: ``python benchmarks/dwc.py [--quick]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from icml2026.papers.dwc import (
    DWCPolicy,
    MLPActor,
    QuantMLPActor,
    export_verilog,
    have_iverilog,
    have_yosys,
    simulate,
    synth_stats,
)


def _rate(fn, obs: np.ndarray, min_time: float) -> float:
    fn(obs)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time:
        fn(obs)
        n += 1
    return n * (obs.shape[0] if obs.ndim == 2 else 1) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small net, short timings")
    args = ap.parse_args()
    torch.set_num_threads(1)
    n_luts, min_time = (64, 0.5) if args.quick else (256, 2.0)
    obs_dim, act_dim = 4, 1  # InvertedPendulum-v4
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    pol = DWCPolicy(obs_dim, act_dim, n_luts=n_luts, bits=63, action_scale=3.0, generator=g)
    pol.normalizer.update(rng.normal(size=(1000, obs_dim)))
    pol.mark_trained()
    mlp = MLPActor(obs_dim, act_dim, 256, 3.0, generator=g)
    mlp.normalizer.update(rng.normal(size=(1000, obs_dim)))
    qat = QuantMLPActor(obs_dim, act_dim, 256, 3.0, generator=g)  # brevitas fake-quant (W8A8) on CPU
    qat.normalizer.update(rng.normal(size=(1000, obs_dim)))
    ref = pol.to_integer_model()
    rows = []
    for batch in (1, 1024):
        obs = rng.normal(size=(batch, obs_dim)) if batch > 1 else rng.normal(size=obs_dim)
        r_dwc = _rate(pol.act, obs, min_time)
        r_np = _rate(ref.act, np.atleast_2d(obs), min_time)
        r_mlp = _rate(mlp.deterministic, obs, min_time)
        r_qat = _rate(qat.deterministic, obs, min_time)
        rows.append((batch, r_dwc, r_np, r_mlp, r_qat))
    print(f"DWC 2x{n_luts} LUTs (n=6, B=63) vs FP32 MLP 256x256, obs_dim={obs_dim}, 1 CPU thread")
    print(f"{'batch':>6} {'DWC act/s':>12} {'numpy int act/s':>16} {'MLP act/s':>12} {'QAT MLP act/s':>14} "
          f"{'DWC/MLP':>8}")
    for b, r1, r2, r3, r4 in rows:
        print(f"{b:>6} {r1:>12.0f} {r2:>16.0f} {r3:>12.0f} {r4:>14.0f} {r1 / r3:>8.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        res = export_verilog(pol, Path(tmp) / "dwc_core.v")
        if have_iverilog():
            bits = pol.encode(torch.as_tensor(rng.normal(size=(256, obs_dim)))).numpy().astype(bool)
            sim = simulate(res.module_path, bits)
            ok = np.array_equal(sim.popcounts, ref.popcounts(bits))
            print(f"circuit: latency {sim.latency_cycles} clock cycles per action, throughput 1 action/cycle "
                  f"(pipelined), simulation matches numpy model: {ok}")
        else:
            print("circuit: iverilog not installed, simulation skipped")
        if have_yosys():
            st = synth_stats(res.module_path)
            print(f"yosys synth -lut 6: {st['luts']} LUTs, {st['flipflops']} flip-flops, depth {st['depth']} "
                  f"(vs {2 * n_luts} logical LUTs + popcount; MLP: {256 * 256 + 4 * 256 + 256} multiply-adds)")
        else:
            print("yosys not installed: LUT count skipped")


if __name__ == "__main__":
    main()
