"""Sponge Tool Attack (STA): stealthy Denial-of-Efficiency against tool-augmented agentic reasoning.

"Sponge Tool Attack: Stealthy Denial-of-Efficiency against Tool-Augmented Agentic Reasoning", Qi Li and
Xinchao Wang, arXiv:2601.17566 (2026). No official code is known; this is a reconstruction from the brief:
the agent runtime, the twelve offline tools, the attack loop with its three roles and two memories, the
metrics and the defence are implemented in full; the victims of the CPU experiments are simulated agents
(see README.md), so the runs validate the mechanics, not the phenomenon on real LLMs.

Symbols (paper / brief -> code)
-------------------------------
x, x'                    original query, rewrite (:class:`Rewrite` ``.text``)
T_max                    ``ToolAgent(max_steps=...)``; ``Trajectory.cap_hit``
R, J, I                  :class:`TemplateRewriter` / :class:`LLMRewriter`, :class:`EmbeddingJudge` /
                         :class:`LLMJudge`, :class:`BanditInductor` / :class:`LLMInductor`
Policy Bank, History     :class:`PolicyBank`, :class:`HistoryBuffer`
tau_sem                  ``EmbeddingJudge(tau_sem=0.80)`` on MiniLM cosine
r                        :func:`reward`: steps(x') - steps(x) if the answers agree, else -1
Delta steps, cap hit     :func:`paired_metrics` (bootstrap intervals); steps are executed tool calls,
                         failed turns are reported apart (``Trajectory.n_errors``)
victim at an endpoint    :func:`open_endpoint` (``victim_url`` / ``model=PATH`` / :class:`SimChatModel`)
"""

from .agent import (
    FinalAnswer,
    Planner,
    ScriptedBackend,
    Step,
    ToolAgent,
    ToolCall,
    ToolCallError,
    Trajectory,
    chat_messages,
    count_tokens,
    extract_json_object,
    parse_native_call,
    parse_tool_call,
    system_prompt,
    tool_schemas,
)
from .attack import (
    OPERATORS,
    AttackLog,
    Attempt,
    BanditInductor,
    EmbeddingJudge,
    HistoryBuffer,
    LLMInductor,
    LLMJudge,
    LLMRewriter,
    Policy,
    PolicyBank,
    Rewrite,
    STAAttacker,
    TemplateRewriter,
    Verdict,
    extract_facts,
    merge_policies,
    preserves_facts,
    reward,
    seed_policies,
)
from .baselines import STATIC_SPONGE, clean_rewrite, naive_paraphrase, static_sponge
from .controls_plant import PAPER_CAP_INCREASE, PAPER_DELTA_STEPS, PlantedPlanner, planted_extras
from .data import DOMAINS, KnowledgeBase, Task, make_knowledge_base, make_tasks, split_tasks
from .defense import StepAnomalyDetector
from .embed import SentenceEncoder, split_sentences
from .endpoint import SimChatModel, open_endpoint, steps_from_messages
from .metrics import PairedMetrics, bootstrap_ci, is_correct, paired_metrics
from .sandbox import SandboxViolation, check_code, run_sandboxed
from .sim import SimAgent, core_plan
from .tools import Tool, default_tools, safe_arithmetic

__all__ = [
    "DOMAINS",
    "OPERATORS",
    "PAPER_CAP_INCREASE",
    "PAPER_DELTA_STEPS",
    "STATIC_SPONGE",
    "AttackLog",
    "Attempt",
    "BanditInductor",
    "EmbeddingJudge",
    "FinalAnswer",
    "HistoryBuffer",
    "KnowledgeBase",
    "LLMInductor",
    "LLMJudge",
    "LLMRewriter",
    "PairedMetrics",
    "Planner",
    "PlantedPlanner",
    "Policy",
    "PolicyBank",
    "Rewrite",
    "STAAttacker",
    "SandboxViolation",
    "ScriptedBackend",
    "SentenceEncoder",
    "SimAgent",
    "SimChatModel",
    "Step",
    "StepAnomalyDetector",
    "Task",
    "TemplateRewriter",
    "Tool",
    "ToolAgent",
    "ToolCall",
    "ToolCallError",
    "Trajectory",
    "Verdict",
    "bootstrap_ci",
    "chat_messages",
    "check_code",
    "clean_rewrite",
    "core_plan",
    "count_tokens",
    "default_tools",
    "extract_facts",
    "extract_json_object",
    "is_correct",
    "make_knowledge_base",
    "make_tasks",
    "merge_policies",
    "naive_paraphrase",
    "open_endpoint",
    "paired_metrics",
    "parse_native_call",
    "parse_tool_call",
    "planted_extras",
    "preserves_facts",
    "reward",
    "run_sandboxed",
    "safe_arithmetic",
    "seed_policies",
    "split_sentences",
    "split_tasks",
    "static_sponge",
    "steps_from_messages",
    "system_prompt",
    "tool_schemas",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
