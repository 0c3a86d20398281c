"""Skip the paper's tests when its extra (torch, transformers, highway-env) is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("highway_env")
