"""Tree, cuts and bad input (criteria 1 and 3 of the brief; the issue's error cases)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster
from sklearn.metrics import adjusted_rand_score

from icml2026.papers.fedtreelora import (
    build_client_tree,
    independent_layer_partitions,
    is_refinement,
    layer_distances,
    select_layer_cuts,
)

PLANTED = [np.zeros(8, int), np.repeat([0, 1], 4), np.repeat([0, 1, 2, 3], 2), np.repeat([0, 1, 2, 3], 2)]


def planted_B(noise: float = 0.01, gap: float = 1.0, seed: int = 0) -> list[np.ndarray]:
    """N=8, L=4, B of shape (8, 2, 16, 4): one group-mean per planted block plus small noise.

    noise << gap: within-group distances ~ noise*sqrt(256), between-group ~ gap*sqrt(256).
    """
    rng = np.random.default_rng(seed)
    out = []
    for labels in PLANTED:
        centres = rng.normal(0, gap, (labels.max() + 1, 2, 16, 4))
        out.append(centres[labels] + rng.normal(0, noise, (8, 2, 16, 4)))
    return out


def test_layer_distances_match_brute_force() -> None:
    B = planted_B()
    D = layer_distances(B)
    for layer, d in enumerate(D):
        brute = np.array([[np.linalg.norm(B[layer][i] - B[layer][j]) for j in range(8)] for i in range(8)])
        np.testing.assert_allclose(d, brute, atol=1e-9)  # float64 Gram-trick rounding
        assert np.array_equal(d, d.T) and np.all(np.diag(d) == 0)


def test_planted_structure_gives_cuts_1_2_4_4() -> None:
    # criterion 1: fails if the window were not nested (layer 3 could jump to 8) or tau were ignored
    D = layer_distances(planted_B())
    tree = build_client_tree(D)
    lc = select_layer_cuts(tree, D, K=2, tau=0.25)
    assert lc.cuts == [1, 2, 4, 4]
    for got, want in zip(lc.partitions, PLANTED, strict=True):
        assert adjusted_rand_score(want, got) == 1.0


def test_cuts_monotone_and_refining_on_random_distances() -> None:
    # criterion 3 on unstructured input (many seeds): non-decreasing cuts, each partition refines the previous
    for seed in range(20):
        rng = np.random.default_rng(seed)
        B = [rng.normal(0, 1 + layer, (12, 30)) for layer in range(5)]
        D = layer_distances(B)
        lc = select_layer_cuts(build_client_tree(D), D, K=3, tau=0.1)
        assert all(a <= b for a, b in zip(lc.cuts, lc.cuts[1:], strict=False))
        assert all(b - a <= 3 for a, b in zip([1, *lc.cuts], lc.cuts, strict=False))  # window of width K
        assert all(c <= 11 for c in lc.cuts)  # c = N excluded
        assert all(is_refinement(f, c) for c, f in zip(lc.partitions, lc.partitions[1:], strict=False))


def test_independent_clustering_can_drift() -> None:
    # the naive per-layer baseline breaks nesting on this input (layer 2's split is not inside layer 1's)
    a, b = np.repeat([0, 1], 4), np.array([0, 1, 0, 1, 0, 1, 0, 1])
    rng = np.random.default_rng(0)
    B = [rng.normal(0, 1, (2, 40))[lab] + rng.normal(0, 0.01, (8, 40)) for lab in (a, b)]
    parts = independent_layer_partitions(layer_distances(B))
    assert not is_refinement(parts[1], parts[0])


def test_partition_exact_count_and_nested_with_ties() -> None:
    # all pairwise distances equal: fcluster(maxclust) collapses to fewer clusters; the replay does not
    d = np.ones((6, 6)) - np.eye(6)
    tree = build_client_tree(d)
    assert len(np.unique(fcluster(tree.Z, 3, criterion="maxclust"))) != 3
    for c in range(1, 7):
        assert len(np.unique(tree.partition(c))) == c
        if c > 1:
            assert is_refinement(tree.partition(c), tree.partition(c - 1))


def test_partition_agrees_with_fcluster_without_ties() -> None:
    rng = np.random.default_rng(3)
    D = layer_distances([rng.normal(size=(10, 7))])
    tree = build_client_tree(D)
    for c in range(1, 11):
        ref = fcluster(tree.Z, c, criterion="maxclust")
        assert adjusted_rand_score(ref, tree.partition(c)) == 1.0


def test_bad_inputs_raise_clear_errors() -> None:
    D = layer_distances(planted_B())
    tree = build_client_tree(D)
    asym = D[1].copy()
    asym[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        build_client_tree([D[0], asym])
    nan = D[1].copy()
    nan[2, 3] = nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        select_layer_cuts(tree, [D[0], nan], K=2, tau=0.25)
    with pytest.raises(ValueError, match="K"):
        select_layer_cuts(tree, D, K=0)
    with pytest.raises(TypeError, match="K"):
        select_layer_cuts(tree, D, K=1.5)  # type: ignore[arg-type]
    for tau in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="tau"):
            select_layer_cuts(tree, D, tau=tau)
    with pytest.raises(ValueError, match="at least 3 clients"):
        build_client_tree(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="at least 3 clients"):
        layer_distances([np.ones((2, 4))])
    with pytest.raises(ValueError, match="square"):
        build_client_tree(np.ones((3, 4)))
    with pytest.raises(ValueError, match="B_per_layer"):
        layer_distances([])
    with pytest.raises(ValueError, match=r"B_per_layer\[1\]"):
        layer_distances([np.ones((4, 3)), np.ones((5, 3))])
    with pytest.raises(ValueError, match="c = 9"):
        tree.partition(9)
