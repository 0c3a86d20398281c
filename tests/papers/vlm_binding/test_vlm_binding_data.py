"""Criterion 1 of the brief: the generator's invariants, prompts and rendering."""

from __future__ import annotations

import numpy as np
import pytest

from icml2026.papers.vlm_binding import (
    N_IMAGE_TOKENS,
    Vocab,
    counterfactual_sample,
    encode_prompt,
    image_batch,
    noise_text_batch,
    render_scene,
    sample_task,
    text_batch,
    text_prompt,
)
from icml2026.papers.vlm_binding.data import RetrievalSample, glyphs, palette


def test_every_sample_has_one_correct_item_and_distinct_entities() -> None:
    rng = np.random.default_rng(0)
    for n in range(1, 17):
        for _ in range(30):
            s = sample_task(n, rng)
            colours, shapes = [c for c, _ in s.objects], [x for _, x in s.objects]
            assert len(set(colours)) == n and len(set(shapes)) == n
            assert sorted(x for x, _ in s.associations) == sorted(shapes)
            assert len({i for _, i in s.associations}) == n
            # the two hops, recomputed by brute force: exactly one item matches
            hits = [i for sh, i in s.associations for c, sh2 in s.objects if c == s.query_colour and sh2 == sh]
            assert hits == [s.answer]
            assert s.objects[s.query_slot][0] == s.query_colour


def test_association_order_is_a_random_permutation() -> None:
    # slot order of the associations would make "slot k -> association k" a correct shortcut (brief pitfall)
    rng = np.random.default_rng(1)
    same = [
        [x for x, _ in s.associations] == [x for _, x in s.objects] for s in (sample_task(6, rng) for _ in range(300))
    ]
    assert np.mean(same) < 0.01  # 1/720 expected


def test_text_prompt_matches_the_brief_example_layout() -> None:
    v = Vocab()
    s = RetrievalSample([(5, 1), (9, 2)], [(2, 3), (1, 7)], 5, 7, 0, v)
    assert text_prompt(s) == [
        "colour_5",
        "shape_1",
        "colour_9",
        "shape_2",
        "[CTX_END]",
        "shape_2",
        "item_3",
        "shape_1",
        "item_7",
        "[QUE]",
        "colour_5",
    ]
    assert s.answer == s.item_of_shape(s.shape_of_colour(5)) == 7


def test_text_batch_ids_equal_the_encoded_prompt() -> None:
    rng = np.random.default_rng(2)
    samples = [sample_task(n, rng) for n in (2, 5, 8)]
    b = text_batch(samples)
    for k, s in enumerate(samples):
        ids = encode_prompt(text_prompt(s), s.vocab)
        np.testing.assert_array_equal(b.ids[k, -len(ids) :], ids)
        assert b.key_mask[k].sum() == len(ids) and b.position_ids[k, -1] == len(ids) - 1
        assert b.is_context[k].sum() == 2 * s.n_objects


def test_text_lengths_of_the_brief() -> None:
    rng = np.random.default_rng(3)
    assert len(text_prompt(sample_task(8, rng))) == 35  # ID max (brief: <= 35 tokens)
    assert len(text_prompt(sample_task(16, rng))) == 67  # OOD N=16 (brief: 67 tokens)
    assert image_batch([sample_task(8, rng)], rng).ids.shape[1] == 64 + 19  # image prompts <= 83


def test_image_tokens_are_64_for_every_n_and_rendering_is_deterministic() -> None:
    rng = np.random.default_rng(4)
    for n in range(1, 17):
        s = sample_task(n, rng)
        b = image_batch([s], rng)
        assert b.is_context[0].sum() == N_IMAGE_TOKENS
        assert b.images is not None and b.images.shape == (1, 64, 64, 3) and b.images.dtype == np.uint8
        assert (b.cell_codes > 0).sum() == n  # one object per occupied cell
        a = render_scene(s, np.random.default_rng(7))
        np.testing.assert_array_equal(a, render_scene(s, np.random.default_rng(7)))
    assert not np.array_equal(render_scene(s, np.random.default_rng(7)), render_scene(s, np.random.default_rng(8)))


def test_scene_pixels_show_each_object_in_its_colour() -> None:
    s = sample_task(10, np.random.default_rng(5))
    img = render_scene(s, np.random.default_rng(6))
    pal = palette(32)
    present = {tuple(p) for p in img.reshape(-1, 3)} - {(0, 0, 0)}
    assert present == {tuple(pal[c]) for c, _ in s.objects}
    assert len({tuple(p) for p in pal}) == 32 and (pal.max(1) >= 170).all()
    g = glyphs(32)
    assert min((g[i] != g[j]).sum() for i in range(32) for j in range(i)) >= 10


def test_noise_batch_spans_64_context_positions_and_masks_noise() -> None:
    rng = np.random.default_rng(8)
    samples = [sample_task(n, rng) for n in (2, 7)]
    b = noise_text_batch(samples, rng)
    for k, s in enumerate(samples):
        real = b.ids[k][b.key_mask[k]]
        np.testing.assert_array_equal(real, encode_prompt(text_prompt(s), s.vocab))
        assert b.position_ids[k, -1] == 64 + 2 * s.n_objects + 2
        assert (b.ids[k][~b.key_mask[k] & (b.ids[k] != s.vocab.pad)] >= s.vocab.noise0).all()


def test_counterfactual_keeps_objects_rotates_and_separates_outcomes() -> None:
    rng = np.random.default_rng(9)
    for _ in range(200):
        x = sample_task(int(rng.integers(3, 9)), rng)
        xp, p_prime = counterfactual_sample(x, rng)
        assert sorted(xp.objects) == sorted(x.objects) and xp.objects != x.objects
        q = [c for c, _ in x.objects].index(xp.query_colour)
        assert p_prime == xp.query_slot and p_prime != q and p_prime != x.query_slot
        assert xp.query_colour != x.query_colour
        assert not {i for _, i in xp.associations} & {i for _, i in x.associations}
        assert [sh for sh, _ in xp.associations] == [sh for sh, _ in x.associations]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sample_task(0, np.random.default_rng(0)), "n_objects"),
        (lambda: sample_task(33, np.random.default_rng(0), Vocab(n_items=40)), "n_objects"),
        (lambda: sample_task(3, 0), "rng"),  # type: ignore[arg-type]
        (lambda: Vocab(n_colours=217), "n_colours"),  # the paper's 216 is the largest palette
        (
            lambda: counterfactual_sample(sample_task(2, np.random.default_rng(0)), np.random.default_rng(0)),
            "n_objects >= 3",
        ),
        (lambda: text_batch([]), "samples"),
        (lambda: Vocab().token_id("item_99"), "item_99"),
    ],
)
def test_bad_inputs_are_refused_with_a_named_argument(call, match) -> None:  # noqa: ANN001
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_paper_scale_palette_and_glyphs_are_distinct_and_extend_the_small_ones() -> None:
    big, small = palette(216), palette(56)
    assert len(np.unique(big, axis=0)) == 216 and big.max(1).min() >= 85  # visible on black
    assert len(np.unique(small, axis=0)) == 56
    g = glyphs(216)
    assert np.array_equal(g[:32], glyphs(32))  # one fixed sequence: the brief's 32 glyphs are unchanged
    d = (g[:, None] != g[None]).sum((2, 3))
    assert d[~np.eye(216, dtype=bool)].min() >= 10
