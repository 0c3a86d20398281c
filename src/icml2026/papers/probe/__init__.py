"""PROBE: steer a diffusion generator with the detector as critic to harvest hard realistic fakes.

"Where Detectors Fail: Probing Generative Space for Generalizable AI-Generated Image Detection" (PROBE =
Probing Robustness via Boundary Exploration), Z. Cao, W. Tu, Y. Xiao, W. Deng, W. Chen, L. Lin, P. Wei,
ICML 2026 (arXiv id not found). Official code: Amamiya-C/PROBE-AIGI-Detection (evaluation scripts and
detector definitions only; its Stage 1 and Stage 2 are announced but not released), so the method here is partly
reconstructed from the paper's text and figures (see README.md).

Symbols (paper / brief -> code)
-------------------------------
D_theta                     :class:`Detector` (``net_`` logit; label 1 = fake)
G_phi, phi                  the seen :class:`DiffusionGenerator` (``UNet2DModel`` + DDIM), ``generator.unet``
Delta-phi                   ``peft`` LoRA adapters on a copy of the UNet (:func:`add_lora`)
L_probe                     softplus(D_theta(x_0)) = BCE(D(x_0), real)
L_prec, lambda              per-pixel distance to the base sample at the same x_T (:func:`prec_loss`, + mu ||B||^2);
                            ``ProbeConfig.lam``
realism                     Frechet distance in a trained real-vs-noise feature space (:class:`RealismSpace`)
SD / ResNet-50 / DINOv2     :class:`StableDiffusionGenerator`, :class:`PretrainedDetector`, :func:`load_image_folder`
K                           ``ProbeConfig.grad_steps`` (truncated backprop through the last K DDIM steps)
B (sample buffer)           ``ProbeResult.buffer``
Stage 1 / Stage 2           :func:`probe_generator` / :func:`refine_detector`
bAcc                        :func:`balanced_accuracy`
B0 ... B5                   detector as trained; :func:`extra_standard_samples`, :func:`pgd_fakes`,
                            :func:`cnnspot_augment`, :func:`random_lora_buffer`, :func:`latent_steer_buffer`
"""

from .baselines import (
    LatentSteerResult,
    cnnspot_augment,
    extra_standard_samples,
    latent_steer_buffer,
    pgd_fakes,
    random_lora_buffer,
)
from .data import digit_images, load_reals, real_crops
from .detector import Detector, balanced_accuracy, frechet_distance
from .generators import (
    AEReconstructor,
    DCGANGenerator,
    DiffusionGenerator,
    PCAGaussianGenerator,
    VAEGenerator,
    seen_unet,
    unseen_unet,
)
from .method import (
    LORA_TARGETS,
    ProbeConfig,
    ProbeResult,
    RefineConfig,
    add_lora,
    lora_delta_norm,
    lora_parameters,
    prec_loss,
    probe_generator,
    random_lora,
    refine_detector,
)
from .real_parts import PretrainedDetector, StableDiffusionGenerator, load_image_folder
from .realism import SEEN_BAR, RealismSpace, matched_noise

__all__ = [
    "LORA_TARGETS",
    "AEReconstructor",
    "DCGANGenerator",
    "Detector",
    "DiffusionGenerator",
    "LatentSteerResult",
    "PCAGaussianGenerator",
    "ProbeConfig",
    "ProbeResult",
    "RefineConfig",
    "VAEGenerator",
    "add_lora",
    "balanced_accuracy",
    "cnnspot_augment",
    "digit_images",
    "extra_standard_samples",
    "frechet_distance",
    "latent_steer_buffer",
    "load_reals",
    "lora_delta_norm",
    "lora_parameters",
    "pgd_fakes",
    "probe_generator",
    "random_lora",
    "random_lora_buffer",
    "real_crops",
    "RealismSpace",
    "SEEN_BAR",
    "matched_noise",
    "PretrainedDetector",
    "StableDiffusionGenerator",
    "load_image_folder",
    "prec_loss",
    "refine_detector",
    "seen_unet",
    "unseen_unet",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
