"""splits: reproducible partitions, the test split leaves the training rows alone, inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from fedsim.errors import ConfigError
from fedsim.problems import data, splits

LABELS = np.asarray(load_digits().target, dtype=np.int64)


def _check_partition(parts, n_rows):
    allrows = np.concatenate(parts)
    assert allrows.size == np.unique(allrows).size  # disjoint
    assert allrows.min() >= 0 and allrows.max() < n_rows
    for p in parts:
        assert np.all(np.diff(p) > 0)


@pytest.mark.parametrize("split", splits.SPLITS)
def test_reproducible_and_seed_sensitive(split):
    a = splits.partition(LABELS, 8, split=split, seed=4, min_rows=5)
    b = splits.partition(LABELS, 8, split=split, seed=4, min_rows=5)
    c = splits.partition(LABELS, 8, split=split, seed=5, min_rows=5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    _check_partition(a, LABELS.size)
    if split not in ("classes", "perfedavg"):
        assert sum(p.size for p in a) == LABELS.size


#: sha256 of each partition (seed 11, 6 clients) as fedsim.problems.data drew it before its
#: partitions became these functions: the same rows, so digits problems did not change
GOLDEN_PARTITIONS = {
    "iid": ("7d1d5aa0bd49d795f18266275e3fe7c5f861667b2b04c0fcee6da06c56a577e5",
            [300, 300, 300, 299, 299, 299]),
    "dirichlet": ("4f2a5b3cdf7dfd831bcec12b04d1af194a009862bd7e675113f51c53df83b10d",
                  [225, 38, 415, 358, 379, 382]),
    "classes": ("da4fd826601339df56dba7f97b883bbc9490b5843c6447ca21658827bda70040",
                [269, 274, 355, 360, 269, 270]),
}


@pytest.mark.parametrize("split", list(GOLDEN_PARTITIONS))
def test_same_rows_as_before(split):
    """The partitions draw the rows they drew before the data module delegated to them."""
    import hashlib

    rng = np.random.default_rng(11)
    if split == "iid":
        parts = data.partition_iid(LABELS.size, 6, rng)
    elif split == "dirichlet":
        parts = data.partition_dirichlet(LABELS, 6, 0.3, rng, 10)
    else:
        parts = data.partition_classes(LABELS, 6, 3, rng)
    digest = hashlib.sha256(b"".join(np.asarray(x, dtype=np.int64).tobytes() + b"|"
                                     for x in parts)).hexdigest()
    assert (digest, [x.size for x in parts]) == GOLDEN_PARTITIONS[split]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), frac=st.sampled_from([0.1, 0.2, 0.25, 0.5]),
       split=st.sampled_from(splits.SPLITS), seed=st.integers(0, 2**20))
def test_test_split_leaves_training_rows_unchanged(n, frac, split, seed):
    kw = dict(split=split, seed=seed, a=0.5, classes_per_client=3, min_train=5)
    try:
        none = splits.split_dataset(LABELS, n, **kw)
    except ConfigError:  # e.g. too many clients for "classes"
        return
    some = splits.split_dataset(LABELS, n, test_fraction=frac, **kw)
    more = splits.split_dataset(LABELS, n, test_fraction=min(0.9, frac + 0.2), **kw)
    for i in range(n):
        rows = none.train[i]
        assert none.test[i].size == 0
        # train and test partition the client's rows; train keeps their order
        assert np.array_equal(np.union1d(some.train[i], some.test[i]), rows)
        assert np.intersect1d(some.train[i], some.test[i]).size == 0
        assert np.all(np.isin(some.train[i], rows)) and np.all(np.diff(some.train[i]) > 0)
        assert some.train[i].size >= 5
        # nested: a larger fraction holds out a superset
        assert np.all(np.isin(some.test[i], more.test[i]))
        if rows.size - 5 >= round(frac * rows.size + 1e-9):
            assert some.test[i].size == int(np.floor(frac * rows.size + 0.5))


def test_perfedavg_split_is_the_papers_construction():
    """[PF] Sec. 5: half the users hold a rows of each of the first five classes, the rest
    a/2 of one first-half class and 2a of one second-half class; a is the largest even
    count the rows allow (digits, n = 50: a = 6, since class 0..4 each need 25 a + 5 a/2
    <= 178 rows while a = 8 needs 220)."""
    parts = splits.partition(LABELS, 50, split="perfedavg", seed=3)
    _check_partition(parts, LABELS.size)
    counts = np.array([np.bincount(LABELS[p], minlength=10) for p in parts])
    assert np.all(counts[:25, :5] == 6) and np.all(counts[:25, 5:] == 0)
    for j, row in enumerate(counts[25:]):
        expect = np.zeros(10, dtype=np.int64)
        expect[j % 5], expect[5 + j % 5] = 3, 12
        assert np.array_equal(row, expect)
    # odd n: floor(n/2) users of type (i); a grows when fewer users share the rows
    odd = splits.partition(LABELS, 7, split="perfedavg", seed=3)
    c7 = np.array([np.bincount(LABELS[p], minlength=10) for p in odd])
    a = int(c7[0, 0])
    assert a % 2 == 0 and np.all(c7[:3, :5] == a) and c7[3].sum() == a // 2 + 2 * a
    with pytest.raises(ConfigError):
        splits.partition(LABELS, 1, split="perfedavg")


def test_test_split_stream_is_per_client():
    parts = splits.partition(LABELS, 4, seed=0)
    _, t1 = splits.train_test_split(parts, 0.3, seed=0)
    parts2 = [parts[0], parts[1], parts[2][:50], parts[3]]
    _, t2 = splits.train_test_split(parts2, 0.3, seed=0)
    assert np.array_equal(t1[0], t2[0]) and np.array_equal(t1[3], t2[3])


@settings(max_examples=20, deadline=None)
@given(a=st.sampled_from([0.05, 0.5, 100.0]), n=st.integers(2, 30), seed=st.integers(0, 999))
def test_dirichlet_properties(a, n, seed):
    parts = splits.partition(LABELS, n, split="dirichlet", a=a, seed=seed, min_rows=3)
    _check_partition(parts, LABELS.size)
    assert sum(p.size for p in parts) == LABELS.size
    assert min(p.size for p in parts) >= 3


def test_dirichlet_skew_grows_as_a_shrinks():
    def mean_classes(a):
        tot = 0.0
        for seed in range(5):
            parts = splits.partition(LABELS, 10, split="dirichlet", a=a, seed=seed)
            tot += np.mean([np.sum(np.bincount(LABELS[p], minlength=10) >= 0.05 * p.size)
                            for p in parts])
        return tot / 5

    assert mean_classes(0.05) < mean_classes(1.0) < mean_classes(1000.0)
    assert mean_classes(1000.0) >= 9.5


@settings(max_examples=20, deadline=None)
@given(c=st.integers(1, 10), n=st.integers(1, 20), seed=st.integers(0, 999))
def test_classes_per_client(c, n, seed):
    parts = splits.partition(LABELS, n, split="classes", classes_per_client=c, seed=seed)
    _check_partition(parts, LABELS.size)
    for i, p in enumerate(parts):
        held = set(np.unique(LABELS[p]).tolist())
        assert held == {(i * c + j) % 10 for j in range(c)}
    if n * c >= 10:
        assert sum(p.size for p in parts) == LABELS.size


def test_iid_sizes_near_equal():
    parts = splits.partition(LABELS, 7, split="iid", seed=2)
    sizes = [p.size for p in parts]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == LABELS.size


def test_client_rates():
    assert np.array_equal(splits.client_rates(3, rate=10.0), np.full(3, 10.0))
    r = splits.client_rates(2000, kind="truncated_normal", mean=10.0, sd=5.0, low=0.1, seed=1)
    assert np.array_equal(r, splits.client_rates(2000, kind="truncated_normal", mean=10.0,
                                                 sd=5.0, low=0.1, seed=1))
    assert r.min() >= 0.1 and 10.0 < r.mean() < 11.5


@pytest.mark.parametrize("call, field", [
    (lambda: splits.partition(LABELS, 0), "n_clients"),
    (lambda: splits.partition(LABELS, 2.0), "n_clients"),
    (lambda: splits.partition(LABELS, 2, split="pathological"), "split"),
    (lambda: splits.partition(LABELS, 2, split="dirichlet", a=0.0), "a"),
    (lambda: splits.partition(LABELS, 2, split="dirichlet", a=float("nan")), "a"),
    (lambda: splits.partition(LABELS, 2, split="classes", classes_per_client=11),
     "classes_per_client"),
    (lambda: splits.partition(LABELS, 2, seed=-1), "seed"),
    (lambda: splits.partition(LABELS, 2, min_rows=0), "min_rows"),
    (lambda: splits.partition(LABELS, 1000, min_rows=2), "n_clients"),
    (lambda: splits.partition(LABELS.astype(float), 2), "labels"),
    (lambda: splits.split_dataset(LABELS, 2, test_fraction=1.0), "test_fraction"),
    (lambda: splits.split_dataset(LABELS, 2, test_fraction=-0.1), "test_fraction"),
    (lambda: splits.split_dataset(LABELS, 2, test_fraction=True), "test_fraction"),
    (lambda: splits.train_test_split([np.arange(3)], 0.5, min_train=4), "parts"),
    (lambda: splits.client_rates(2, rate=0.0), "rate"),
    (lambda: splits.client_rates(2, kind="gamma"), "kind"),
    (lambda: splits.client_rates(2, kind="truncated_normal", sd=0.0), "sd"),
])
def test_bad_inputs(call, field):
    with pytest.raises(ConfigError, match=rf"^{field}"):
        call()
