"""Procedural FrozenLake maps (the brief's CPU-scale environment), the BFS expert and the renders.

An 8 x 8 grid with holes at density 0.2, a random start and goal, solvable maps only; the expert is the BFS
shortest path with the deterministic tie-break U, D, L, R; depth H = path length. Renders are 32 x 32
grayscale, 4 px per cell: hole 0.0, ice 0.5, visited trail 0.3, goal a 0.8 ring, agent a 1.0 dot. Visual
thought i is the render after i moves.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from icml2026.core.validate import finite_number, positive_int

__all__ = [
    "ACTIONS",
    "STOP",
    "MOVES",
    "LakeMap",
    "FrozenLakeMaps",
    "bfs_expert",
    "step",
    "render",
    "expert_renders",
    "agent_cell",
    "CELL_PX",
]

ACTIONS = ("U", "D", "L", "R", "STOP")
STOP = 4
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # U, D, L, R as (d_row, d_col); the expert's tie-break order
CELL_PX = 4
HOLE, ICE, TRAIL, GOAL, AGENT = 0.0, 0.5, 0.3, 0.8, 1.0


@dataclass(frozen=True)
class LakeMap:
    """One map: ``holes`` (size, size) bool, ``start`` and ``goal`` (row, col)."""

    holes: np.ndarray
    start: tuple[int, int]
    goal: tuple[int, int]

    @property
    def size(self) -> int:
        return int(self.holes.shape[0])


def step(m: LakeMap, pos: tuple[int, int], action: int) -> tuple[int, int]:
    """The cell reached from ``pos`` by move ``action`` (0..3); a move off the grid stays in place."""
    if not 0 <= action < 4:
        raise ValueError(f"action: must be a move 0..3 (U, D, L, R), got {action!r}")
    r, c = pos[0] + MOVES[action][0], pos[1] + MOVES[action][1]
    if 0 <= r < m.size and 0 <= c < m.size:
        return (r, c)
    return pos


def bfs_expert(m: LakeMap) -> list[int] | None:
    """Shortest hole-free path start -> goal as moves (U=0, D=1, L=2, R=3); None when unsolvable.

    BFS expands the moves in the order U, D, L, R and keeps the first parent found, so the path is unique.
    """
    n = m.size
    parent: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
    seen = {m.start}
    queue = deque([m.start])
    while queue:
        pos = queue.popleft()
        if pos == m.goal:
            path: list[int] = []
            while pos != m.start:
                pos, a = parent[pos]
                path.append(a)
            return path[::-1]
        for a, (dr, dc) in enumerate(MOVES):
            r, c = pos[0] + dr, pos[1] + dc
            if 0 <= r < n and 0 <= c < n and not m.holes[r, c] and (r, c) not in seen:
                seen.add((r, c))
                parent[(r, c)] = (pos, a)
                queue.append((r, c))
    return None


class FrozenLakeMaps:
    """Seeded generator of solvable FrozenLake maps with their BFS expert (brief, "Environment").

    Parameters
    ----------
    size : grid side (cells); the render is ``4 * size`` pixels wide.
    hole_density : probability that a cell other than start and goal is a hole.
    min_depth, max_depth : keep only maps whose expert path length H lies in [min_depth, max_depth].
    """

    def __init__(self, size: int = 8, hole_density: float = 0.2, min_depth: int = 2, max_depth: int = 14):
        self.size = positive_int(size, "size", minimum=2, maximum=64)
        self.hole_density = finite_number(hole_density, "hole_density", lo=0.0, hi=0.6)
        self.min_depth = positive_int(min_depth, "min_depth", minimum=1, maximum=4 * self.size * self.size)
        self.max_depth = positive_int(max_depth, "max_depth", minimum=self.min_depth,
                                      maximum=4 * self.size * self.size)
        if self.min_depth > 2 * (self.size - 1) and self.hole_density == 0.0:
            raise ValueError(f"min_depth: {self.min_depth} is unreachable on an empty {self.size} x {self.size} grid")

    def sample(self, rng: np.random.Generator, max_tries: int = 10_000) -> tuple[LakeMap, list[int]]:
        """One solvable map and its expert moves (rejection sampling)."""
        n = self.size
        for _ in range(max_tries):
            start_goal = rng.choice(n * n, size=2, replace=False)
            start = (int(start_goal[0] // n), int(start_goal[0] % n))
            goal = (int(start_goal[1] // n), int(start_goal[1] % n))
            holes = rng.random((n, n)) < self.hole_density
            holes[start] = holes[goal] = False
            m = LakeMap(holes, start, goal)
            path = bfs_expert(m)
            if path is not None and self.min_depth <= len(path) <= self.max_depth:
                return m, path
        raise RuntimeError(f"no solvable map with depth in [{self.min_depth}, {self.max_depth}] "
                           f"after {max_tries} tries")

    def batch(self, n_maps: int, rng: np.random.Generator) -> list[tuple[LakeMap, list[int]]]:
        """``n_maps`` independent (map, expert moves) pairs."""
        positive_int(n_maps, "n_maps", maximum=10**6)
        return [self.sample(rng) for _ in range(n_maps)]


def render(m: LakeMap, pos: tuple[int, int], visited: set[tuple[int, int]] | frozenset = frozenset()) -> np.ndarray:
    """The 32 x 32 (for size 8) grayscale render of ``m`` with the agent at ``pos`` and its trail."""
    n, p = m.size, CELL_PX
    img = np.full((n * p, n * p), ICE, dtype=np.float32)
    for r, c in visited:
        img[r * p:(r + 1) * p, c * p:(c + 1) * p] = TRAIL
    rows, cols = np.nonzero(m.holes)
    for r, c in zip(rows, cols, strict=True):
        img[r * p:(r + 1) * p, c * p:(c + 1) * p] = HOLE
    gr, gc = m.goal
    ring = img[gr * p:(gr + 1) * p, gc * p:(gc + 1) * p]
    ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = GOAL
    r, c = pos
    lo, hi = p // 2 - 1, p // 2 + 1  # the central 2 x 2 pixels of the cell
    img[r * p + lo:r * p + hi, c * p + lo:c * p + hi] = AGENT
    return img


def expert_renders(m: LakeMap, moves: list[int]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Renders v_0..v_H along ``moves`` ((H+1, 32, 32)) and the agent cells along the way."""
    pos, visited = m.start, set()
    frames, cells = [render(m, pos)], [pos]
    for a in moves:
        visited.add(pos)
        pos = step(m, pos, a)
        frames.append(render(m, pos, visited))
        cells.append(pos)
    return np.stack(frames), cells


def agent_cell(img: np.ndarray, size: int = 8) -> tuple[int, int]:
    """The brightest-dot cell of a render: largest (central 2 x 2 mean - mean of the cell's border pixels).

    # Deviation: the brief says "brightest-dot cell"; subtracting each cell's own border makes the readout
    # insensitive to the goal ring (0.8) and to the blur of a 16-coefficient workspace.
    """
    arr = np.asarray(img, dtype=np.float64)
    p = CELL_PX
    if arr.shape != (size * p, size * p):
        raise ValueError(f"img: expected shape ({size * p}, {size * p}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("img: contains NaN or inf")
    cells = arr.reshape(size, p, size, p).transpose(0, 2, 1, 3)  # (row, col, p, p)
    lo, hi = p // 2 - 1, p // 2 + 1
    centre = cells[:, :, lo:hi, lo:hi].mean(axis=(2, 3))
    border = (cells.sum(axis=(2, 3)) - centre * 4) / (p * p - 4)
    k = int(np.argmax(centre - border))
    return (k // size, k % size)
