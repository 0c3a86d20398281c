"""The Flower app on the current Message API (ServerApp / ClientApp): its server loop and client handlers,
delivered in process, give the in-process simulator's accuracies, structure and uploads on the same seed."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("transformers")

RUN_CONFIG = {"preset": "smoke", "seed": 3, "n-train": 40, "n-test": 30, "local-steps": 3, "rounds": 3}


def test_flower_app_equals_the_simulator_on_the_same_seed() -> None:
    # acceptance (issue 62): the same seed gives the same accuracies through the simulator and through Flower
    from icml2026.papers.fedtreelora import simulate
    from icml2026.papers.fedtreelora.flower_app import STRATEGIES, build_federation, run_in_process

    fed = build_federation(RUN_CONFIG)
    app = run_in_process(RUN_CONFIG, fed)
    sim = simulate(
        STRATEGIES["FedTreeLoRA"](fed.cfg),
        fed.clients,
        fed.cfg.rounds,
        np.random.default_rng(fed.sim_seed),
        backbone=fed.backbone,
        train=fed.train,
    )
    assert sorted(app.acc) == sim.eval_rounds == [1, 2, 3]
    for i, rnd in enumerate(sim.eval_rounds):
        np.testing.assert_array_equal(app.acc[rnd], sim.acc[i])
    assert app.structure is not None and app.structure.cuts == sim.cuts
    for a, b in zip(app.structure.partitions, sim.structure.partitions, strict=True):
        assert np.array_equal(a, b)
    # every round each client uploads its whole cluster expert (A and B), the simulator's byte count
    assert all(np.array_equal(app.bytes_up[r], sim.bytes_up[r - 1]) for r in (1, 2, 3))


def test_flower_app_refuses_an_unknown_strategy() -> None:
    from icml2026.papers.fedtreelora.flower_app import build_federation

    with pytest.raises(ValueError, match="^strategy = 'FedAvg'"):
        build_federation({**RUN_CONFIG, "strategy": "FedAvg"})


@pytest.mark.slow
def test_headline_engine_flower_gives_the_simulators_numbers() -> None:
    # acceptance (issue 62): `--set engine=flower` runs the headline through the Flower app (ServerApp /
    # ClientApp messages, one client model per node); on the same seed every accuracy, the tree, the cuts and
    # the lambdas equal the batched simulator's. Only the download bytes differ (the app's messages carry both
    # experts of every layer; the simulator counts what the method needs to send).
    import dataclasses

    from icml2026.core import make_rng
    from icml2026.core.registry import get_experiment, import_paper

    import_paper("fedtreelora")
    exp = get_experiment("fedtreelora.headline")
    cfg = dataclasses.replace(exp.config("smoke"), rounds=3, warmup=2, n_train=16, n_test=12)
    sim = exp(cfg, make_rng(5))
    flw = exp(dataclasses.replace(cfg, engine="flower"), make_rng(5))
    differ = {k for k in sim.metrics if sim.metrics[k] != flw.metrics[k]}
    assert differ <= {"download_ratio_vs_fedit"}
    accs = [k for k in sim.metrics if k.startswith("acc_")]
    assert len(accs) >= 5 and all(sim.metrics[k] == flw.metrics[k] for k in accs)
    assert sim.tables["tree"] == flw.tables["tree"]
    assert [c.value for c in sim.checks] == [c.value for c in flw.checks]


def test_engine_must_be_simulator_or_flower() -> None:
    from icml2026.papers.fedtreelora.experiments import FedConfig

    with pytest.raises(ValueError, match="engine"):
        FedConfig(engine="ray")
