"""core.training: bf16 mixed precision and gradient accumulation through accelerate, one loop for every paper."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from icml2026.core.errors import BadInput  # noqa: E402
from icml2026.core.training import TrainingOptions, make_accelerator, train_steps  # noqa: E402


def _problem(seed: int = 0, n: int = 64, d: int = 8) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    y = x @ w + 0.01 * torch.randn(n, 1, generator=g)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return model, x, y


def _mse(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, y = batch
    return torch.nn.functional.mse_loss(model(x).float(), y)


def _params(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_fp32_without_accumulation_is_the_plain_loop_bit_for_bit() -> None:
    model_a, x, y = _problem()
    model_b, _, _ = _problem()
    batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)] * 3
    opt_a = torch.optim.SGD(model_a.parameters(), lr=0.05)
    for b in batches:
        loss = _mse(model_a, b)
        loss.backward()
        opt_a.step()
        opt_a.zero_grad()
    opt_b = torch.optim.SGD(model_b.parameters(), lr=0.05)
    res = train_steps(model_b, opt_b, batches, _mse)
    assert res.n_steps == res.n_micro_batches == len(batches)
    for a, b in zip(_params(model_a), _params(model_b), strict=True):
        assert torch.equal(a, b)


def test_accumulated_micro_batches_equal_one_large_batch() -> None:
    # four micro-batches of 16 with the mean loss each = one batch of 64 with its mean loss (linearity of the
    # gradient); the only difference is float32 summation order
    model_a, x, y = _problem(1)
    model_b, _, _ = _problem(1)
    opt_a = torch.optim.SGD(model_a.parameters(), lr=0.1)
    for _ in range(5):
        _mse(model_a, (x, y)).backward()
        opt_a.step()
        opt_a.zero_grad()
    micro = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)] * 5
    opt_b = torch.optim.SGD(model_b.parameters(), lr=0.1)
    res = train_steps(model_b, opt_b, micro, _mse, options=TrainingOptions(grad_accum=4))
    assert (res.n_steps, res.n_micro_batches) == (5, 20)
    for a, b in zip(_params(model_a), _params(model_b), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_bf16_trains_in_mixed_precision_and_keeps_float32_weights() -> None:
    model, x, y = _problem(2)
    seen: list[torch.dtype] = []
    # what a hidden layer computes (accelerate hands the model's own output back as float32)
    model[0].register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))

    def loss_fn(m: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return torch.nn.functional.mse_loss(m(batch[0]).float(), batch[1])

    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    steps: list[tuple[int, float]] = []
    res = train_steps(model, opt, [(x, y)] * 200, loss_fn, options=TrainingOptions(precision="bf16"),
                      on_step=lambda i, v: steps.append((i, v)))
    assert set(seen) == {torch.bfloat16}  # the forward pass ran under bf16 autocast
    assert all(p.dtype == torch.float32 for p in model.parameters())  # master weights stay float32
    assert res.losses[-1] < 0.1 * res.losses[0]  # and it learns: the loss falls tenfold
    assert [i for i, _ in steps] == list(range(1, 201)) and steps[-1][1] == res.losses[-1]


def test_last_incomplete_group_still_steps_and_clipping_bounds_the_update() -> None:
    model, x, y = _problem(3)
    before = _params(model)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    res = train_steps(model, opt, [(x[:8], 100.0 * y[:8])] * 3, _mse,
                      options=TrainingOptions(grad_accum=2, max_grad_norm=1e-3))
    assert (res.n_steps, res.n_micro_batches) == (2, 3)
    moved = math.sqrt(sum(float((a - b).pow(2).sum()) for a, b in zip(before, _params(model), strict=True)))
    assert moved <= 2 * 1e-3 * (1 + 1e-4)  # two steps of lr 1 on a gradient clipped to norm 1e-3


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"precision": "fp8"}, "precision"), ({"precision": None}, "precision"),
    ({"grad_accum": 0}, "grad_accum"), ({"grad_accum": 2.0}, "grad_accum"), ({"grad_accum": True}, "grad_accum"),
    ({"max_grad_norm": 0.0}, "max_grad_norm"), ({"max_grad_norm": float("nan")}, "max_grad_norm"),
    ({"max_grad_norm": "1"}, "max_grad_norm"),
])
def test_bad_options_are_refused_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(BadInput, match=field):
        TrainingOptions(**kwargs)


def test_fp16_on_the_cpu_and_bad_losses_are_refused() -> None:
    with pytest.raises(BadInput, match="fp16"):
        make_accelerator(TrainingOptions(precision="fp16"), "cpu")
    model, x, y = _problem(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(BadInput, match="scalar"):
        train_steps(model, opt, [(x, y)], lambda m, b: m(b[0]))
    with pytest.raises(BadInput, match="non-finite"):
        train_steps(model, opt, [(x, y)], lambda m, b: _mse(m, b) * float("inf"))


def test_options_can_change_between_runs_in_one_process() -> None:
    # experiments run one after the other in one process; accelerate's process-wide state must not pin the
    # first run's precision
    for precision in ("bf16", "fp32", "bf16"):
        acc = make_accelerator(TrainingOptions(precision=precision), "cpu")
        assert acc.mixed_precision == {"fp32": "no", "bf16": "bf16"}[precision]
