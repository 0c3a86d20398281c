"""STRIDE: Post-Training LLMs to Reason and Refine Bio-Sequences via Edit Trajectories.

D. Zhang, S. Zhang, S. He, Y. Zhang, S. A. Rizvi, D. van Dijk, ICML 2026, arXiv:2603.03573. Official code:
github.com/daiheng-zhang/STRIDE (reference only; nothing copied). CPU-scale reproduction: see README.md.

Symbols (paper -> code)
-----------------------
a_t = (op, p, v)              :class:`Edit` (``op``, ``pos``, ``old``, ``new``; dynamic 0-based indices)
T* (shortest trajectory)      :func:`shortest_edit_script` (Levenshtein DP + backtrace, Sec. 3.2)
execute(x_src, T)             :func:`apply_script` (raises :class:`UnexecutableEdit`)
textual trajectory            :func:`render` / :func:`parse`; completions :func:`render_completion` /
                              :func:`parse_completion`
consistency gate + reward     :func:`completion_reward`
f (protein oracle)            :class:`ProteinOracle` (``.score(seq)``); R: :func:`protein_reward`
chem_reward                   :func:`molecule_reward` (parts: :func:`score_molecule_edit`)
pi_theta, pi_ref, pi_old      a Hugging Face causal LM (:func:`build_policy`, :func:`load_policy`); :func:`rl_train`
                              keeps pi_old detached and pi_ref as the LoRA adapter switched off
                              (:class:`AdapterDisabled`) or a frozen copy
tokenizer / text format       :meth:`EditVocab.tokenizer` (word-level), :class:`EditCodec` (any HF tokenizer)
Stage 0 (ours, not the paper) :func:`pretrain_edit_lm` (generic edit pretraining of the tiny model)
A_i, rho_{i,t}, s_i           :func:`group_advantages`, :func:`grpo_loss`, :func:`gspo_loss`
eps, eps_low, eps_high, beta  :class:`RLConfig` (``eps``, ``eps_low``, ``eps_high``, ``beta``)
G                             ``RLConfig.group_size``
"""

from .baselines import direct_sft_data, random_perturbation, trajectory_sft_data
from .data import (
    MoleculeExample,
    MoleculeTask,
    ProteinTask,
    calibrate_sigma,
    make_molecule_task,
    make_molecules,
    make_protein_task,
)
from .edits import (
    Edit,
    UnexecutableEdit,
    apply_script,
    bridge_script,
    edit_distance,
    parse,
    parse_completion,
    random_edits,
    render,
    render_completion,
    shortest_edit_script,
    tokenize_smiles,
)
from .evaluate import executed_output, molecule_metrics, protein_metrics
from .policy import (
    AdapterDisabled,
    EditCodec,
    EditVocab,
    PolicyConfig,
    SFTConfig,
    build_policy,
    completion_logprobs,
    load_policy,
    sample,
    save_policy,
    sft_train,
)
from .pretrain import PretrainConfig, pretrain_edit_lm, shared_vocab, teacher_forced_exact
from .rewards import (
    AMINO_ACIDS,
    INSTRUCTIONS,
    STRICT_THRESHOLDS,
    ProteinOracle,
    completion_reward,
    molecule_props,
    molecule_reward,
    protein_reward,
    score_molecule_edit,
    tanimoto,
)
from .rl import RLConfig, RLHistory, group_advantages, grpo_loss, gspo_loss, rl_train

__all__ = [
    "AMINO_ACIDS",
    "AdapterDisabled",
    "EditCodec",
    "PretrainConfig",
    "pretrain_edit_lm",
    "shared_vocab",
    "teacher_forced_exact",
    "Edit",
    "EditVocab",
    "INSTRUCTIONS",
    "MoleculeExample",
    "MoleculeTask",
    "PolicyConfig",
    "ProteinOracle",
    "ProteinTask",
    "RLConfig",
    "RLHistory",
    "SFTConfig",
    "STRICT_THRESHOLDS",
    "UnexecutableEdit",
    "apply_script",
    "bridge_script",
    "build_policy",
    "calibrate_sigma",
    "completion_logprobs",
    "completion_reward",
    "direct_sft_data",
    "edit_distance",
    "executed_output",
    "group_advantages",
    "grpo_loss",
    "gspo_loss",
    "load_policy",
    "make_molecule_task",
    "make_molecules",
    "make_protein_task",
    "molecule_metrics",
    "molecule_props",
    "molecule_reward",
    "parse",
    "parse_completion",
    "protein_metrics",
    "protein_reward",
    "random_edits",
    "random_perturbation",
    "render",
    "render_completion",
    "rl_train",
    "sample",
    "save_policy",
    "score_molecule_edit",
    "sft_train",
    "shortest_edit_script",
    "tanimoto",
    "tokenize_smiles",
    "trajectory_sft_data",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
