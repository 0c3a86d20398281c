"""Real-recording loaders (issue 68): Sleep-EDF EDF + hypnogram and CinC 2017 WFDB folders that the tests write,
the paper's epoching and labels, subject-wise folds, and both zero-shot experiments end to end from the CLI with
``--set data=DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from icml2026.core.errors import BadInput
from icml2026.papers.neurocnn import make_sleep_bank
from icml2026.papers.neurocnn.recordings import load_cinc2017, load_sleep_edf, subject_folds

pyedflib = pytest.importorskip("pyedflib")
wfdb = pytest.importorskip("wfdb")

torch.set_num_threads(1)  # shared 2-core machine

FS = 100.0
EPOCH = 30.0
# Sleep-EDF cassette naming: SC4<subject:2><night:1>E0-PSG.edf / ...EC-Hypnogram.edf; subject 01 has two nights
NIGHTS = ("SC4001", "SC4011", "SC4012", "SC4021", "SC4031")
STAGE_NAMES = ("Sleep stage W", "Sleep stage 1", "Sleep stage 2", "Sleep stage 3", "Sleep stage R")


def write_sleep_edf(folder: Path, n_epochs: int = 10, seed: int = 0) -> dict[str, list[int]]:
    """Per night: an EDF+ PSG (2 EEG channels at 100 Hz) whose 30 s epochs are synthetic sleep-like windows of
    known stage, and an EDF+ hypnogram of 30 s stage annotations (one 'Sleep stage ?' epoch at the end, and N3
    written as stage 4 in one night). Returns the expected class sequence per night."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    expected = {}
    for j, night in enumerate(NIGHTS):
        bank = make_sleep_bank(n_epochs, rng, window_s=EPOCH)
        x = bank.sample(FS)[:, 0, :].reshape(-1) * 50.0  # uV
        unscored = rng.standard_normal(int(EPOCH * FS)) * 20.0
        sig = np.concatenate([x, unscored])
        w = pyedflib.EdfWriter(str(folder / f"{night}E0-PSG.edf"), 2, file_type=pyedflib.FILETYPE_EDFPLUS)
        hdr = dict(dimension="uV", sample_frequency=FS, physical_min=-1000.0, physical_max=1000.0,
                   digital_min=-32768, digital_max=32767)
        w.setSignalHeaders([dict(label="EEG Fpz-Cz", **hdr), dict(label="EEG Pz-Oz", **hdr)])
        w.writeSamples([np.clip(sig, -999, 999), np.clip(-sig, -999, 999)])
        w.close()
        h = pyedflib.EdfWriter(str(folder / f"{night}EC-Hypnogram.edf"), 0, file_type=pyedflib.FILETYPE_EDFPLUS)
        for k, y in enumerate(bank.labels):
            name = "Sleep stage 4" if (y == 3 and j == 0) else STAGE_NAMES[int(y)]
            h.writeAnnotation(k * EPOCH, EPOCH, name)
        h.writeAnnotation(n_epochs * EPOCH, EPOCH, "Sleep stage ?")
        h.close()
        expected[night] = [int(y) for y in bank.labels]
    return expected


def write_cinc2017(folder: Path, n_per_class: int = 3, seconds: float = 17.0, seed: int = 0) -> dict[str, int]:
    """CinC 2017 layout: REFERENCE.csv and one single-lead WFDB record (300 Hz, mV) per line, with class-specific
    beat rates and noise (N, A, O, ~). Returns record -> class index."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 300)) / 300.0
    labels, lines = {}, []
    for _ in range(n_per_class):
        for c, code in enumerate("NAO~"):
            name = f"A{len(lines) + 1:05d}"
            rate = (1.0, 1.6, 1.0, 1.2)[c] * rng.uniform(0.9, 1.1)
            beats = np.cumsum(rng.uniform(0.6, 1.4 if c == 1 else 1.05, 40) / rate)
            width = 0.05 if c != 2 else 0.12
            sig = sum(np.exp(-0.5 * ((t - b) / width) ** 2) for b in beats)
            sig = sig + rng.standard_normal(t.size) * (0.5 if c == 3 else 0.03)
            wfdb.wrsamp(name, fs=300, units=["mV"], sig_name=["ECG"], p_signal=sig[:, None], fmt=["16"],
                        write_dir=str(folder))
            lines.append(f"{name},{code}")
            labels[name] = c
    (folder / "REFERENCE.csv").write_text("\n".join(lines) + "\n")
    return labels


@pytest.fixture(scope="module")
def edf_folder(tmp_path_factory) -> tuple[Path, dict[str, list[int]]]:
    folder = tmp_path_factory.mktemp("sleep_edf") / "edf"
    return folder, write_sleep_edf(folder, n_epochs=6)


def test_sleep_edf_epochs_labels_and_subjects(edf_folder):
    folder, expected = edf_folder
    bank = load_sleep_edf(folder, wake_margin_min=-1)
    # 30 s epochs at 100 Hz, the unscored epoch dropped, stage 4 -> N3
    assert bank.signals.shape == (6 * len(NIGHTS), 1, 3000)
    assert bank.window_s == 30.0 and bank.stored_fs == 100.0
    assert list(bank.labels) == [y for night in sorted(expected) for y in expected[night]]
    # subjects: SC400, SC401 (two nights), SC402, SC403
    assert bank.subjects == ("SC400", "SC401", "SC402", "SC403")
    assert np.bincount(bank.groups).tolist() == [6, 12, 6, 6]
    # robust-scaled per recording; new rates are linear interpolations of the stored windows
    assert bank.sample(100.0) is bank.signals and bank.sample(200.0).shape == (30, 1, 6000)
    with pytest.raises(BadInput, match="channel"):
        load_sleep_edf(folder, channel="EEG C3-A2")
    # wake trimming: a 0-minute margin keeps the epochs from the first to the last sleep epoch of each night
    spans = [np.nonzero(np.asarray(expected[n]) != 0)[0] for n in sorted(expected)]
    assert len(load_sleep_edf(folder, wake_margin_min=0)) == sum(int(s[-1] - s[0] + 1) for s in spans)


def test_subject_folds_never_split_a_subject(edf_folder):
    bank = load_sleep_edf(edf_folder[0], wake_margin_min=-1)
    folds = subject_folds(bank.labels, bank.groups, 3, np.random.default_rng(0))
    tested = np.concatenate([te for _, _, te in folds])
    assert sorted(tested.tolist()) == list(range(len(bank)))  # every window tested once
    for tr, va, te in folds:
        sets = [set(bank.groups[i].tolist()) for i in (tr, va, te)]
        assert sets[0] and sets[1] and sets[2]
        assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    with pytest.raises(BadInput, match="n_folds"):
        subject_folds(bank.labels, bank.groups, 5, np.random.default_rng(0))


def test_cinc2017_frames_and_labels(tmp_path):
    labels = write_cinc2017(tmp_path / "cinc", n_per_class=2)
    bank = load_cinc2017(tmp_path / "cinc")
    assert bank.signals.shape == (8 * 2, 1, 800)  # two 8 s frames per 17 s record, at 100 Hz
    assert bank.labels.tolist() == [c for c in labels.values() for _ in range(2)]
    assert bank.subjects == tuple(labels)
    (tmp_path / "cinc" / "REFERENCE.csv").write_text("A00001,X\n")
    with pytest.raises(BadInput, match="REFERENCE"):
        load_cinc2017(tmp_path / "cinc")


def _run(tmp_path: Path, exp: str, data: Path, *extra: str) -> dict:
    from icml2026.cli import main

    out = tmp_path / "runs"
    code = main(["run", exp, "--preset", "smoke", "--seed", "0", "--threads", "1", "--out", str(out),
                 "--set", f"data={data}", *[a for kv in extra for a in ("--set", kv)]])
    assert code in (0, 1, 4)  # a verdict
    (res,) = list(out.glob(f"{exp}/*/results.json"))
    return json.loads(res.read_text())


@pytest.mark.slow
def test_sleep_zero_shot_runs_on_edf_recordings_from_the_cli(tmp_path, edf_folder):
    res = _run(tmp_path, "neurocnn.sleep_zero_shot", edf_folder[0], "window_s=30", "n_folds=3",
               "max_folds=1", "wake_margin_min=1440")
    m = res["metrics"]
    assert m["n_subjects"] == 4 and m["n_windows"] == 30 and m["n_folds_run"] == 1
    assert {"neurocnn_fold0_best_val_acc", "neurocnn_acc_200hz",
            "cnn_raw_acc_75hz"} <= set(m)
    assert res["config"]["data"] == str(edf_folder[0])


def test_ecg_zero_shot_runs_on_wfdb_records_from_the_cli(tmp_path):
    write_cinc2017(tmp_path / "cinc", n_per_class=2)
    res = _run(tmp_path, "neurocnn.ecg_zero_shot", tmp_path / "cinc", "window_s=8", "n_folds=4", "max_folds=2")
    m = res["metrics"]
    assert {"neurocnn_macro_f1_100hz", "neurocnn_macro_f1_gap_200hz_max"} <= set(m)
    assert res["config"]["data"] == str(tmp_path / "cinc") and res["verdict"] in ("reproduced", "not reproduced",
                                                                                   "undecided")


def test_bad_data_folder_is_refused_naming_the_key(tmp_path):
    from icml2026.cli import main

    (tmp_path / "empty").mkdir()
    for exp in ("neurocnn.sleep_zero_shot", "neurocnn.ecg_zero_shot"):
        assert main(["run", exp, "--preset", "smoke", "--out", str(tmp_path / "runs"),
                     "--set", f"data={tmp_path / 'missing'}"]) == 2
        # an existing folder without recordings: refused when it is read (before any training)
        assert main(["run", exp, "--preset", "smoke", "--out", str(tmp_path / "runs"),
                     "--set", f"data={tmp_path / 'empty'}"]) == 2
    assert not list((tmp_path / "runs").rglob("results.json")) if (tmp_path / "runs").exists() else True
