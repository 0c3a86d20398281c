"""Load what a user brings: one place that reads every paper's ``--set model=PATH``.

==================================  ==================================================================
:func:`check_model_path`            the ``--set model=PATH`` check: the path exists and holds a model of
                                    a kind this module reads; else one line naming the key and the path
:func:`model_kind`                  which kind a path holds (``hf``, ``gguf``, ``timm``, ``open_clip``,
                                    ``diffusers``), or ``None`` with the reason
:func:`load_causal_lm`              ``AutoModelForCausalLM`` + ``AutoTokenizer``, from a Hugging Face
                                    folder or a GGUF file (transformers' ``gguf_file=``)
:func:`load_sequence_classifier`    ``AutoModelForSequenceClassification`` + ``AutoTokenizer``
:func:`load_encoder`                ``AutoModel`` + ``AutoTokenizer``
:func:`load_vision_backbone`        a timm folder (``config.json`` + ``model.safetensors``, written by
                                    :func:`save_vision_backbone`) or an open_clip folder
:func:`save_vision_backbone`        a timm model into a folder, with timm's own ``save_for_hf``
:func:`load_diffusers_pipeline`     ``diffusers.DiffusionPipeline``
:func:`apply_lora`                  LoRA adapters through peft's ``LoraConfig`` / ``get_peft_model``
==================================  ==================================================================

Nothing is downloaded: every Hugging Face call passes ``local_files_only=True``, timm models are built with
``pretrained=False`` and filled from the folder's weights, and open_clip reads its ``local-dir:`` folder.

What a path may hold (:func:`model_kind`):

* ``hf``: a folder with a ``config.json`` naming a ``model_type`` and weights (``model.safetensors``,
  ``pytorch_model.bin`` or their sharded ``*.index.json``), as ``save_pretrained`` writes it;
* ``gguf``: a file starting with the GGUF magic bytes (llama.cpp's format), read by transformers, which
  dequantizes it to the requested dtype (this needs the ``gguf`` package);
* ``timm``: a folder with a ``config.json`` naming a timm ``architecture`` and ``model.safetensors`` (or
  ``pytorch_model.bin``), as timm's ``save_for_hf`` and :func:`save_vision_backbone` write it;
* ``open_clip``: a folder with ``open_clip_config.json`` and ``open_clip_model.safetensors`` (or
  ``open_clip_pytorch_model.bin``), as open_clip's ``save_for_hf`` writes it;
* ``diffusers``: a folder with ``model_index.json``, as ``DiffusionPipeline.save_pretrained`` writes it.

A path that is missing or holds none of these, or a kind the loader does not take, is a :class:`BadInput`
(exit status 2) whose one-line message names the key (``model`` unless told) and the path. A package that
is not installed is a :class:`MissingDependency` (exit status 3) naming the extra that provides it:
``loaders`` (transformers, peft, diffusers, gguf) or ``vision`` (timm, open_clip).

``dtype`` is ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32, torch's default: the
precision every experiment's CPU run uses); ``device`` is a name :func:`icml2026.core.device.resolve_device`
accepts (``cpu``, ``cuda``, ``cuda:<n>``, ``mps``). Every loaded model is returned in eval mode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .device import resolve_device
from .errors import BadInput, one_line, require_module

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "ModelKind",
    "MODEL_KINDS",
    "LoadedModel",
    "VisionBackbone",
    "check_model_path",
    "model_kind",
    "load_causal_lm",
    "load_sequence_classifier",
    "load_encoder",
    "load_vision_backbone",
    "save_vision_backbone",
    "load_diffusers_pipeline",
    "apply_lora",
]

ModelKind = Literal["hf", "gguf", "timm", "open_clip", "diffusers"]
#: Every kind of model this module reads, in the order :func:`model_kind` tells them apart.
MODEL_KINDS: tuple[ModelKind, ...] = ("hf", "gguf", "timm", "open_clip", "diffusers")

_KIND_NAMES: dict[str, str] = {
    "hf": "a Hugging Face folder (config.json and weights)",
    "gguf": "a .gguf file",
    "timm": "a timm folder (config.json naming an architecture, model.safetensors)",
    "open_clip": "an open_clip folder (open_clip_config.json, open_clip_model.safetensors)",
    "diffusers": "a diffusers folder (model_index.json)",
}
_HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
               "pytorch_model.bin.index.json")
_TIMM_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_OPEN_CLIP_WEIGHTS = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
#: The files a Hugging Face tokenizer is read from (any one of them suffices).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                    "spiece.model", "sentencepiece.bpe.model")
#: The first four bytes of every GGUF file (llama.cpp's ``GGUF_MAGIC``).
_GGUF_MAGIC = b"GGUF"
_DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class LoadedModel:
    """A transformers model and its tokenizer, as read from ``path``.

    Attributes
    ----------
    model : the ``transformers.PreTrainedModel``, on the requested device and dtype, in eval mode.
    tokenizer : its ``PreTrainedTokenizerBase``, or ``None`` when loaded with ``load_tokenizer=False``.
    path : the folder or GGUF file it came from.
    kind : ``"hf"`` or ``"gguf"``.
    """

    model: Any
    tokenizer: Any
    path: Path
    kind: ModelKind


@dataclass
class VisionBackbone:
    """An image model read by :func:`load_vision_backbone`.

    Attributes
    ----------
    model : the timm model, or the whole open_clip model (its image tower is ``model.visual``), in eval mode.
    data_config : how images are prepared for it: ``input_size`` ``(channels, height, width)``, ``mean``,
        ``std`` and, where the folder gives them, ``interpolation`` and ``crop_pct``.
    path : the folder it came from.
    kind : ``"timm"`` or ``"open_clip"``.
    tokenizer : open_clip's text tokenizer; ``None`` for timm.
    """

    model: Any
    data_config: dict[str, Any]
    path: Path
    kind: ModelKind
    tokenizer: Any = field(default=None)


# ------------------------------------------------------------------------------------------------ the check
def _read_json(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in ``path``, or ``None`` and why it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path.name} is not readable JSON ({one_line(exc, 120)})"
    if not isinstance(data, dict):
        return None, f"{path.name} holds a JSON {type(data).__name__}, not an object"
    return data, ""


def _first_present(folder: Path, names: Sequence[str]) -> str | None:
    return next((name for name in names if (folder / name).is_file()), None)


def _folder_kind(folder: Path) -> tuple[ModelKind | None, str]:
    if (folder / "model_index.json").is_file():
        index, why = _read_json(folder / "model_index.json")
        if index is None:
            return None, why
        return "diffusers", ""
    if (folder / "open_clip_config.json").is_file():
        config, why = _read_json(folder / "open_clip_config.json")
        if config is None:
            return None, why
        if "model_cfg" not in config:
            return None, "open_clip_config.json has no model_cfg"
        if _first_present(folder, _OPEN_CLIP_WEIGHTS) is None:
            return None, f"an open_clip config but no weights ({' or '.join(_OPEN_CLIP_WEIGHTS)})"
        return "open_clip", ""
    if (folder / "config.json").is_file():
        config, why = _read_json(folder / "config.json")
        if config is None:
            return None, why
        if "model_type" in config:  # transformers' PretrainedConfig.to_dict() always writes it
            if _first_present(folder, _HF_WEIGHTS) is None:
                return None, f"a Hugging Face config.json but no weights ({' or '.join(_HF_WEIGHTS)})"
            return "hf", ""
        if "architecture" in config:  # timm's save_for_hf writes the registry name here
            if _first_present(folder, _TIMM_WEIGHTS) is None:
                return None, f"a timm config.json but no weights ({' or '.join(_TIMM_WEIGHTS)})"
            return "timm", ""
        return None, "config.json names neither a Hugging Face model_type nor a timm architecture"
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if ggufs:
        return None, f"a folder without config.json; give the GGUF file itself (e.g. {ggufs[0]})"
    return None, "a folder without config.json, open_clip_config.json or model_index.json"


def model_kind(path: str | Path) -> tuple[ModelKind | None, str]:
    """Which kind of model ``path`` holds, judged from its files (nothing is imported or loaded).

    Parameters
    ----------
    path : a folder or a file.

    Returns
    -------
    kind : one of :data:`MODEL_KINDS`, or ``None`` when ``path`` holds no model this module reads.
    reason : why it is ``None`` (empty otherwise).
    """
    p = Path(path).expanduser()
    if not p.exists():
        return None, "no such file or folder"
    if p.is_dir():
        return _folder_kind(p)
    try:
        with p.open("rb") as handle:
            magic = handle.read(len(_GGUF_MAGIC))
    except OSError as exc:
        return None, f"cannot be read ({one_line(exc, 120)})"
    if magic == _GGUF_MAGIC:
        return "gguf", ""
    return None, "a file that is not a GGUF model (it does not start with the bytes 'GGUF')"


def _describe(kinds: Sequence[str]) -> str:
    return " or ".join(_KIND_NAMES[k] for k in kinds)


def check_model_path(path: str | Path, *, key: str = "model",
                     kinds: Sequence[ModelKind] = MODEL_KINDS) -> Path:
    """The ``--set model=PATH`` check: ``path`` exists and holds a model of one of ``kinds``.

    Parameters
    ----------
    path : what the user gave.
    key : the name the user gave it under (``--set <key>=PATH``), used in the message.
    kinds : the kinds the caller can load (see :data:`MODEL_KINDS`).

    Returns
    -------
    The path, with ``~`` expanded.

    Raises
    ------
    BadInput
        One line naming ``key`` and ``path``: the path is empty or missing, holds no model this module
        reads, or holds one of another kind than ``kinds``.
    """
    unknown = [k for k in kinds if k not in MODEL_KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds = {tuple(kinds)!r}: must be a non-empty subset of {MODEL_KINDS}")
    where = f"{key} = {str(path)!r}"
    if not str(path).strip():
        raise BadInput(f"{key}: empty path; expected {_describe(kinds)}")
    kind, reason = model_kind(path)
    if kind is None:
        if reason == "no such file or folder":
            raise BadInput(f"{where}: no such file or folder")
        raise BadInput(f"{where}: not a model ({reason}); expected {_describe(kinds)}")
    if kind not in kinds:
        raise BadInput(f"{where}: holds {_KIND_NAMES[kind]}; this loader takes {_describe(kinds)}")
    return Path(path).expanduser()


# ------------------------------------------------------------------------------------------ dtype, device
def _torch_dtype(dtype: str | None) -> torch.dtype:
    """The torch dtype for ``dtype`` (``None``: float32); :class:`BadInput` for any other name."""
    import torch

    if dtype is None:
        return torch.float32
    if dtype not in _DTYPES:
        raise BadInput(f"dtype = {dtype!r}: must be one of {', '.join(_DTYPES)} or None (float32)")
    dt: torch.dtype = getattr(torch, dtype)
    return dt


def _torch_device(device: str) -> torch.device:
    """:func:`resolve_device`, with a malformed name as :class:`BadInput` (a missing device stays exit 3)."""
    try:
        return resolve_device(device)
    except ValueError as exc:
        raise BadInput(one_line(exc)) from exc


# ---------------------------------------------------------------------------------------------- transformers
def _load_transformers(auto_class: str, what: str, path: str | Path, *, key: str, dtype: str | None,
                       device: str, gguf_file: str | None, load_tokenizer: bool,
                       kinds: Sequence[ModelKind], extra_kwargs: dict[str, Any]) -> LoadedModel:
    torch_dtype = _torch_dtype(dtype)
    torch_device = _torch_device(device)
    if gguf_file is not None:
        if "gguf" not in kinds:
            raise BadInput(f"gguf_file = {gguf_file!r}: {what} is not read from GGUF files")
        if Path(path).suffix.lower() == ".gguf" or Path(path).is_file():
            raise BadInput(f"{key} = {str(path)!r}: give a .gguf file or a folder with gguf_file, not both")
        if not Path(path).expanduser().is_dir():
            raise BadInput(f"{key} = {str(path)!r}: no such folder (for gguf_file = {gguf_file!r})")
        path = Path(path) / gguf_file
    p = check_model_path(path, key=key, kinds=kinds)
    kind, _ = model_kind(p)
    assert kind in ("hf", "gguf")  # check_model_path allowed only these
    require_module("transformers", "loaders")
    source = str(p)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if kind == "gguf":
        require_module("gguf", "loaders")  # transformers reads and dequantizes GGUF tensors through it
        require_module("accelerate", "loaders")  # transformers refuses a gguf_file without it
        source, kwargs = str(p.parent), {"local_files_only": True, "gguf_file": p.name}
    elif load_tokenizer and _first_present(p, _TOKENIZER_FILES) is None:
        raise BadInput(f"{key} = {str(path)!r}: holds no tokenizer ({', '.join(_TOKENIZER_FILES[:4])}, ...); "
                       "load the model alone with load_tokenizer=False")
    import transformers

    clash = sorted({"local_files_only", "gguf_file", "dtype", "torch_dtype", "device_map"} & set(extra_kwargs))
    if clash:
        raise BadInput(f"model_kwargs: {', '.join(clash)} are set by the loader (use its dtype / device / gguf_file)")
    model_class = getattr(transformers, auto_class)
    try:
        model = model_class.from_pretrained(source, dtype=torch_dtype, **kwargs, **extra_kwargs)
        tokenizer = (transformers.AutoTokenizer.from_pretrained(source, **kwargs) if load_tokenizer else None)
    except (OSError, ValueError, KeyError) as exc:
        # transformers raises these for what the folder holds: missing or unreadable files, a model_type it
        # does not know, a GGUF architecture it cannot convert, a config the auto class cannot take.
        raise BadInput(f"{key} = {str(path)!r}: cannot be loaded as {what}: {one_line(exc, 300)}") from exc
    model = model.to(torch_device)
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, path=p, kind=kind)


def load_causal_lm(path: str | Path, *, dtype: str | None = None, device: str = "cpu",
                   gguf_file: str | None = None, load_tokenizer: bool = True, key: str = "model",
                   model_kwargs: Mapping[str, Any] | None = None) -> LoadedModel:
    """A causal LM and its tokenizer (``AutoModelForCausalLM``, ``AutoTokenizer``), never downloaded.

    Parameters
    ----------
    path : a Hugging Face folder (``save_pretrained`` output), a ``.gguf`` file, or a folder holding
        ``gguf_file``. A GGUF file's tensors are dequantized to ``dtype`` by transformers, and its tokenizer
        is rebuilt from the file's metadata.
    dtype : ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32).
    device : where the model goes (``cpu``, ``cuda``, ``cuda:<n>``, ``mps``).
    gguf_file : the GGUF file's name inside the folder ``path``.
    load_tokenizer : ``False`` loads the model alone (``tokenizer`` is then ``None``).
    key : the ``--set`` key the path came from, named in error messages.
    model_kwargs : passed on to ``from_pretrained`` (e.g. ``{"attn_implementation": "eager"}``, or config
        overrides such as ``{"hidden_dropout_prob": 0.0}``).

    Returns
    -------
    LoadedModel : ``model`` (in eval mode) and ``tokenizer``.

    Raises
    ------
    BadInput
        The path is missing or is not a causal LM transformers can read (one line naming ``key`` and the path).
    MissingDependency
        transformers, or for a GGUF file the ``gguf`` package, is not installed.
    """
    return _load_transformers("AutoModelForCausalLM", "a causal LM", path, key=key, dtype=dtype, device=device,
                              gguf_file=gguf_file, load_tokenizer=load_tokenizer, kinds=("hf", "gguf"),
                              extra_kwargs=dict(model_kwargs or {}))


def load_sequence_classifier(path: str | Path, *, dtype: str | None = None, device: str = "cpu",
                             num_labels: int | None = None, load_tokenizer: bool = True, key: str = "model",
                             model_kwargs: Mapping[str, Any] | None = None) -> LoadedModel:
    """A sequence classifier and its tokenizer (``AutoModelForSequenceClassification``), never downloaded.

    Parameters
    ----------
    path : a Hugging Face folder (``save_pretrained`` output). An encoder saved without a classification head
        (e.g. a ``BertModel``) gets a new, randomly initialized head drawn from torch's global generator,
        which the runner seeds.
    dtype : ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32).
    device : where the model goes.
    num_labels : the number of classes; ``None`` keeps the folder's. A head of another size than the
        folder's is replaced by a new one (``ignore_mismatched_sizes``).
    load_tokenizer : ``False`` loads the model alone.
    key : the ``--set`` key the path came from, named in error messages.
    model_kwargs : passed on to ``from_pretrained`` (e.g. ``{"attn_implementation": "eager"}``).

    Returns
    -------
    LoadedModel : ``model`` (in eval mode) and ``tokenizer``.

    Raises
    ------
    BadInput
        The path is missing or not a Hugging Face folder, or ``num_labels`` is below 1.
    MissingDependency
        transformers is not installed.
    """
    extra: dict[str, Any] = dict(model_kwargs or {})
    if num_labels is not None:
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
            raise BadInput(f"num_labels = {num_labels!r}: must be an integer >= 1")
        extra.update(num_labels=num_labels, ignore_mismatched_sizes=True)
    return _load_transformers("AutoModelForSequenceClassification", "a sequence classifier", path, key=key,
                              dtype=dtype, device=device, gguf_file=None, load_tokenizer=load_tokenizer,
                              kinds=("hf",), extra_kwargs=extra)


def load_encoder(path: str | Path, *, dtype: str | None = None, device: str = "cpu",
                 load_tokenizer: bool = True, key: str = "model",
                 model_kwargs: Mapping[str, Any] | None = None) -> LoadedModel:
    """A bare encoder and its tokenizer (``AutoModel``: hidden states, no task head), never downloaded.

    Parameters
    ----------
    path : a Hugging Face folder (``save_pretrained`` output).
    dtype : ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32).
    device : where the model goes.
    load_tokenizer : ``False`` loads the model alone.
    key : the ``--set`` key the path came from, named in error messages.
    model_kwargs : passed on to ``from_pretrained`` (e.g. ``{"attn_implementation": "eager"}``).

    Returns
    -------
    LoadedModel : ``model`` (in eval mode) and ``tokenizer``.

    Raises
    ------
    BadInput
        The path is missing or not a Hugging Face folder.
    MissingDependency
        transformers is not installed.
    """
    return _load_transformers("AutoModel", "an encoder", path, key=key, dtype=dtype, device=device,
                              gguf_file=None, load_tokenizer=load_tokenizer, kinds=("hf",),
                              extra_kwargs=dict(model_kwargs or {}))


# ---------------------------------------------------------------------------------------------------- vision
def _weights(folder: Path, names: Sequence[str]) -> dict[str, Any]:
    """The state dict in the first of ``names`` present in ``folder`` (safetensors, or a weights-only pickle)."""
    import torch

    name = _first_present(folder, names)
    assert name is not None  # check_model_path found one
    if name.endswith(".safetensors"):
        from safetensors.torch import load_file

        state: dict[str, Any] = load_file(str(folder / name), device="cpu")
        return state
    loaded: dict[str, Any] = torch.load(folder / name, map_location="cpu", weights_only=True)
    return loaded


def _load_timm(p: Path, *, key: str, torch_dtype: torch.dtype, torch_device: torch.device) -> VisionBackbone:
    require_module("timm", "vision")
    import timm

    config, _ = _read_json(p / "config.json")
    assert config is not None  # check_model_path read it
    pretrained_cfg = config.get("pretrained_cfg", {})
    # timm's config: the registry name, the class count at the top level (it wins over the pretrained_cfg's,
    # as in timm's own reader) and the constructor arguments the model was built with.
    kwargs = {"num_classes": config.get("num_classes", pretrained_cfg.get("num_classes")),
              **config.get("model_args", {})}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    try:
        model = timm.create_model(config["architecture"], pretrained=False, **kwargs)
        model.load_state_dict(_weights(p, _TIMM_WEIGHTS), strict=True)
    except (RuntimeError, TypeError, KeyError, ValueError) as exc:
        # timm raises RuntimeError for an unknown architecture and for weights of another shape,
        # TypeError for a constructor argument the architecture does not take.
        raise BadInput(f"{key} = {str(p)!r}: cannot be loaded as a timm model: {one_line(exc, 300)}") from exc
    model = model.to(device=torch_device, dtype=torch_dtype)
    model.eval()
    data_config = {k: pretrained_cfg[k] for k in ("input_size", "interpolation", "mean", "std", "crop_pct")
                   if k in pretrained_cfg}
    if "input_size" in data_config:
        data_config["input_size"] = tuple(data_config["input_size"])
    return VisionBackbone(model=model, data_config=data_config, path=p, kind="timm")


#: open_clip's names for the dtypes of :data:`_DTYPES` (its ``precision`` argument).
_OPEN_CLIP_PRECISION = {"float32": "fp32", "bfloat16": "pure_bf16", "float16": "pure_fp16"}


def _load_open_clip(p: Path, *, key: str, dtype: str | None, torch_device: torch.device) -> VisionBackbone:
    require_module("open_clip", "vision")
    import open_clip

    source = f"local-dir:{p}"
    try:
        model = open_clip.create_model(source, precision=_OPEN_CLIP_PRECISION[dtype or "float32"],
                                       device=torch_device)
        tokenizer = open_clip.get_tokenizer(source)
    except (RuntimeError, ValueError, OSError, KeyError) as exc:
        raise BadInput(f"{key} = {str(p)!r}: cannot be loaded as an open_clip model: "
                       f"{one_line(exc, 300)}") from exc
    model.eval()
    visual = model.visual
    size = visual.image_size if isinstance(visual.image_size, (tuple, list)) else (visual.image_size,) * 2
    data_config = {"input_size": (3, *size), "mean": tuple(visual.image_mean), "std": tuple(visual.image_std)}
    interpolation = getattr(visual, "preprocess_cfg", {}).get("interpolation")
    if interpolation is not None:
        data_config["interpolation"] = interpolation
    return VisionBackbone(model=model, data_config=data_config, path=p, kind="open_clip", tokenizer=tokenizer)


def load_vision_backbone(path: str | Path, *, dtype: str | None = None, device: str = "cpu",
                         key: str = "model") -> VisionBackbone:
    """An image model from a timm or open_clip folder, never downloaded.

    A timm folder (``config.json`` with ``architecture``, ``num_classes`` and ``model_args``, the constructor
    arguments recent timm records and :func:`save_vision_backbone` adds to) is rebuilt with
    ``timm.create_model(architecture, pretrained=False, num_classes=..., **model_args)`` and filled from
    ``model.safetensors`` with a strict ``load_state_dict`` (every tensor must match). An open_clip folder goes through
    ``open_clip.create_model("local-dir:<path>")`` and ``open_clip.get_tokenizer``.

    Parameters
    ----------
    path : the folder.
    dtype : ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32).
    device : where the model goes.
    key : the ``--set`` key the path came from, named in error messages.

    Returns
    -------
    VisionBackbone : ``model`` (eval mode), ``data_config`` (input size, mean, std), ``tokenizer`` (open_clip).

    Raises
    ------
    BadInput
        The path is missing, is not a timm or open_clip folder, or its weights do not fit its architecture.
    MissingDependency
        timm (for a timm folder) or open_clip (for an open_clip folder) is not installed: the ``vision`` extra.
    """
    torch_dtype = _torch_dtype(dtype)
    torch_device = _torch_device(device)
    p = check_model_path(path, key=key, kinds=("timm", "open_clip"))
    kind, _ = model_kind(p)
    if kind == "timm":
        return _load_timm(p, key=key, torch_dtype=torch_dtype, torch_device=torch_device)
    return _load_open_clip(p, key=key, dtype=dtype, torch_device=torch_device)


def save_vision_backbone(model: Any, folder: str | Path, *,
                         model_args: dict[str, Any] | None = None) -> Path:
    """Write a timm model into ``folder`` as timm does (``save_for_hf``: ``config.json``, ``model.safetensors``).

    Parameters
    ----------
    model : a model made by ``timm.create_model``.
    folder : where to write (created if absent).
    model_args : constructor arguments to record beside those timm records itself (recent timm records the
        arguments given to ``create_model``; older releases do not, so give here what the architecture's
        defaults do not cover, e.g. ``{"img_size": 32, "depth": 2}``), so that :func:`load_vision_backbone`
        rebuilds the same shapes.

    Returns
    -------
    The folder.

    Raises
    ------
    MissingDependency
        timm is not installed (the ``vision`` extra).
    """
    require_module("timm", "vision")
    from timm.models import save_for_hf

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    model_config = {"model_args": dict(model_args)} if model_args else None
    save_for_hf(model, str(out), model_config=model_config, safe_serialization=True)
    return out


# ------------------------------------------------------------------------------------------------- diffusers
def load_diffusers_pipeline(path: str | Path, *, dtype: str | None = None, device: str = "cpu",
                            key: str = "model") -> Any:
    """A diffusers pipeline from its folder (``DiffusionPipeline.from_pretrained``), never downloaded.

    Parameters
    ----------
    path : a folder written by ``DiffusionPipeline.save_pretrained`` (``model_index.json`` and one folder per
        component).
    dtype : ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``None`` (float32).
    device : where the pipeline's models go.
    key : the ``--set`` key the path came from, named in error messages.

    Returns
    -------
    The ``diffusers.DiffusionPipeline`` subclass named in ``model_index.json``, on ``device``.

    Raises
    ------
    BadInput
        The path is missing, is not a diffusers folder, or a component cannot be read.
    MissingDependency
        diffusers is not installed.
    """
    torch_dtype = _torch_dtype(dtype)
    torch_device = _torch_device(device)
    p = check_model_path(path, key=key, kinds=("diffusers",))
    require_module("diffusers", "loaders")
    from diffusers import DiffusionPipeline
    from diffusers.utils import deprecation_utils

    # diffusers renamed ``torch_dtype`` to ``dtype`` (the old name warns); older releases know only the old one.
    dtype_key = "dtype" if hasattr(deprecation_utils, "_resolve_dtype") else "torch_dtype"
    from diffusers.utils import logging as diffusers_logging

    bar_was_on = diffusers_logging.is_progress_bar_enabled()
    diffusers_logging.disable_progress_bar()  # our runs report their own progress; errors stay one line
    try:
        pipeline = DiffusionPipeline.from_pretrained(str(p), local_files_only=True, **{dtype_key: torch_dtype})
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        # diffusers raises these for a component folder that is missing or unreadable, or a pipeline or
        # component class (named in model_index.json) that it does not have.
        raise BadInput(f"{key} = {str(path)!r}: cannot be loaded as a diffusers pipeline: "
                       f"{one_line(exc, 300)}") from exc
    finally:
        if bar_was_on:
            diffusers_logging.enable_progress_bar()
    return pipeline.to(torch_device)


# ------------------------------------------------------------------------------------------------------ LoRA
def apply_lora(model: Any, *, r: int, alpha: int, target_modules: str | Sequence[str],
               dropout: float = 0.0, task_type: str | None = None) -> Any:
    """Wrap ``model`` with LoRA adapters (peft's ``LoraConfig`` and ``get_peft_model``).

    Every original parameter is frozen; each targeted linear (or conv / embedding) layer gains the low-rank
    update ``(alpha / r) * B @ A`` with ``A`` random and ``B`` zero, so the wrapped model first computes what
    ``model`` did.

    Parameters
    ----------
    model : a torch module (a transformers, timm or diffusers model, or any ``nn.Module``).
    r : the rank of each update (>= 1).
    alpha : the scale numerator, ``lora_alpha`` (an integer >= 1, as peft types it).
    target_modules : names of the layers to adapt (a module's name or its last component, e.g.
        ``["q_proj", "v_proj"]``), or one string taken as a regular expression over full module names.
    dropout : dropout on the update's input, in ``[0, 1)``.
    task_type : peft's task type (e.g. ``"CAUSAL_LM"``, ``"SEQ_CLS"``); ``None`` wraps the module as it is.
        ``"SEQ_CLS"`` also trains the classification head (peft's ``modules_to_save``).

    Returns
    -------
    The ``peft.PeftModel``; only the LoRA parameters (and a head that ``task_type`` adds) require grad.

    Raises
    ------
    BadInput
        A bad ``r``, ``alpha``, ``dropout`` or ``task_type``, or ``target_modules`` matching no layer.
    MissingDependency
        peft is not installed.
    """
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise BadInput(f"r = {r!r}: the LoRA rank must be an integer >= 1")
    if isinstance(alpha, bool) or not isinstance(alpha, int) or alpha < 1:
        raise BadInput(f"alpha = {alpha!r}: must be an integer >= 1")
    if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise BadInput(f"dropout = {dropout!r}: must be in [0, 1)")
    targets: str | list[str] = target_modules if isinstance(target_modules, str) else list(target_modules)
    if not targets or not all(isinstance(t, str) and t for t in targets):
        raise BadInput(f"target_modules = {target_modules!r}: must name at least one layer")
    require_module("peft", "loaders")
    from peft import LoraConfig, get_peft_model

    try:
        config = LoraConfig(r=r, lora_alpha=alpha, target_modules=targets, lora_dropout=float(dropout),
                            task_type=task_type)
        return get_peft_model(model, config)
    except ValueError as exc:
        # peft: target modules not found in the model, a layer type LoRA cannot adapt, an unknown task type.
        raise BadInput(f"target_modules = {target_modules!r}: {one_line(exc, 300)}") from exc

