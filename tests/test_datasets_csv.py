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


def _with_labels(path: Path, labels: list[str]) -> Path:
    """A two-feature table whose outcome column holds ``labels`` as written (raw CSV text)."""
    lines = ["height,colour,outcome"]
    for i, label in enumerate(labels):
        lines.append(f"{150 + i},{['red', 'blue'][i % 2]},{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "hole",
    ["", "NaN", "nan", "NAN", "-nan", "   ", '""', '"  "', "NA", "n/a", "null", "?"],
    ids=[
        "empty",
        "NaN",
        "nan-text",
        "NAN",
        "minus-nan",
        "whitespace",
        "quoted-empty",
        "quoted-whitespace",
        "NA",
        "n/a",
        "null",
        "question-mark",
    ],
)
def test_csv_missing_label_is_refused(tmp_path: Path, hole: str) -> None:
    # rows 4 and 9 (file lines 5 and 10) lack a label; before issue 13 they became a class
    labels = ["yes" if i % 3 else "no" for i in range(40)]
    labels[3] = labels[8] = hole
    path = _with_labels(tmp_path / "labels.csv", labels)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"csv:{path}", label_column="outcome")
    err = info.value
    assert err.field == "outcome"
    assert "a label in every row" in err.allowed and "'nan'" in err.allowed
    assert "2 missing label(s)" in str(err) and "lines 5, 10;" in str(err)
    assert str(path) in str(err)


def test_csv_many_missing_labels_are_counted_not_all_listed(tmp_path: Path) -> None:
    labels = ["" if i % 2 else ("yes" if i % 4 else "no") for i in range(60)]
    path = _with_labels(tmp_path / "sparse.csv", labels)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"csv:{path}", label_column="outcome")
    message = str(info.value)
    assert "30 missing label(s)" in message
    # the first ten lines (odd records 1, 3, ... are file lines 3, 5, ...), then a count
    assert "lines 3, 5, 7, 9, 11, 13, 15, 17, 19, 21 and 20 more;" in message


def test_csv_labels_that_look_like_missing_but_are_not(tmp_path: Path) -> None:
    # "0" and "nano" are labels; only the missing tokens and NaN are refused
    labels = ["0" if i % 2 else "nano" for i in range(40)]
    path = _with_labels(tmp_path / "fine.csv", labels)
    data = load_dataset(f"csv:{path}", label_column="outcome")
    assert data.preprocessing["label"]["classes"] == ["0", "nano"]
    assert data.n_classes == 2


def _with_heights(path: Path, heights: list[str]) -> Path:
    lines = ["height,colour,outcome"] + [
        f"{h},{['red', 'blue'][i % 2]},{['no', 'yes'][i % 2]}" for i, h in enumerate(heights)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_text_in_a_mostly_numeric_column_is_refused_with_its_line(tmp_path: Path) -> None:
    """A typo in a numeric column once one-hot encoded it (3 features became 52): refused instead."""
    heights = [str(150 + i) for i in range(50)]
    heights[7] = "17O"  # a letter O for a zero
    path = _with_heights(tmp_path / "typo.csv", heights)
    with pytest.raises(InvalidInput) as info:
        load_dataset(f"csv:{path}", label_column="outcome")
    assert info.value.field == "height" and "49 of 50 values are numbers" in str(info.value)
    assert f"'17O' at {path} line 9;" in str(info.value) and str(info.value).count("\n") == 0


def test_a_column_of_mostly_text_stays_categorical(tmp_path: Path) -> None:
    sizes = ["S", "M", "L", "XL", "1", "2"] * 5  # a third are numbers: a categorical column
    data = load_dataset(f"csv:{_with_heights(tmp_path / 'sizes.csv', sizes)}", label_column="outcome")
    assert data.preprocessing["parse"]["columns"]["height"] == {"one_hot": ["1", "2", "L", "M", "S", "XL"]}


def test_text_in_a_mostly_numeric_dataframe_column_is_refused_with_its_row() -> None:
    pd = pytest.importorskip("pandas")
    from audit.datasets.user import from_user_data

    frame = pd.DataFrame({"age": [30 + i for i in range(39)] + ["unknown"], "outcome": [0, 1] * 20})
    with pytest.raises(InvalidInput, match=r"39 of 40 values are numbers.*'unknown' in row 39;") as info:
        from_user_data(frame, label_column="outcome")
    assert info.value.field == "age"
