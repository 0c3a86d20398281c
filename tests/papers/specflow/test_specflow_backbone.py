"""The workspace on a real language backbone (issue 63): any Hugging Face causal LM from a local folder, read
through ``icml2026.core.loaders``, with the DCT workspace entering as projected input embeddings after the text.
The tests save a tiny Llama and a word-level tokenizer with ``save_pretrained`` and load them back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from icml2026.cli import main  # noqa: E402
from icml2026.papers.specflow.data import FrozenLakeMaps  # noqa: E402
from icml2026.papers.specflow.reasoners import (  # noqa: E402
    ACTION_WORDS,
    TASK_PROMPT,
    SpecFlowReasoner,
    load_backbone_policy,
)
from icml2026.papers.specflow.training import expert_episodes, train_policy  # noqa: E402


def save_tiny_causal_lm(folder: Path) -> Path:
    """A 1-layer Llama (hidden 16) and a word-level tokenizer over the task's words, as ``save_pretrained`` writes."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = ["[UNK]", "[PAD]", *dict.fromkeys(TASK_PROMPT.split() + list(ACTION_WORDS))]
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    cfg = transformers.LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_backbone_policy_trains_one_step_and_solves_one_map(tmp_path: Path) -> None:
    folder = save_tiny_causal_lm(tmp_path / "tiny")
    g = torch.Generator().manual_seed(0)
    policy = load_backbone_policy(str(folder), 16, 4, g)
    assert policy.d_model == 16 and policy.n_layers == 1
    # the action tokens start as the LM's own word embeddings
    lm_table = policy.lm.get_input_embeddings().weight
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    up_id = tok("up", add_special_tokens=False)["input_ids"]
    torch.testing.assert_close(policy.action.weight[0], lm_table[up_id].mean(0))
    maps = FrozenLakeMaps(size=4, max_depth=6).batch(4, np.random.default_rng(0))
    before = {k: v.clone() for k, v in policy.lm.state_dict().items()}
    losses = train_policy(policy, "specflow", expert_episodes(maps), 1, 8, 1e-3, g, tokens_per_thought=4)
    assert len(losses) == 1 and np.isfinite(losses[0])
    changed = [k for k, v in policy.lm.state_dict().items() if not torch.equal(v, before[k])]
    assert changed, "one optimiser step must move the backbone's own weights"
    m, moves = maps[0]
    ep = SpecFlowReasoner(policy, None).solve(m, np.random.default_rng(1), len(moves))
    assert ep.actions or ep.context  # a rollout ran: at least one read of the workspace
    assert {tuple(s) for s in ep.workspace_shape} == {(1, 4, 16)}  # fixed-size workspace on the backbone too


def test_backbone_in_bfloat16_returns_float32_hidden_states(tmp_path: Path) -> None:
    folder = save_tiny_causal_lm(tmp_path / "tiny")
    policy = load_backbone_policy(str(folder), 16, 4, torch.Generator().manual_seed(0), dtype="bfloat16")
    assert next(policy.lm.parameters()).dtype == torch.bfloat16
    emb = torch.zeros(1, 3, 16)
    assert policy(emb).dtype == torch.float32


def test_cli_runs_the_headline_on_a_local_checkpoint(tmp_path: Path) -> None:
    """``--set model=PATH``: every policy of the run is the local checkpoint, trained one step, one test map."""
    folder = save_tiny_causal_lm(tmp_path / "tiny")
    code = main(["run", "specflow.headline", "--preset", "smoke", "--set", f"model={folder}", "--set",
                 "policy_steps=1", "--set", "n_test=1", "--set", "n_denoiser_maps=1", "--out", str(tmp_path / "runs"),
                 "--threads", "1"])
    assert code in (0, 1, 4)
    (res,) = (tmp_path / "runs" / "specflow.headline").glob("smoke-seed0-*/results.json")
    results = json.loads(res.read_text())
    assert results["config"]["model"] == str(folder)
    assert "specflow_exact_success" in results["metrics"] and "policy_loss_specflow" in results["metrics"]


@pytest.mark.parametrize("bad", ["", "no/such/folder"])
def test_a_bad_model_path_is_refused_naming_the_key(tmp_path: Path, bad: str, capsys: pytest.CaptureFixture) -> None:
    if not bad:  # '' is the default (a Llama built from the config), so refuse a folder without a model instead
        bad = str(tmp_path)
    code = main(["run", "specflow.headline", "--preset", "smoke", "--set", f"model={bad}", "--out",
                 str(tmp_path / "runs")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "model" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("results.json"))
