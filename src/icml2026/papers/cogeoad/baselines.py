"""The methods CoGeoAD is compared with, and its ablations, as configurations of one implementation.

Every variant shares the renderer, the frozen encoder, the lifting to points and the training loop of
:class:`~.method.CoGeoAD`; they differ only where the paper's baselines differ:

========================  ==========  =========  ===========  ==========  ========
variant                   streams     views      view fusion  layers      prompts
========================  ==========  =========  ===========  ==========  ========
CoGeoAD (full)            co + geo    20         MVA          selector    learned
colour-only               co          20         MVA          selector    learned
geometry-only             geo         20         MVA          selector    learned
no MVA                    co + geo    20         uniform      selector    learned
no MS-CGF (last layer)    co + geo    20         MVA          last        learned
concatenation fusion      concat      20         MVA          selector    learned
PointAD-style             geo         9          uniform      mean        learned
CLIP+Render               geo         20         uniform      last        fixed
========================  ==========  =========  ===========  ==========  ========

With a CLIP encoder (``--set encoder=PATH``) every variant takes ``prompts="text"``: the text tower's
zero-shot prompt ensembles replace the learned (and the fixed) prototypes.
"""

from __future__ import annotations

from typing import Any

from .backbone import ImageEncoder
from .method import CoGeoAD
from .render import POINTAD_VIEWS

__all__ = ["VARIANTS", "make_variant", "clip_render", "pointad", "colour_only", "geometry_only", "concat_fusion"]

VARIANTS = ("cogeoad", "colour_only", "geometry_only", "no_mva", "last_layer", "concat", "pointad", "clip_render")


def clip_render(encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    """CLIP+Render: frozen encoder, fixed (training-free) prompts, last layer, mean over views.

    ``prompts="text"`` (a CLIP encoder) gives the baseline's own hand-written prompts through the text tower.
    """
    kw.setdefault("prompts", "fixed")
    return CoGeoAD(encoder, streams=("geometry",), view_attention="uniform", layers="last", **kw)


def pointad(encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    """PointAD-style: geometry renders only, 9 views, uniform view averaging, learnable prompts, multi-layer."""
    return CoGeoAD(encoder, streams=("geometry",), views=POINTAD_VIEWS, view_attention="uniform", layers="mean", **kw)


def colour_only(encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    return CoGeoAD(encoder, streams=("colour",), **kw)


def geometry_only(encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    return CoGeoAD(encoder, streams=("geometry",), **kw)


def concat_fusion(encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    """Colour and geometry tokens concatenated before the prompt similarity (one stream)."""
    return CoGeoAD(encoder, streams=("concat",), **kw)


def make_variant(name: str, encoder: ImageEncoder, **kw: Any) -> CoGeoAD:
    """The detector called ``name`` (one of :data:`VARIANTS`); ``kw`` go to :class:`CoGeoAD`."""
    if name == "cogeoad":
        return CoGeoAD(encoder, **kw)
    if name == "no_mva":
        return CoGeoAD(encoder, view_attention="uniform", **kw)
    if name == "last_layer":
        return CoGeoAD(encoder, layers="last", **kw)
    table = {
        "colour_only": colour_only,
        "geometry_only": geometry_only,
        "concat": concat_fusion,
        "pointad": pointad,
        "clip_render": clip_render,
    }
    if name not in table:
        raise ValueError(f"name = {name!r}: must be one of {VARIANTS}")
    return table[name](encoder, **kw)
