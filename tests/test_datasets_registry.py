"""Tests for audit.datasets.registry: names, options, loader discovery and plug-ins."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from audit.datasets import (
    DATASETS,
    Loader,
    available_datasets,
    list_datasets,
    load_dataset,
    registry,
    unavailable_datasets,
)
from audit.datasets.loaders import adult as adult_loader
from certify.errors import InvalidInput


@pytest.fixture(autouse=True)
def _no_installed_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the built-in loaders, whatever plug-ins this environment has installed."""
    monkeypatch.setattr(registry, "entry_points", lambda group: [])


def test_registry_and_unknown_name() -> None:
    assert set(DATASETS) == {"adult", "digits", "idx:<dir>", "cifar10:<dir>", "csv:<file>"}
    for entry in list_datasets():
        assert {"name", "description", "source", "licence", "citation"} <= set(entry)
    with pytest.raises(InvalidInput) as info:
        load_dataset("cifar10")
    assert info.value.field == "dataset"
    assert "'adult', 'digits', 'idx:<dir>', 'cifar10:<dir>', 'csv:<file>'" in str(info.value)
    with pytest.raises(InvalidInput, match="idx:<dir>"):
        load_dataset("mnist")


def test_bad_options_are_named() -> None:
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", feature_map={"pca": 3})
    assert info.value.field == "feature_map"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", feature_map={"row_norm": "l2"})
    assert info.value.field == "row_norm"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", test_fraction=0.6, unseen_fraction=0.4)
    assert info.value.field == "fractions"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", seed=-1)
    assert info.value.field == "seed"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", max_train=1)
    assert info.value.field == "max_train"
    with pytest.raises(InvalidInput) as info:
        load_dataset("digits", label_column="y")
    assert info.value.field == "label_column"


# ---------------------------------------------------------------------------------------------
# Discovery: one module per source, plug-ins through entry points, failures reported
# ---------------------------------------------------------------------------------------------

_TINY = """
import numpy as np

from audit.datasets import Loader, from_arrays


def load(**common):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    return from_arrays(X, (X[:, 0] > 0).astype(int), name="tiny", **common)


LOADER = Loader(
    name="tiny", load=load, description="three Gaussian columns", source="generated",
    licence="CC0", citation="none", order=25,
)
"""


@pytest.fixture
def drop_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Add tmp_path to the loaders package's folders, as if its modules lay in the package."""
    from audit.datasets import loaders

    monkeypatch.setattr(loaders, "__path__", [*loaders.__path__, str(tmp_path)])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("audit.datasets.loaders."):
            del sys.modules[name]
            if hasattr(loaders, name.rpartition(".")[2]):
                delattr(loaders, name.rpartition(".")[2])


def test_builtin_loaders_are_one_module_each() -> None:
    from audit.datasets import loaders

    modules = sorted(m.name for m in pkgutil.iter_modules(loaders.__path__) if not m.name.startswith("_"))
    assert modules == ["adult", "cifar10", "csv", "digits", "idx"]
    table = available_datasets()
    assert list(table) == ["adult", "digits", "idx:<dir>", "cifar10:<dir>", "csv:<file>"]
    assert all(isinstance(loader, Loader) for loader in table.values())
    assert unavailable_datasets() == {}


def test_a_new_dataset_is_one_new_module(drop_in: Path) -> None:
    (drop_in / "tiny.py").write_text(_TINY)
    (drop_in / "_helpers.py").write_text("raise RuntimeError('helpers are not loaders')\n")
    assert list(available_datasets()) == ["adult", "digits", "tiny", "idx:<dir>", "cifar10:<dir>", "csv:<file>"]
    assert DATASETS["tiny"]["licence"] == "CC0"
    assert unavailable_datasets() == {}  # _helpers is skipped, not reported
    data = load_dataset("tiny", seed=1, max_train=20)
    assert data.name == "tiny" and data.n_train == 20
    with pytest.raises(InvalidInput) as info:
        load_dataset("tiny", group_column="g")
    assert info.value.field == "group_column"
    assert "None except for 'adult' and 'csv:<file>'" in str(info.value)
    with pytest.raises(InvalidInput) as info:
        load_dataset("imagenet")
    assert "'adult', 'digits', 'tiny', 'idx:<dir>', 'cifar10:<dir>', 'csv:<file>'" in str(info.value)


def test_a_broken_loader_module_is_reported_not_dropped(drop_in: Path) -> None:
    (drop_in / "broken.py").write_text("import no_such_module_xyz\n")
    (drop_in / "noloader.py").write_text("X = 1\n")
    broken = unavailable_datasets()
    assert set(broken) == {"broken", "noloader"}
    assert "ModuleNotFoundError" in broken["broken"] and "no_such_module_xyz" in broken["broken"]
    assert "audit.datasets.loaders.noloader:LOADER" in broken["noloader"]
    assert "adult" in available_datasets()  # the others still load
    with pytest.raises(InvalidInput, match="no_such_module_xyz") as info:
        load_dataset("broken")
    assert info.value.field == "dataset"


def test_plugins_register_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_plugin.py").write_text(
        _TINY + "\nNOT_A_LOADER = 3\nCLASH = Loader(name='adult', load=load, description='',"
        " source='', licence='', citation='')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    group = registry.ENTRY_POINT_GROUP
    assert group == "unlearn_audit.datasets"
    eps = [
        EntryPoint(name="tiny", value="tiny_plugin:LOADER", group=group),
        EntryPoint(name="gone", value="no_such_plugin_xyz:LOADER", group=group),
        EntryPoint(name="three", value="tiny_plugin:NOT_A_LOADER", group=group),
        EntryPoint(name="adult2", value="tiny_plugin:CLASH", group=group),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep for ep in eps if ep.group == group])
    try:
        assert "tiny" in available_datasets()
        assert load_dataset("tiny", max_train=10).n_train == 10
        broken = unavailable_datasets()
        assert set(broken) == {"gone", "three", "adult2"}
        assert "ModuleNotFoundError" in broken["gone"]
        assert "not an audit.datasets.Loader" in broken["three"]
        assert "already taken by audit.datasets.loaders.adult:LOADER" in broken["adult2"]
        assert available_datasets()["adult"].load is adult_loader.load  # the built-in wins
        with pytest.raises(InvalidInput, match="no_such_plugin_xyz"):
            load_dataset("gone")
    finally:
        sys.modules.pop("tiny_plugin", None)


def test_loader_declarations_are_checked() -> None:
    def load(**_: object) -> None:
        return None

    common = {"load": load, "description": "", "source": "", "licence": "", "citation": ""}
    with pytest.raises(InvalidInput) as info:
        Loader(name="files:<dir>", prefix="dir:", **common)
    assert info.value.field == "Loader.prefix"
    with pytest.raises(InvalidInput) as info:
        Loader(name="x", options=("label",), **common)
    assert info.value.field == "Loader.options"
    with pytest.raises(InvalidInput) as info:
        Loader(name="", **common)
    assert info.value.field == "Loader.name"
    assert Loader(name="x", options=["group_column"], **common).options == ("group_column",)


def test_importing_the_package_imports_no_loader_and_no_cycle() -> None:
    code = (
        "import sys, audit.datasets as d\n"
        "assert not [m for m in sys.modules if m.startswith('audit.datasets.loaders')]\n"
        "assert d.ADULT_SHA256 and d.read_idx\n"
        "import audit.datasets.loaders.csv, audit.datasets.split, audit.datasets.forget\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------------------------
# catalogue(): what `audit datasets` lists
# ---------------------------------------------------------------------------------------------

SHARED_MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist"


def test_catalogue_lists_every_source_with_licence_and_kind() -> None:
    from audit.datasets import catalogue

    entries = {e["name"]: e for e in catalogue()}
    assert list(entries) == ["adult", "digits", "idx:<dir>", "cifar10:<dir>", "csv:<file>"]
    for e in entries.values():
        assert e["licence"] and e["source"] and e["title"]
    assert {n for n, e in entries.items() if e["bundled"]} == {"adult", "digits"}
    assert [entries[n]["needs"] for n in ("adult", "idx:<dir>", "cifar10:<dir>", "csv:<file>")] == [
        None,
        "a directory",
        "a directory",
        "a file",
    ]
    assert entries["adult"]["source"] == "https://doi.org/10.24432/C5XW20"
    assert entries["adult"]["licence"] == "CC BY 4.0"
    # a directory source has no shape of its own; the public sets it is made for have one
    assert entries["idx:<dir>"]["shape"] is None
    assert [k["title"] for k in entries["idx:<dir>"]["known"]] == ["MNIST", "Fashion-MNIST"]
    assert entries["cifar10:<dir>"]["known"][0]["shape"]["image"] == [3, 32, 32]
    # the catalogue is a copy: editing it does not change the declarations
    entries["adult"]["shape"]["records"] = 0
    assert catalogue()[0]["shape"]["records"] == 48842


def test_catalogue_pins_the_mnist_checksums_the_loader_uses() -> None:
    from audit.datasets import catalogue
    from audit.datasets.loaders.idx import KNOWN_IDX

    mnist = next(k for e in catalogue() for k in e["known"] if k["title"] == "MNIST")
    assert mnist["sha256"] == KNOWN_IDX["MNIST"]["sha256"]
    # the SHA-256 of the decompressed train images, as in ../shared/datasets/README.md
    assert mnist["sha256"]["train-images-idx3-ubyte"].startswith("ba891046e650")


@pytest.mark.parametrize("name", ["adult", "digits"])
def test_catalogue_shape_of_each_bundled_dataset_is_what_loading_gives(name: str) -> None:
    from audit.datasets import catalogue

    shape = next(e["shape"] for e in catalogue() if e["name"] == name)
    data = load_dataset(name)
    sizes = data.preprocessing["split"]["sizes"]
    records = sizes["reference"] + sizes["test"] + sizes["unseen"] + sizes["train_before_max_train"]
    assert records == shape["records"]
    assert len(data.preprocessing["feature_names_in"]) == shape["features"]
    assert data.n_classes == shape["classes"]
    assert data.n_features == shape["default_features"]
    if "files" in shape:
        assert {k: v for k, v in data.preprocessing["parse"]["records"].items() if k != "total"} == shape["files"]
    if "image" in shape:  # digits: 8 x 8 images flattened to 64 features
        assert data.preprocessing["parse"]["shape"] == [shape["records"], shape["features"]]
        assert shape["image"][0] * shape["image"][1] == shape["features"]


@pytest.mark.slow  # reads and verifies the real 70,000-image MNIST files
@pytest.mark.skipif(
    not (SHARED_MNIST / "train-images-idx3-ubyte.gz").is_file(),
    reason=f"MNIST IDX files not found at {SHARED_MNIST} (only the CI checkout has ../shared)",
)
def test_catalogue_shape_of_mnist_is_what_loading_gives() -> None:
    from audit.datasets import catalogue

    mnist = next(k for e in catalogue() for k in e["known"] if k["title"] == "MNIST")
    shape = mnist["shape"]
    data = load_dataset(f"idx:{SHARED_MNIST}", max_train=100)
    assert data.source["name"] == "MNIST"
    records = data.preprocessing["parse"]["records"]
    assert (records["train files"], records["t10k files"]) == (shape["train"], shape["test"])
    assert records["train files"] + records["t10k files"] == shape["records"]
    assert data.preprocessing["parse"]["image_shape"] == shape["image"]
    assert data.n_features == shape["features"] and data.n_classes == shape["classes"]


def test_loader_shape_and_known_are_checked() -> None:
    common = {"load": lambda **kw: None, "description": "", "source": "", "licence": "", "citation": ""}
    with pytest.raises(InvalidInput) as info:
        Loader(name="x", shape=[1, 2], **common)
    assert info.value.field == "Loader.shape"
    with pytest.raises(InvalidInput) as info:
        Loader(name="x", known={"title": "one"}, **common)  # a mapping, not a tuple of them
    assert info.value.field == "Loader.known"
    plain = Loader(name="x", **common)
    assert plain.shape is None and plain.known == ()
