"""Export of the DWC core (LUT layers + popcounts) to Verilog-2005, simulation with iverilog, yosys stats.

The exported module ``dwc_core`` takes the thermometer bit-vector (bit ``j * B + m``) and returns one
popcount per action group. Each LUT is a ``localparam [2^n-1:0]`` indexed by its n-bit address; a register
follows every LUT layer and the popcounts, so the core has a latency of ``n_layers + 1`` clock cycles and a
throughput of one action per cycle. The affine + tanh post-step stays outside the circuit (brief, step 4).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml2026.core.errors import require_tool

from .policy import DWCPolicy, IntegerDWC

__all__ = ["ExportResult", "SimulationResult", "export_verilog", "simulate", "synth_stats", "have_iverilog",
           "have_yosys"]

MODULE = "dwc_core"


@dataclass(frozen=True)
class ExportResult:
    """Paths written by :func:`export_verilog` and the circuit's shape."""

    module_path: Path
    testbench_path: Path
    meta_path: Path
    in_bits: int
    act_dim: int
    group_size: int
    n_luts: tuple[int, ...]
    latency_cycles: int


@dataclass(frozen=True)
class SimulationResult:
    """Popcounts (n_vectors, act_dim) int64 from the simulator and the measured latency in clock cycles."""

    popcounts: np.ndarray
    latency_cycles: int


def have_iverilog() -> bool:
    return shutil.which("iverilog") is not None and shutil.which("vvp") is not None


def have_yosys() -> bool:
    return shutil.which("yosys") is not None


def _module_text(model: IntegerDWC, n_inputs: int) -> str:
    in_bits, act_dim, g = model.in_bits, model.act_dim, model.group_size
    w = max(1, int(g).bit_length())
    lines = [
        f"// DWC core: {len(model.maps)} LUT layers of {[m.shape[0] for m in model.maps]} {n_inputs}-input LUTs,",
        f"// {act_dim} popcount groups of {g}. Input bit j*B+m = [x_hat_j > tau_m]. Generated; do not edit.",
        f"module {MODULE} (",
        "  input wire clk,",
        "  input wire valid_in,",
        f"  input wire [{in_bits - 1}:0] x,",
        "  output reg valid_out,",
        f"  output reg [{act_dim * w - 1}:0] pop",
        ");",
    ]
    prev, prev_width = "x", in_bits
    size = 1 << n_inputs
    hexw = max(1, size // 4)
    for li, (m, t) in enumerate(zip(model.maps, model.tables, strict=True), start=1):
        n = m.shape[0]
        lines.append(f"  // layer {li}: {n} LUTs")
        lines.append(f"  wire [{n - 1}:0] l{li}_c;")
        lines.append(f"  reg [{n - 1}:0] l{li}_q;")
        lines.append(f"  reg v{li};")
        for k in range(n):
            init = sum(1 << int(a) for a in np.flatnonzero(t[k]))  # python ints: 2^n may exceed int64
            addr = ", ".join(f"{prev}[{int(m[k, i])}]" for i in range(n_inputs - 1, -1, -1))
            lines.append(f"  localparam [{size - 1}:0] L{li}_{k} = {size}'h{init:0{hexw}x};")
            lines.append(f"  assign l{li}_c[{k}] = L{li}_{k}[{{{addr}}}];")
        src_v = "valid_in" if li == 1 else f"v{li - 1}"
        lines.append(f"  always @(posedge clk) begin l{li}_q <= l{li}_c; v{li} <= {src_v}; end")
        prev, prev_width = f"l{li}_q", n
    n_last = prev_width
    for a in range(act_dim):
        terms = [f"{prev}[{i}]" for i in range(a * g, min((a + 1) * g, n_last))]  # padded LUTs are constant 0
        lines.append(f"  wire [{w - 1}:0] p{a};")
        body = " + ".join(terms) if terms else "0"
        lines.append(f"  assign p{a} = {w}'d0 + {body};")
    cat = ", ".join(f"p{a}" for a in range(act_dim - 1, -1, -1))
    lines.append(f"  always @(posedge clk) begin pop <= {{{cat}}}; valid_out <= v{len(model.maps)}; end")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def _testbench_text(in_bits: int, act_dim: int, w: int) -> str:
    fields = " ".join(["%0d"] * act_dim)
    args = ", ".join(f"pop[{(a + 1) * w - 1}:{a * w}]" for a in range(act_dim))
    return f"""// Testbench: streams vectors.hex (one hex bit-vector per line) through {MODULE}, one per cycle,
// writes popcounts.txt (one line of {act_dim} decimal popcounts per vector, then the latency in cycles).
`timescale 1ns/1ps
module {MODULE}_tb;
  reg clk = 0;
  reg valid_in = 0;
  reg [{in_bits - 1}:0] x = 0;
  reg [{in_bits - 1}:0] v;
  wire valid_out;
  wire [{act_dim * w - 1}:0] pop;
  integer fi, fo, r, n_in, n_out, cycle, first_in, first_out, guard;
  {MODULE} dut (.clk(clk), .valid_in(valid_in), .x(x), .valid_out(valid_out), .pop(pop));
  always #5 clk = ~clk;
  always @(posedge clk) begin
    cycle = cycle + 1;
    if (valid_in && first_in < 0) first_in = cycle;
    if (valid_out) begin
      if (first_out < 0) first_out = cycle;
      $fdisplay(fo, "{fields}", {args});
      n_out = n_out + 1;
    end
  end
  initial begin
    n_in = 0; n_out = 0; cycle = 0; first_in = -1; first_out = -1; guard = 0;
    fi = $fopen("vectors.hex", "r");
    fo = $fopen("popcounts.txt", "w");
    if (fi == 0) begin $display("ERROR: cannot open vectors.hex"); $finish; end
    while (!$feof(fi)) begin
      r = $fscanf(fi, "%h\\n", v);
      if (r == 1) begin
        @(negedge clk);
        x = v; valid_in = 1; n_in = n_in + 1;
      end
    end
    @(negedge clk);
    valid_in = 0;
    while (n_out < n_in && guard < 1000) begin @(negedge clk); guard = guard + 1; end
    $fdisplay(fo, "latency %0d", first_out - first_in);
    $fclose(fo);
    $finish;
  end
endmodule
"""


def export_verilog(policy: DWCPolicy, path: str | Path) -> ExportResult:
    """Write the policy's core as Verilog: ``path`` (module ``dwc_core``), ``<stem>_tb.v``, ``<stem>.json``.

    The policy is validated first (trained, equal popcount groups, tables in [-1, 1]); nothing is written
    if that fails.

    Raises
    ------
    PolicyError (a ValueError)
        For an untrained or inconsistent policy.
    """
    policy.validate(require_trained=True)
    model = policy.to_integer_model()
    path = Path(path)
    if path.suffix != ".v":
        raise ValueError(f"the module path must end in .v, got {path.name!r}")
    n_in = policy.lut_inputs
    w = max(1, int(model.group_size).bit_length())
    tb_path = path.with_name(path.stem + "_tb.v")
    meta_path = path.with_suffix(".json")
    module_text = _module_text(model, n_in)
    tb_text = _testbench_text(model.in_bits, model.act_dim, w)
    latency = len(model.maps) + 1
    meta = {"module": MODULE, "in_bits": model.in_bits, "act_dim": model.act_dim, "group_size": model.group_size,
            "pop_width": w, "n_luts": [int(m.shape[0]) for m in model.maps], "lut_inputs": n_in,
            "latency_cycles": latency, "testbench": tb_path.name,
            "normalizer_mean": model.mean.tolist(), "normalizer_var": model.var.tolist(),
            "thresholds": model.thresholds.tolist(), "log_alpha": model.log_alpha.tolist(),
            "beta": model.beta.tolist(), "action_scale": model.action_scale.tolist(),
            "action_bias": model.action_bias.tolist()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(module_text)
    tb_path.write_text(tb_text)
    meta_path.write_text(json.dumps(meta, indent=1))
    return ExportResult(path, tb_path, meta_path, model.in_bits, model.act_dim, model.group_size,
                        tuple(meta["n_luts"]), latency)


def _bits_to_hex(bits: np.ndarray) -> list[str]:
    b = np.asarray(bits).astype(np.uint8)
    n_bits = b.shape[1]
    width = -(-n_bits // 4)
    padded = np.zeros((b.shape[0], width * 4), dtype=np.uint8)
    padded[:, :n_bits] = b
    nibbles = padded.reshape(b.shape[0], width, 4) @ np.array([1, 2, 4, 8], dtype=np.uint8)  # bit i -> 2^i
    digits = np.array(list("0123456789abcdef"))
    return ["".join(digits[row[::-1]]) for row in nibbles]


def simulate(path: str | Path, inputs: np.ndarray, timeout_s: float = 600.0) -> SimulationResult:
    """Compile the exported module + testbench with iverilog and run it on ``inputs`` with vvp.

    Parameters
    ----------
    path : the ``.v`` module written by :func:`export_verilog` (its ``_tb.v`` and ``.json`` beside it).
    inputs : (n_vectors, in_bits) thermometer bits (bool or 0/1).

    Returns
    -------
    SimulationResult with popcounts (n_vectors, act_dim) int64 and the measured latency in cycles.
    """
    require_tool("iverilog", apt="iverilog")
    require_tool("vvp", apt="iverilog")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    path = Path(path)
    if not path.with_suffix(".json").is_file():
        raise ValueError(f"path: {str(path)!r} is not a module written by export_verilog (no .json beside it)")
    meta = json.loads(path.with_suffix(".json").read_text())
    bits = np.asarray(inputs)
    if bits.ndim != 2 or bits.shape[1] != meta["in_bits"] or bits.shape[0] < 1:
        raise ValueError(f"inputs must have shape (n_vectors >= 1, {meta['in_bits']}), got {bits.shape}")
    if not np.isin(bits, (0, 1)).all():
        raise ValueError("inputs must be bits (0/1 or bool)")
    tb = path.with_name(meta["testbench"])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "vectors.hex").write_text("\n".join(_bits_to_hex(bits)) + "\n")
        subprocess.run(["iverilog", "-g2005", "-o", str(work / "sim.vvp"), "-s", f"{meta['module']}_tb",
                        str(path.resolve()), str(tb.resolve())], check=True, capture_output=True, text=True,
                       timeout=timeout_s)
        subprocess.run(["vvp", "-n", "sim.vvp"], cwd=work, check=True, capture_output=True, text=True,
                       timeout=timeout_s)
        lines = (work / "popcounts.txt").read_text().strip().splitlines()
    latency = int(lines[-1].split()[1])
    pops = np.array([[int(v) for v in ln.split()] for ln in lines[:-1]], dtype=np.int64)
    if pops.shape != (bits.shape[0], meta["act_dim"]):
        raise RuntimeError(f"simulation returned {pops.shape} popcounts for {bits.shape[0]} vectors")
    return SimulationResult(pops, latency)


def synth_stats(path: str | Path, timeout_s: float = 600.0) -> dict[str, int]:
    """LUT count and logic depth of the module from ``yosys synth -lut 6`` (generic 6-LUT mapping).

    Returns ``{"luts": ..., "flipflops": ..., "depth": ...}``. The counts are read from one ``stat -json``
    report of the synthesised design (``synth`` prints its own stat block too: summing the text log counted
    every cell twice). Depth is yosys' longest topological path in LUT cells between registers/ports
    (``ltp -noff``).
    """
    require_tool("yosys", apt="yosys")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: {str(path)!r} is not a Verilog file")
    with tempfile.TemporaryDirectory() as tmp:
        stat_json = Path(tmp) / "stat.json"
        script = (f"read_verilog {path.resolve()}; synth -top {MODULE} -lut 6; "
                  f"tee -q -o {stat_json} stat -json; select -clear; ltp -noff")
        out = subprocess.run(["yosys", "-q", "-p", script, "-l", "/dev/stdout"], capture_output=True, text=True,
                             timeout=timeout_s, check=True).stdout
        report = json.loads(stat_json.read_text())
    cells = report["design"]["num_cells_by_type"]
    luts = int(sum(int(v) for k, v in cells.items() if k == "$lut"))
    ffs = int(sum(int(v) for k, v in cells.items() if re.fullmatch(r"\$_?s?dff\w*", k, flags=re.I)))
    m = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", out)
    return {"luts": luts, "flipflops": ffs, "depth": int(m[-1]) if m else -1}
