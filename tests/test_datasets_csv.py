"""Tests for audit.datasets.loaders.csv: a CSV table the user gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audit.datasets import load_dataset
from certify.errors import InvalidInput


def _write_csv(path: Path, n: int = 120, *, hole: bool = False) -> Path:
    rng = np.random.default_rng(0)
    lines = ["height,colour,site,outcome"]
    for i in range(n):
        height = "" if hole and i == 7 else f"{rng.normal(170, 10):.1f}"
        colour = ["red", "green", "blue"][i % 3]
        site = f"s{i % 6}"
        outcome = ["no", "yes"][int(rng.random() < 0.4)]
        lines.append(f"{height},{colour},{site},{outcome}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_loader(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "table.csv")
    data = load_dataset(f"csv:{path}", label_column="outcome", group_column="site", seed=2)
    assert data.feature_names == ("height", "colour=blue", "colour=green", "colour=red")
    assert data.n_classes == 2
    assert data.preprocessing["label"]["classes"] == ["no", "yes"]
    assert data.preprocessing["groups"]["values"] == [f"s{i}" for i in range(6)]
    assert data.groups_train is not None
    assert data.groups_train.shape == data.y_train.shape
    assert set(np.unique(data.groups_train)) <= set(range(6))
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == 120
    assert np.linalg.norm(data.X_train.astype(np.float64), axis=1).max() <= 1.0
    assert len(data.source["sha256"]["table.csv"]) == 64


def test_csv_errors(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "holes.csv", hole=True)
    with pytest.raises(InvalidInput, match="line 9") as info:
        load_dataset(f"csv:{path}", label_column="outcome")
    assert info.value.field == "height"
    good = _write_csv(tmp_path / "good.csv")
    with pytest.raises(InvalidInput, match="'outcome'") as info:
        load_dataset(f"csv:{good}", label_column="label")
    assert info.value.field == "label_column"
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"csv:{good}", label_column="outcome", group_column="outcome")
    assert info.value.field == "group_column"
    with pytest.raises(InvalidInput, match="missing.csv") as info:
        load_dataset(f"csv:{tmp_path / 'missing.csv'}", label_column="outcome")
    assert info.value.field == "dataset"
