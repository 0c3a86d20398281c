"""cogeoad benchmark: render throughput (points x views per second) and scoring time per object, one run.

    python benchmarks/cogeoad.py [--quick]

The baseline for the render is the same z-buffer called once per view (normals re-estimated on every call,
as a per-view renderer without a shared projection pass would); scoring compares CoGeoAD (2 streams, 20 views) with the
PointAD-style variant (1 stream, 9 views) on an untrained tiny encoder (timing only, not quality).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import torch

    from icml2026.papers.cogeoad import (
        DEFAULT_VIEWS,
        CoGeoAD,
        FrozenEncoder,
        TinyViT,
        make_dataset,
        make_object,
        pointad,
        render_views,
    )

    torch.set_num_threads(1)
    n_obj = 3 if args.quick else 10
    objs = [make_object("bagel", np.random.default_rng(i), "dent", n_points=2500) for i in range(n_obj)]
    t = time.perf_counter()
    for o in objs:
        render_views(o, DEFAULT_VIEWS, 64)
    t_all = time.perf_counter() - t
    t = time.perf_counter()
    for o in objs:
        for v in DEFAULT_VIEWS:
            render_views(o, (v,), 64)
    t_each = time.perf_counter() - t
    pv = sum(o.n_points for o in objs) * len(DEFAULT_VIEWS)
    print(
        f"render 20 views at 64 px: {pv / t_all:,.0f} point-views/s (one call per object); "
        f"{pv / t_each:,.0f} point-views/s (one call per view); ratio {t_each / t_all:.2f}x"
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        enc = FrozenEncoder(TinyViT(64, 4, 48, 4, 4, (1, 3, 4)))
    aux = make_dataset(("sphere",), 2, 2, np.random.default_rng(0), n_points=2000)
    times = {}
    for name, model in (("cogeoad", CoGeoAD(enc, n_steps=1)), ("pointad", pointad(enc, n_steps=1))):
        model.fit(aux, np.random.default_rng(1))
        t = time.perf_counter()
        for o in objs:
            model.score(o)
        times[name] = (time.perf_counter() - t) / len(objs)
        print(f"score one object ({name}, render + encode + fuse): {times[name]:.2f} s")
    print(f"ratio cogeoad / pointad scoring time: {times['cogeoad'] / times['pointad']:.2f}x")


if __name__ == "__main__":
    main()
