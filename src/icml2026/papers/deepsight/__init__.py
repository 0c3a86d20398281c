"""DeepSight: long-horizon world modelling via latent-state prediction for end-to-end driving.

"DeepSight: Long-Horizon World Modeling via Latent States Prediction for End-to-End Autonomous Driving",
ICML 2026, arXiv:2605.10564; official code: github.com/hotdogcheesewhite/DeepSight (reference only). A CPU
reconstruction in the real highway-env simulator: an IDM + MOBIL expert, numpy BEV rasters warped into the
current ego frame, a frozen tiny DINOv3 ViT pre-trained here as the latent target encoder, a Qwen2 decoder
(transformers, from a config) that predicts the latents of five future BEV frames in one forward pass, then
an adaptive chain of thought and the waypoints, driven closed loop through the official PID.

Symbols (paper / brief -> code)
-------------------------------
T, P, R                   ``PlannerConfig.n_frames`` (5), ``patches`` (16; paper 256), ``registers`` (2; paper 4)
<|bev_token_k|>           rows ``N_TEXT + k`` of the decoder's embedding (:meth:`DeepSightPlanner.bev_ids`)
vis_head                  ``DeepSightPlanner.vis_head`` (Linear d -> d_enc, no bias)
DINOv3(BEV_future)        :class:`BEVEncoder` ``.latents`` on :func:`future_bev` frames (registers removed)
L = CE + 2 MSE            :meth:`DeepSightPlanner.losses` (+ L1 on the waypoint head, our simplification)
<CoT_flag_*>, <think>     :func:`think_tokens`, :func:`annotate` (rule-based annotator)
PID (turn, speed)         :class:`PIDController`; closed loop :func:`closed_loop` -> :class:`ClosedLoopResult`
official crop              :func:`ego_row` (365 of 512 px ahead of the ego); DINOv3 preprocessing
                          :class:`PretrainedBEVEncoder` (resize + ImageNet normalisation)
user backbones            ``PlannerConfig.backbone_path`` (``--set planner=PATH``), :func:`load_bev_encoder`
                          (``--set encoder=PATH``)
DS                        :func:`ds_analogue` = progress ratio x 0.5^collisions x 0.7^off-road
"""

from .closed_loop import PID, ClosedLoopResult, PIDController, bootstrap_ci, closed_loop, ds_analogue, eval_event
from .data import (
    HORIZONS,
    Annotation,
    CacheError,
    Episode,
    annotate,
    cached_episodes,
    collect_episodes,
    ego_row,
    ego_state,
    future_bev,
    future_waypoints,
    kinematics_obs,
    load_episodes,
    rasterize_bev,
    save_episodes,
    simulate_episode,
)
from .method import (
    VARIANTS,
    VOCAB,
    BEVEncoder,
    DeepSightPlanner,
    Plan,
    PlannerBatch,
    PlannerConfig,
    constant_velocity_waypoints,
    think_tokens,
)
from .structure import count_backbone_calls, straight_drive_episode, warp_displacements
from .training import (
    OpenLoop,
    PretrainedBEVEncoder,
    SampleSet,
    build_planner,
    build_samples,
    encode_targets,
    load_bev_encoder,
    open_loop_eval,
    pretrain_encoder,
    train_planner,
)

__all__ = [
    "HORIZONS",
    "Annotation",
    "CacheError",
    "Episode",
    "annotate",
    "cached_episodes",
    "collect_episodes",
    "ego_state",
    "future_bev",
    "future_waypoints",
    "kinematics_obs",
    "load_episodes",
    "rasterize_bev",
    "save_episodes",
    "simulate_episode",
    "VARIANTS",
    "VOCAB",
    "BEVEncoder",
    "DeepSightPlanner",
    "Plan",
    "PlannerBatch",
    "PlannerConfig",
    "think_tokens",
    "constant_velocity_waypoints",
    "PretrainedBEVEncoder",
    "load_bev_encoder",
    "ego_row",
    "PID",
    "PIDController",
    "ClosedLoopResult",
    "closed_loop",
    "ds_analogue",
    "eval_event",
    "bootstrap_ci",
    "count_backbone_calls",
    "straight_drive_episode",
    "warp_displacements",
    "OpenLoop",
    "SampleSet",
    "build_planner",
    "build_samples",
    "encode_targets",
    "open_loop_eval",
    "pretrain_encoder",
    "train_planner",
]

from icml2026.core.validate import check_public_api as _check_public_api  # noqa: E402

_check_public_api(globals())
