"""The caller's own data and deletion request: arrays, tensors, DataFrames, Datasets, splits,
record ids, forget sets by id, and the deletion commitment over those ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from audit.cli import app
from audit.commitment import commitment, digest, opens
from audit.datasets.forget import indices_of_ids
from audit.datasets.user import from_user_data, parse_ids, read_ids
from certify.errors import InvalidInput


def _images(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 1, 6, 6)).astype(np.float32)
    y = np.arange(n) % 3
    return X, y


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame(
        {
            "user_id": [f"u{i:04d}" for i in range(n)],
            "age": age,
            "city": pd.Categorical(rng.choice(["oslo", "rome", "lima"], n)),
            "plan": rng.choice(["free", "pro"], n).astype(object),
            "churned": (age > 45).astype(int),
        }
    )


# -- forms of data ---------------------------------------------------------------------------------
def test_image_tensors_keep_their_shape_and_values():
    X, y = _images()
    data = from_user_data((torch.as_tensor(X), torch.as_tensor(y)), seed=3)
    assert data.input_shape == (1, 6, 6) and data.X_train.ndim == 4
    # images are used as given (no standardisation, no clipping): every training record is one of X's
    rows = data.source_rows["train"]
    np.testing.assert_array_equal(data.X_train, X[rows])
    assert data.preprocessing["parse"]["record_shape"] == [1, 6, 6]
    assert data.record_ids is None and list(data.train_ids()) == list(rows)
    sizes = data.preprocessing["split"]["sizes"]
    assert sizes["reference"] == 0  # nothing to fit: no record is spent on a reference split
    assert sizes["train"] + sizes["test"] + sizes["unseen"] == 120


def test_a_dataframe_with_a_categorical_and_an_id_column_needs_no_file():
    frame = _frame()
    data = from_user_data(frame, label_column="churned", id_column="user_id", seed=0)
    assert data.feature_names == ("age", "city=lima", "city=oslo", "city=rome", "plan=free", "plan=pro")
    assert data.preprocessing["parse"]["columns"]["city"] == {"one_hot": ["lima", "oslo", "rome"]}
    assert set(data.train_ids()) <= set(frame["user_id"])
    # the id column is not a feature, and the labels are the column's
    i = int(np.flatnonzero(frame["user_id"] == data.train_ids()[0])[0])
    assert data.y_train[0] == frame["churned"][i]


def test_a_map_style_dataset_with_ids():
    X, y = _images(60)

    class Records(torch.utils.data.Dataset):
        def __len__(self):
            return len(y)

        def __getitem__(self, i):
            return torch.as_tensor(X[i]), int(y[i]), 1000 + i

    data = from_user_data(Records(), seed=1)
    assert data.input_shape == (1, 6, 6)
    assert set(data.train_ids().tolist()) <= set(range(1000, 1060))
    j = int(data.train_ids()[0]) - 1000
    np.testing.assert_array_equal(data.X_train[0], X[j])


def test_the_callers_split_is_the_training_set():
    X, y = _images(100)
    ids = np.arange(500, 600)
    data = from_user_data({"train": (X[:70], y[:70], ids[:70]), "test": (X[70:], y[70:], ids[70:])}, seed=2)
    assert sorted(data.train_ids().tolist()) == list(range(500, 570))
    held = set(data.record_ids["test"].tolist()) | set(data.record_ids["unseen"].tolist())
    assert held == set(range(570, 600))
    assert data.preprocessing["split"]["user_split"] is True
    # max_train keeps a seeded subset of the caller's training records, never a held-out one
    small = from_user_data(
        {"train": (X[:70], y[:70], ids[:70]), "test": (X[70:], y[70:], ids[70:])}, seed=2, max_train=20
    )
    assert small.n_train == 20 and set(small.train_ids().tolist()) <= set(range(500, 570))


@pytest.mark.parametrize(
    "bad, field",
    [
        ((np.zeros((5, 2)), np.arange(4)), "data[1] (y)"),
        ((np.full((5, 2), np.nan), np.arange(5)), "data[0] (X)"),
        ((np.zeros(5), np.arange(5)), "data[0] (X)"),
        ((np.zeros((5, 2)), np.arange(5), [1, 2, 3, 4, 4]), "ids"),
        ((np.zeros((5, 2)), np.arange(5), [1, 2, "x", 4, 5]), "ids"),
        ({"train": (np.zeros((5, 2)), np.arange(5))}, "data"),
        ("a string", "data"),
    ],
)
def test_bad_data_names_the_field(bad, field):
    with pytest.raises(InvalidInput) as info:
        from_user_data(bad)
    assert info.value.field == field


def test_dataframe_errors_name_the_column():
    frame = _frame()
    with pytest.raises(InvalidInput) as info:
        from_user_data(frame, label_column="nope")
    assert info.value.field == "label_column"
    with pytest.raises(InvalidInput) as info:
        from_user_data(frame, label_column="churned", id_column="churned")
    assert info.value.field == "id_column"
    broken = frame.astype({"age": float})
    broken.loc[7, "age"] = np.nan
    with pytest.raises(InvalidInput, match="row 7") as info:
        from_user_data(broken, label_column="churned")
    assert info.value.field == "age"
    with pytest.raises(InvalidInput) as info:  # column names only make sense for a DataFrame
        from_user_data(_images(), label_column="y")
    assert info.value.field == "label_column"


# -- forget by id --------------------------------------------------------------------------------
def test_forget_ids_select_exactly_those_training_records():
    data = from_user_data(_frame(), label_column="churned", id_column="user_id", seed=0)
    wanted = [data.train_ids()[5], data.train_ids()[2]]
    assert indices_of_ids(data, wanted).tolist() == [2, 5]


def test_an_id_outside_the_training_split_is_an_error_naming_it():
    data = from_user_data(_frame(), label_column="churned", id_column="user_id", seed=0)
    held = data.record_ids["test"][0]
    with pytest.raises(InvalidInput, match=f"'{held}' is in the test split") as info:
        indices_of_ids(data, [data.train_ids()[0], held])
    assert info.value.field == "forget_ids"
    with pytest.raises(InvalidInput, match="'nobody' is not the id of any record"):
        indices_of_ids(data, ["nobody"])
    with pytest.raises(InvalidInput, match="integers"):
        indices_of_ids(from_user_data(_images(), seed=0), ["3"])
    with pytest.raises(InvalidInput, match="more than once"):
        indices_of_ids(data, [data.train_ids()[0]] * 2)
    with pytest.raises(InvalidInput, match="n//2"):
        indices_of_ids(data, list(data.train_ids()))


def test_ids_read_from_text():
    assert parse_ids(["17", "-3", "0"]) == [17, -3, 0]
    assert parse_ids(["007", "8"]) == ["007", "8"]  # not canonical integers: kept as text
    assert parse_ids(["u1", "2"]) == ["u1", "2"]


def test_read_ids_skips_blanks_and_comments(tmp_path: Path):
    f = tmp_path / "ids.txt"
    f.write_text("# deletion request 42\n17\n\n 23 \n")
    assert read_ids(str(f)) == [17, 23]
    with pytest.raises(InvalidInput) as info:
        read_ids(str(tmp_path / "missing.txt"))
    assert info.value.field == "forget_ids"


# -- the commitment ------------------------------------------------------------------------------
def test_commitment_is_the_documented_digest():
    salt = bytes(range(16))
    value, kind, count = digest([3, 1, 2], salt)
    assert value == hashlib.sha256(salt + b"[1,2,3]").hexdigest() and kind == "integer" and count == 3
    text, kind, _ = digest(["b", "ä", "a"], salt)
    assert text == hashlib.sha256(salt + '["a","b","ä"]'.encode()).hexdigest() and kind == "text"


def test_commitment_opens_only_with_the_ids_and_the_salt():
    salt = b"s" * 32
    block = commitment(np.array([10, 4, 7]), salt, "test ids")
    assert opens(block, salt, [4, 7, 10]) and opens(block, salt, ["10", "4", "7"])  # read from a file
    assert not opens(block, salt, [4, 7]) and not opens(block, salt, [4, 7, 11])
    assert not opens(block, b"t" * 32, [4, 7, 10])
    assert not opens(block, salt, ["4", "7", "ten"])


def test_commitment_verify_on_the_command_line(tmp_path: Path):
    runner = CliRunner()
    rng = np.random.default_rng(0)
    table = tmp_path / "people.csv"
    lines = ["person,age,city,label"] + [
        f"p{i:03d},{a},{rng.choice(['oslo', 'rome'])},{int(a > 45)}" for i, a in enumerate(rng.integers(18, 80, 300))
    ]
    table.write_text("\n".join(lines) + "\n")
    from audit.config import AuditConfig
    from audit.datasets import load_dataset

    seed = AuditConfig().seeds()["data"]
    data = load_dataset(f"csv:{table}", seed=seed, label_column="label", id_column="person")
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(data.train_ids()[:3]) + "\n")
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "run",
            "--dataset",
            f"csv:{table}",
            "--label-column",
            "label",
            "--id-column",
            "person",
            "--forget-ids",
            str(ids),
            "--method",
            "retrain",
            "--attacks",
            "none",
            "--curve-points",
            "2",
            "--noise-draws",
            "2",
            "--out",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["dataset"]["forget_size"] == 3
    assert report["deletion_request"]["identifier"] == "the record's id in column 'person'"
    assert all(i not in (out / "report.json").read_text() for i in data.train_ids()[:3])  # never the raw ids
    salt = out / "deletion-commitment.salt"
    ok = runner.invoke(app, ["commitment", "verify", str(out / "report.json"), "--salt", str(salt), "--ids", str(ids)])
    assert ok.exit_code == 0 and "opens" in ok.output
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("\n".join(data.train_ids()[:2]) + "\n")
    bad = runner.invoke(
        app, ["commitment", "verify", str(out / "report.json"), "--salt", str(salt), "--ids", str(wrong)]
    )
    assert bad.exit_code == 3 and "does not open" in bad.output
    missing = runner.invoke(
        app, ["commitment", "verify", str(out / "report.json"), "--salt", str(tmp_path / "x"), "--ids", str(ids)]
    )
    assert missing.exit_code == 2 and missing.output.startswith("error: --salt")
    held = tmp_path / "held.txt"
    held.write_text(data.record_ids["test"][0] + "\n")
    refused = runner.invoke(
        app,
        [
            "run",
            "--dataset",
            f"csv:{table}",
            "--label-column",
            "label",
            "--id-column",
            "person",
            "--forget-ids",
            str(held),
            "--attacks",
            "none",
            "-q",
        ],
    )
    assert refused.exit_code == 2 and "is in the test split" in refused.output
