import numpy as np
import pytest
import torch

from icml2026.papers.dwc import DWCPolicy, export_verilog, have_yosys, synth_stats

torch.set_num_threads(1)

needs_yosys = pytest.mark.skipif(not have_yosys(), reason="yosys not on PATH (apt-get install yosys)")

# A circuit whose 6-LUT mapping is known by hand: a 6-input XOR is exactly one LUT6 (no smaller cover, no
# constant), a 6-input AND another one, and the registered AND is one flip-flop. yosys' own single report
# (`synth -lut 6; stat`) says 2 $lut and 1 $_DFF_P_. The old parser summed synth's stat block and the explicit
# one and returned 4 / 2: this test fails on that double count.
KNOWN = """module dwc_core(input wire clk, input wire [5:0] a, input wire [5:0] b, output reg q, output wire y);
  assign y = ^a;
  always @(posedge clk) q <= &b;
endmodule
"""


@needs_yosys
def test_synth_stats_counts_a_known_circuit_once(tmp_path):
    p = tmp_path / "known.v"
    p.write_text(KNOWN)
    st = synth_stats(p)
    assert st["luts"] == 2 and st["flipflops"] == 1
    assert st["depth"] >= 1


@needs_yosys
def test_synth_stats_of_an_exported_core_is_bounded_by_its_luts(tmp_path):
    pol = DWCPolicy(3, 2, n_luts=(8, 6), bits=5, generator=torch.Generator().manual_seed(0))
    pol.normalizer.update(np.random.default_rng(0).normal(size=(50, 3)))
    pol.mark_trained()
    res = export_verilog(pol, tmp_path / "core.v")
    st = synth_stats(res.module_path)
    # 14 six-input LUTs plus two 3-bit popcounts of 3: yosys may merge or drop LUTs, never need many more;
    # registers: 8 + 6 LUT outputs, 2 x 2 popcount bits, 3 valid bits (some may be optimised away).
    assert 1 <= st["luts"] <= 14 + 8
    assert st["flipflops"] <= 8 + 6 + 4 + 3


def test_synth_stats_rejects_a_missing_file(tmp_path):
    if not have_yosys():
        pytest.skip("yosys not installed")
    with pytest.raises(ValueError, match="path"):
        synth_stats(tmp_path / "nope.v")
