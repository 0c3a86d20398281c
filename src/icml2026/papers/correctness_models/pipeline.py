"""World -> five trained targets -> graded histories (official schema) -> split by question."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml2026.core.progress import track
from icml2026.core.rng import spawn

from .data import Split, World, make_world, split_by_question
from .targets import FAMILIES, TargetAnswers, TargetScale, answer_with_target, phrase

__all__ = ["Histories", "build_histories"]


@dataclass
class Histories:
    """Every target's graded answers to every world question, with and without phrasing."""

    world: World
    split: Split
    answers: dict[str, TargetAnswers]
    responses: dict[str, list[str]]  # phrased responses (the targets' own style)
    bare: dict[str, list[str]]  # the same answers without phrasing (control of criterion 5)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(self.answers)

    def records(self, family: str, *, phrasing: bool = True) -> list[dict[str, object]]:
        """The target's history in the official jsonl schema (plus question_id and target_confidence)."""
        ta = self.answers[family]
        resp = self.responses[family] if phrasing else self.bare[family]
        return [
            {
                "input_prompt": q.text,
                "cleaned_model_completion": resp[i],
                "is_correct": "yes" if ta.correct[i] else "no",
                "subject": q.kind,
                "alpha_model_name": family,
                "question_id": q.qid,
                "target_confidence": float(ta.confidence[i]),
            }
            for i, q in enumerate(self.world.questions)
        ]

    def part(self, families: tuple[str, ...] | list[str], which: str, *, phrasing: bool = True
             ) -> tuple[list[str], list[str], list[str], np.ndarray, np.ndarray]:
        """(questions, responses, target names, labels, target confidences) of ``which`` in
        {"train", "cal", "eval"}, concatenated over ``families``."""
        qids = {"train": self.split.train, "cal": self.split.cal, "eval": self.split.eval}[which]
        qs, rs, ts, ys, cs = [], [], [], [], []
        for f in families:
            resp = self.responses[f] if phrasing else self.bare[f]
            for i in qids:
                qs.append(self.world.questions[int(i)].text)
                rs.append(resp[int(i)])
                ts.append(f)
            ys.append(self.answers[f].correct[qids])
            cs.append(self.answers[f].confidence[qids])
        return qs, rs, ts, np.concatenate(ys), np.concatenate(cs)


def build_histories(n_questions: int, scale: TargetScale, rng: np.random.Generator, *,
                    n_entities: int = 400, families: tuple[str, ...] = FAMILIES,
                    popularity: float = 0.0, regularity: float = 0.0) -> Histories:
    """Generate the world, train and run each target family, phrase its answers and split by question."""
    r_world, r_split, r_phrase, *r_targets = spawn(rng, 3 + len(families))
    world = make_world(n_questions, r_world, n_entities=n_entities, popularity=popularity,
                       regularity=regularity)
    split = split_by_question(len(world.questions), r_split)
    answers: dict[str, TargetAnswers] = {}
    for fam, r in track(list(zip(families, r_targets, strict=True)), "training targets"):
        answers[fam] = answer_with_target(fam, world, scale, r)
    responses, bare = {}, {}
    for fam in families:
        u = r_phrase.random((len(world.questions), 2))
        ta = answers[fam]
        responses[fam] = [phrase(fam, q, ta.answers[i], float(ta.confidence[i]), u[i, 0], u[i, 1])
                          for i, q in enumerate(world.questions)]
        bare[fam] = [phrase(fam, q, ta.answers[i], float(ta.confidence[i]), u[i, 0], u[i, 1], phrasing=False)
                     for i, q in enumerate(world.questions)]
    return Histories(world, split, answers, responses, bare)
