"""A tiny frozen backbone and 6 clients shared by the simulator tests (built once per session, ~2 s)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tiny() -> tuple:  # type: ignore[type-arg]
    from icml2026.papers.fedtreelora import BackboneConfig, make_clients, make_corpus, pretrain_backbone

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    bc = BackboneConfig(n_layers=2, d_model=16, n_heads=2, seq_len=10)
    backbone = pretrain_backbone(make_corpus(64, bc.seq_len, rng), bc, steps=3, batch_size=16, lr=1e-3, rng=rng)
    tasks = ["polarity", "polarity", "register", "register", "domain", "domain"]
    clients = make_clients(tasks, n_train=24, n_test=12, seq_len=bc.seq_len, alpha=0.5, rng=rng)
    return backbone, clients
