"""The user's own data and classifier for the bound pipeline (issue 68): ``--set data=DIR``, ``--set model=...``.

Data (:func:`load_folder_task`): a folder (or one ``.npz`` file) holding one of

* ``train.npz`` and ``test.npz``, each with arrays ``x`` (or ``X``) and ``y``: the split is the user's;
* one ``.npz`` with ``x_train``, ``y_train``, ``x_test``, ``y_test``, or with ``x`` (or ``X``) and ``y``;
* ``X.npy`` and ``y.npy`` (or ``x.npy``): one pool, split here at random;
* an image folder: one subfolder per class (its name is the label: an integer, or any name, classes then
  numbered in sorted order), images ``.png``/``.jpg``/``.jpeg``/``.bmp``/``.pgm`` of one size, read with
  Pillow as (channels, height, width) in [0, 1].

Labels become binary as in the paper: two classes map to 0 and 1 in sorted order; more classes split into
the lower and upper half of the sorted labels (the paper's MNIST and SVHN {0-4} vs {5-9}), or the labels
named in ``classes_one`` map to 1 (CIFAR-10 vehicles: ``classes_one=0,1,8,9``). Features are standardised
with the training set's per-feature mean and standard deviation, as the shipped digits task is.

Classifier (:func:`model_factory`): ``mlp`` (the paper's MNIST and CIFAR-10 networks: ReLU layers of
``width``, ``n_hidden`` of them; images are flattened), ``cnn`` (two 3x3 convolutions with max pooling and
one hidden layer of ``width``; images only), or ``FILE.py:FUNCTION`` / ``package.module:FUNCTION``, a
function ``build(in_shape, generator) -> torch.nn.Module`` the user writes (the paper's SVHN VGG-16
variant, any torch classifier). The network returns one score per example (shape (m,) or (m, 1):
p(label 1) = sigmoid(score)) or two logits (m, 2), whose difference is the score. Its initial weights do
not matter to the bound (every chain starts from them and the prior draws replace them), but they must be
drawn from ``generator`` for the run to be reproducible.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .data import BinaryTask

__all__ = ["load_folder_task", "model_factory", "check_model_spec", "IMAGE_SUFFIXES", "BUILTIN_MODELS"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".pgm")
BUILTIN_MODELS = ("mlp", "cnn")


def _xy(arrays: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    names = list(arrays.keys()) if hasattr(arrays, "keys") else []
    x_key = "x" if "x" in names else "X" if "X" in names else None
    if x_key is None or "y" not in names:
        raise ValueError(f"data: {where} needs arrays 'x' (or 'X') and 'y', found {sorted(names)}")
    return np.asarray(arrays[x_key]), np.asarray(arrays["y"])


def _read_images(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    classes = sorted(p for p in folder.iterdir() if p.is_dir())
    if len(classes) < 2:
        raise ValueError(f"data: {folder} has no .npz/.npy arrays and fewer than 2 class subfolders")
    names = [c.name for c in classes]
    numeric = all(n.lstrip("-").isdigit() for n in names)
    xs: list[np.ndarray] = []
    ys: list[int] = []
    for k, c in enumerate(classes):
        files = sorted(p for p in c.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        for f in files:
            with Image.open(f) as im:
                arr = np.asarray(im, dtype=np.float32) / 255.0
            arr = arr[None] if arr.ndim == 2 else np.moveaxis(arr, -1, 0)  # (C, H, W)
            xs.append(arr)
            ys.append(int(c.name) if numeric else k)
    if not xs:
        raise ValueError(f"data: no images ({', '.join(IMAGE_SUFFIXES)}) in the class folders of {folder}")
    shapes = {x.shape for x in xs}
    if len(shapes) > 1:
        raise ValueError(f"data: the images of {folder} differ in size or channels: {sorted(shapes)[:3]}")
    return np.stack(xs), np.asarray(ys)


def _read(path: Path) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
    """(train or pool, test or None) from a folder or an .npz file."""
    if path.is_file():
        if path.suffix != ".npz":
            raise ValueError(f"data: {path} is a file but not an .npz archive")
        with np.load(path, allow_pickle=False) as z:
            if "x_train" in z and "y_train" in z and "x_test" in z and "y_test" in z:
                return (z["x_train"], z["y_train"]), (z["x_test"], z["y_test"])
            return _xy(z, str(path)), None
    if not path.is_dir():
        raise ValueError(f"data: {path} does not exist")
    if (path / "train.npz").is_file() and (path / "test.npz").is_file():
        with np.load(path / "train.npz", allow_pickle=False) as a, np.load(path / "test.npz", allow_pickle=False) as b:
            return _xy(a, "train.npz"), _xy(b, "test.npz")
    npz = sorted(path.glob("*.npz"))
    if len(npz) == 1:
        return _read(npz[0])
    if len(npz) > 1:
        raise ValueError(f"data: {path} holds several .npz files; keep one, or train.npz and test.npz")
    x_file = path / "X.npy" if (path / "X.npy").is_file() else path / "x.npy"
    if x_file.is_file() and (path / "y.npy").is_file():
        return (np.load(x_file, allow_pickle=False), np.load(path / "y.npy", allow_pickle=False)), None
    return _read_images(path), None


def _binary(y: np.ndarray, classes_one: tuple[int, ...], labels: np.ndarray) -> np.ndarray:
    if classes_one:
        return np.isin(y, classes_one).astype(np.int64)
    if labels.size == 2:
        return (y == labels[1]).astype(np.int64)
    return (y >= labels[labels.size // 2]).astype(np.int64)  # lower half vs upper half of the sorted labels


def _parse_classes(classes_one: str) -> tuple[int, ...]:
    if not classes_one.strip():
        return ()
    try:
        return tuple(int(t) for t in classes_one.split(","))
    except ValueError:
        raise ValueError(f"classes_one = {classes_one!r}: must be comma-separated integer labels") from None


def load_folder_task(
    path: str | Path, n_train: int, n_test: int, rng: np.random.Generator, *, classes_one: str = "",
    flatten: bool = True,
) -> BinaryTask:
    """A :class:`BinaryTask` from the user's folder (see the module docstring).

    Parameters
    ----------
    path : the folder, or one ``.npz`` file.
    n_train, n_test : sizes; with the user's own split each set is subsampled (at random) to at most these,
        with one pool the first n_train of a random permutation train and up to n_test of the rest test.
    rng : draws the permutations.
    classes_one : comma-separated labels mapped to 1 ("" : the default binary mapping).
    flatten : reshape each example to a vector (for an MLP); else keep (C, H, W) (a grayscale (H, W) array
        gets a channel axis).

    Raises
    ------
    ValueError naming ``data``, ``n_train`` or ``classes_one`` (the CLI's exit status 2).
    """
    ones = _parse_classes(classes_one)
    train, test = _read(Path(path))
    x_all = [np.asarray(train[0])] + ([np.asarray(test[0])] if test is not None else [])
    y_all = [np.asarray(train[1]).reshape(-1)] + ([np.asarray(test[1]).reshape(-1)] if test is not None else [])
    for x, y in zip(x_all, y_all, strict=True):
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"data: {x.shape[0]} examples but {y.shape[0]} labels")
        if not np.issubdtype(x.dtype, np.number) or not np.all(np.isfinite(x)):
            raise ValueError("data: the features must be finite numbers")
        if not np.issubdtype(y.dtype, np.integer) and not np.all(y == np.round(y)):
            raise ValueError("data: the labels must be integers")
    if test is not None and x_all[0].shape[1:] != x_all[1].shape[1:]:
        raise ValueError(f"data: train examples {x_all[0].shape[1:]} and test examples {x_all[1].shape[1:]} differ")
    labels = np.unique(np.concatenate(y_all).astype(np.int64))
    if labels.size < 2:
        raise ValueError(f"data: needs at least 2 classes, found {labels.tolist()}")
    if test is None:
        n = x_all[0].shape[0]
        if not 2 <= n_train <= n - 2:
            raise ValueError(f"n_train = {n_train}: the data hold {n} examples (at least 2 are left for the test set)")
        perm = rng.permutation(n)
        tr, te = perm[:n_train], perm[n_train : n_train + n_test]
        xtr, ytr, xte, yte = x_all[0][tr], y_all[0][tr], x_all[0][te], y_all[0][te]
    else:
        tr = rng.permutation(x_all[0].shape[0])[:n_train]
        te = rng.permutation(x_all[1].shape[0])[:n_test]
        xtr, ytr, xte, yte = x_all[0][tr], y_all[0][tr], x_all[1][te], y_all[1][te]
    ytr_b, yte_b = _binary(ytr.astype(np.int64), ones, labels), _binary(yte.astype(np.int64), ones, labels)
    if np.unique(ytr_b).size < 2:
        raise ValueError("classes_one: the training set has one binary class only")
    xtr, xte = xtr.astype(np.float64), xte.astype(np.float64)
    if xtr.ndim == 3:  # grayscale images (n, H, W)
        xtr, xte = xtr[:, None], xte[:, None]
    if flatten:
        xtr, xte = xtr.reshape(xtr.shape[0], -1), xte.reshape(xte.shape[0], -1)
    mean, std = xtr.mean(axis=0), xtr.std(axis=0)
    std[std == 0] = 1.0
    xtr, xte = ((xtr - mean) / std).astype(np.float32), ((xte - mean) / std).astype(np.float32)
    name = f"{Path(path).name}: labels {labels.tolist()[:10]} -> {{0, 1}}, n={xtr.shape[0]}"
    return BinaryTask(xtr, ytr_b, xte, yte_b, name=name)


def check_model_spec(spec: str) -> str:
    """Validate ``--set model=...`` without importing torch: a built-in name or ``FILE.py:FUNCTION`` /
    ``module:FUNCTION`` whose file exists (a ValueError naming ``model`` otherwise)."""
    if spec in BUILTIN_MODELS:
        return spec
    target, sep, fn = spec.rpartition(":")
    if not sep or not target or not fn.isidentifier():
        raise ValueError(
            f"model = {spec!r}: use one of {', '.join(BUILTIN_MODELS)}, FILE.py:FUNCTION or module:FUNCTION"
        )
    if target.endswith(".py") and not Path(target).is_file():
        raise ValueError(f"model = {spec!r}: no such file {target}")
    return spec


def _user_factory(spec: str) -> Callable[..., Any]:
    target, _, fn = spec.rpartition(":")
    if target.endswith(".py"):
        mod_spec = importlib.util.spec_from_file_location(f"_gibbs_user_model_{abs(hash(target))}", target)
        if mod_spec is None or mod_spec.loader is None:
            raise ValueError(f"model = {spec!r}: cannot import {target}")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ValueError(f"model = {spec!r}: cannot import {target} ({exc})") from None
    build = getattr(module, fn, None)
    if not callable(build):
        raise ValueError(f"model = {spec!r}: {target} has no function {fn}")
    return build


def _init_uniform(module: Any, generator: Any) -> None:
    """PyTorch's default-style U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias, from ``generator``."""
    import torch

    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
                fan_in = m.weight[0].numel()
                bound = 1.0 / math.sqrt(fan_in)
                m.weight.copy_((2 * torch.rand(m.weight.shape, generator=generator) - 1) * bound)
                if m.bias is not None:
                    m.bias.copy_((2 * torch.rand(m.bias.shape, generator=generator) - 1) * bound)


def _cnn(in_shape: tuple[int, ...], width: int, generator: Any) -> Any:
    import torch

    if len(in_shape) != 3:
        raise ValueError(f"model = 'cnn' needs images (channels, height, width), the data have shape {in_shape}")
    c, h, w = in_shape
    if h < 4 or w < 4:
        raise ValueError(f"model = 'cnn' needs images of at least 4 x 4 pixels, got {h} x {w}")
    net = torch.nn.Sequential(
        torch.nn.Conv2d(c, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * (h // 4) * (w // 4), width), torch.nn.ReLU(),
        torch.nn.Linear(width, 1),
    )
    _init_uniform(net, generator)
    return net


def model_factory(spec: str, in_shape: tuple[int, ...], width: int, n_hidden: int) -> Callable[[Any], Any]:
    """``generator -> torch.nn.Module`` for ``--set model=spec`` on examples of shape ``in_shape``."""
    from .langevin import make_mlp

    check_model_spec(spec)
    if spec == "mlp":
        if len(in_shape) != 1:
            raise ValueError(f"model = 'mlp' needs flat examples, got shape {in_shape}")
        return lambda gen: make_mlp(in_shape[0], width, n_hidden, gen)
    if spec == "cnn":
        _cnn(in_shape, width, _probe_generator())  # validate the shape before any chain
        return lambda gen: _cnn(in_shape, width, gen)
    build = _user_factory(spec)
    return lambda gen: build(in_shape, gen)


def _probe_generator() -> Any:
    import torch

    return torch.Generator().manual_seed(0)
