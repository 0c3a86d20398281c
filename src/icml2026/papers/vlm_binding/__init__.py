"""Seeing to Generalize: How Visual Data Corrects Binding Shortcuts.

N. Buzeta, F. del Rio, C. Hinostroza, D. Parra, H. Lobel, R. Toro Icarte, ICML 2026, arXiv:2602.15183
(https://arxiv.org/abs/2602.15183). No official code is public. A CPU-scale reimplementation of the
controlled Indirect Retrieval study: a Hugging Face GPT-2 (learned absolute positions) trained on text,
image-tokenized and noise-text prompts, with interchange interventions, attention knockout and probes.

Symbols (paper/brief -> code)
-----------------------------
C, S, I, V_noise        ``Vocab.n_colours``, ``.n_shapes``, ``.n_items``, ``.n_noise``
N, (c_j, s_j), pi       ``RetrievalSample.n_objects``, ``.objects[j]``, order of ``.associations``
c_q, i*                 ``RetrievalSample.query_colour``, ``.answer``; slot of c_q ``.query_slot``
x, x', c', p'           ``base``, ``counterfactual`` (:func:`counterfactual_sample`), its query colour and slot
frozen encoder, proj.   :class:`CellEncoder` (64 image tokens), ``BindingLM.projector``
M_text-only ... M_noise-image-text   :data:`REGIMES`, :func:`train_regimes`
S1, S2, S3              ``Schedule.s1``, ``.s2``, ``.s3`` (stage steps)
Sym/Pos ratio           :func:`sym_pos_ratio` of :func:`interchange_fractions`
"""

from .baselines import train_text_long, train_text_only
from .data import (
    N_IMAGE_TOKENS,
    Batch,
    RetrievalSample,
    Vocab,
    counterfactual_sample,
    encode_prompt,
    image_batch,
    noise_text_batch,
    render_scene,
    sample_task,
    text_batch,
    text_prompt,
)
from .mechanism import (
    OUTCOMES,
    InterchangeResult,
    ProbeResult,
    attention_knockout,
    classify_patched,
    final_residuals,
    interchange_fractions,
    interchange_intervention,
    knockout_profile,
    probe_layers,
    sym_pos_ratio,
)
from .model import BindingLM, CellEncoder, EncoderReport, pretrain_encoder
from .regimes import REGIMES, Schedule, Stage, train_regimes
from .train import Trainer, accuracy, accuracy_per_n, make_batch, sample_batch

__all__ = [
    "N_IMAGE_TOKENS",
    "OUTCOMES",
    "REGIMES",
    "Batch",
    "BindingLM",
    "CellEncoder",
    "EncoderReport",
    "InterchangeResult",
    "ProbeResult",
    "RetrievalSample",
    "Schedule",
    "Stage",
    "Trainer",
    "Vocab",
    "accuracy",
    "accuracy_per_n",
    "attention_knockout",
    "classify_patched",
    "counterfactual_sample",
    "encode_prompt",
    "final_residuals",
    "image_batch",
    "interchange_fractions",
    "interchange_intervention",
    "knockout_profile",
    "make_batch",
    "noise_text_batch",
    "pretrain_encoder",
    "probe_layers",
    "render_scene",
    "sample_batch",
    "sample_task",
    "sym_pos_ratio",
    "text_batch",
    "text_prompt",
    "train_regimes",
    "train_text_long",
    "train_text_only",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
