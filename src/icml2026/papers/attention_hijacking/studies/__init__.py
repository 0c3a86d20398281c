"""The bodies of attention_hijacking's experiments (registered in :mod:`..experiments`), one module per claim.

- :mod:`.attacks`: ``anchor`` ('film'), ``noise`` ('cf'), ``functional`` ('also'): criteria 2-4, the real-data
  baselines, STRIP and ONION; the per-trigger attack grid and the checks of criteria 2-4 that the others reuse;
- :mod:`.base_dd`: ``base_dd``, criterion 1 (the base method on clean data);
- :mod:`.ablation`: ``ablation``, AH without L_hijack and without L_seg;
- :mod:`.scale`: ``scale``, criterion 5 on MiniLM-L6;
- :mod:`.tweets`: ``tweets``, the second domain;
- :mod:`.grid`: ``grid``, the brief's full grid in one run.

What they share (the config, the encoders, the data, the job runner, the controls, the aggregation over seeds)
is in :mod:`._common`.
"""

from . import ablation, attacks, base_dd, grid, scale, tweets
from ._common import AHConfig
from .base_dd import BaseDDConfig
from .grid import GridConfig

__all__ = ["AHConfig", "BaseDDConfig", "GridConfig", "ablation", "attacks", "base_dd", "grid", "scale", "tweets"]
