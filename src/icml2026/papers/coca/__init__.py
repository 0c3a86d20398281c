"""COCA: concept concentration for faithful representation intervention.

"Does Representation Intervention Really Identify Desired Concepts and Elicit Alignment?" (Concept
Concentration, COCA), Yang, Chen, Qin, Liu, Xiao, Zhang, Han; ICML 2026, arXiv:2505.18672.
Official code: tmlr-group/COCA (LLaMA-Factory based, GPU). Part A (erasure theory on synthetic worlds) is
full scale; Part B (COCA on a tiny LM over a synthetic request language) is a reduced-scale toy.

Symbols (paper / brief -> code)
-------------------------------
R, d, n                 ``World.X`` (n, d), ``linear_world`` / ``xor_world`` arguments
C (harmful concept)     ``World.concept``;  Y (benign label): ``World.benign``
g (C = g(Y))            :func:`xor_of_quadrant`
A (mixing)              ``World.mixing``
LEACE r(x)              :class:`LeaceConceptEraser` (package), :func:`leace_reference` (closed form)
QLEACE                  :class:`QuadraticConceptEraser`
lambda (GRL strength)   ``AdversarialEraserConfig.strength``
RI at layer l           :func:`apply_intervention`, :class:`LoReFTIntervention` (R, W, b)
COCA refactoring        :func:`refactor_to_coca`, :func:`parse_coca`
ASR                     fraction of harmful prompts not refused (:func:`keyword_refusal_judge`)
"""

from .data import World, linear_world, xor_of_quadrant, xor_world
from .erasure import (
    AdversarialEraser,
    AdversarialEraserConfig,
    ConceptSignalTest,
    ConceptSignalWarning,
    LeaceConceptEraser,
    QuadraticConceptEraser,
    concept_signal_test,
    leace_reference,
)
from .harness import (
    BiasIntervention,
    CocaParse,
    ErasureIntervention,
    LLMRefusalJudge,
    LoReFTIntervention,
    SafetyExample,
    apply_intervention,
    collect_activations,
    decoder_layers,
    keyword_refusal_judge,
    parse_coca,
    refactor_to_coca,
)
from .probes import Probe, ProbeConfig, fit_probe, probe_accuracy
from .toy import ToyConfig, ToyLanguage, ToyResult, run_toy

__all__ = [
    "AdversarialEraser",
    "AdversarialEraserConfig",
    "BiasIntervention",
    "CocaParse",
    "ConceptSignalTest",
    "ConceptSignalWarning",
    "ErasureIntervention",
    "LLMRefusalJudge",
    "LeaceConceptEraser",
    "LoReFTIntervention",
    "Probe",
    "ProbeConfig",
    "QuadraticConceptEraser",
    "SafetyExample",
    "ToyConfig",
    "ToyLanguage",
    "ToyResult",
    "World",
    "apply_intervention",
    "collect_activations",
    "concept_signal_test",
    "decoder_layers",
    "fit_probe",
    "keyword_refusal_judge",
    "leace_reference",
    "linear_world",
    "parse_coca",
    "probe_accuracy",
    "refactor_to_coca",
    "run_toy",
    "xor_of_quadrant",
    "xor_world",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
