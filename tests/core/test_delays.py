"""Delay models (fedsim/delays.py): golden samples, analytic moments, support, validation, dicts."""

import math
import pickle
import tomllib

import numpy as np
import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import fedsim.delays.normal as delays_mod
from fedsim.delays import (
    KINDS,
    Constant,
    Delay,
    Empirical,
    Exponential,
    LogNormal,
    Normal,
    Uniform,
)
from fedsim.errors import ConfigError

SEED = 20261121

# ---------------------------------------------------------------------------------------------
# Golden samples: first four draws with SEED, computed once with numpy 2.4 / scipy 1.17 and
# checked by hand (e.g. Normal(1, 0.5): u = 0.637 -> P = Phi(-2) + u(1 - Phi(-2)) = 0.645
# -> z = 0.372 -> 1.186; Normal(100, 1, 0, 1) draws sit just below 1 since the mass piles up at
# the upper end; Empirical only returns its own values).
GOLDEN = [
    (Exponential(2.0), [0.1455341121338068, 0.4845422594783899, 0.1828226022559271,
                        0.1397413805622995]),
    (Normal(1.0, 0.5), [1.1863649511166945, 1.9168375973076595, 1.390558082686372,
                        1.8923637890049907]),
    (Normal(0.0, 1.0, 6.0, 8.0), [6.162483440940875, 6.526463371670501, 6.239529459715459,
                                  6.5102682644797385]),
    (Normal(0.0, 1.0, 40.0), [40.02531472323755, 40.08429988436679, 40.03753783537922,
                              40.08160846999066]),
    (Normal(100.0, 1.0, 0.0, 1.0), [0.9954462454077628, 0.9996492943902098, 0.9974590980179414,
                                    0.9996085337288179]),
    (LogNormal(0.0, 0.5), [1.0936281931873206, 1.3874887011060346, 1.2369414045198375,
                           1.5277857612971821]),
    (Uniform(1.0, 3.0), [2.2741370430990515, 2.931744966102777, 2.555145322338129,
                         2.92396467081485]),
    (Empirical([0.5, 1.0, 4.0]), [1.0, 1.0, 4.0, 4.0]),
]


@pytest.mark.parametrize("delay,expected", GOLDEN, ids=[repr(d) for d, _ in GOLDEN])
def test_golden_samples(delay, expected):
    x = delay.sample(np.random.default_rng(SEED), 4)
    np.testing.assert_allclose(x, expected, rtol=1e-15, atol=0)
    # scalar draws consume the stream exactly like a block
    rng = np.random.default_rng(SEED)
    y = [delay.sample(rng) for _ in range(4)]
    assert all(type(v) is float for v in y)
    np.testing.assert_allclose(y, expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("a,b,loc,sd", [(0.0, math.inf, 1.0, 0.5), (6.0, 8.0, 0.0, 1.0),
                                        (0.5, 2.0, 1.0, 3.0), (0.0, 1.0, 3.0, 1.0)])
def test_normal_is_exact_inverse_cdf(a, b, loc, sd):
    """Independent check of the sampler: same uniforms through scipy's truncnorm.ppf."""
    d = Normal(loc, sd, a, b)
    x = d.sample(np.random.default_rng(7), 1000)
    u = np.random.default_rng(7).random(1000)
    ref = stats.truncnorm.ppf(u, (a - loc) / sd, (b - loc) / sd, loc=loc, scale=sd)
    np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-12)


def test_normal_log_space_path_agrees_with_direct_path(monkeypatch):
    """Force the log-space sampler on moderate intervals: it must give the same draws."""
    cases = [(1.0, 0.5, 0.0, math.inf), (0.0, 1.0, 6.0, 8.0), (10.0, 2.0, 0.0, 3.0)]
    direct = [Normal(*c).sample(np.random.default_rng(3), 500) for c in cases]
    monkeypatch.setattr(delays_mod, "_LOG_SPACE_CUTOFF", -math.inf)
    for c, x in zip(cases, direct, strict=True):
        d = Normal(*c)
        assert d._log
        np.testing.assert_allclose(d.sample(np.random.default_rng(3), 500), x, rtol=1e-12)


def test_sample_types_and_shapes():
    rng = np.random.default_rng(0)
    for cls in (Exponential(1.0), Normal(1.0, 1.0), LogNormal(0.0, 1.0), Uniform(0.0, 1.0),
                Constant(2.0), Empirical([1.0, 2.0])):
        assert type(cls.sample(rng)) is float
        a = cls.sample(rng, 5)
        assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (5,)
        b = cls.sample(rng, (2, 3))
        assert b.dtype == np.float64 and b.shape == (2, 3)


def test_constant_does_not_consume_the_stream():
    rng = np.random.default_rng(1)
    assert Constant(0.0).sample(rng) == 0.0
    np.testing.assert_array_equal(Constant(1.5).sample(rng, 3), [1.5, 1.5, 1.5])
    assert rng.random() == np.random.default_rng(1).random()


# ---------------------------------------------------------------------------------------------
# Hand-computed analytic moments.
def test_hand_computed_moments():
    assert Exponential(2.0).mean == 0.5 and Exponential(2.0).variance == 0.25
    assert Uniform(1.0, 3.0).mean == 2.0 and Uniform(1.0, 3.0).variance == pytest.approx(1 / 3,
                                                                                           rel=1e-15)
    assert Uniform(2.0, 2.0).variance == 0.0
    assert Constant(3.0).mean == 3.0 and Constant(3.0).variance == 0.0
    ln = LogNormal(0.0, 1.0)
    assert ln.mean == pytest.approx(math.exp(0.5), rel=1e-15)
    assert ln.variance == pytest.approx((math.e - 1) * math.e, rel=1e-14)
    half = Normal(0.0, 1.0)  # half-normal: truncated at low = 0
    assert half.mean == pytest.approx(math.sqrt(2 / math.pi), rel=1e-15)
    assert half.variance == pytest.approx(1 - 2 / math.pi, rel=1e-14)
    far = Normal(100.0, 2.0)  # the truncation at 0 is 50 sd away: no visible effect
    assert far.mean == 100.0 and far.variance == pytest.approx(4.0, rel=1e-15)
    e = Empirical([1.0, 2.0, 6.0])
    assert e.mean == 3.0 and e.variance == pytest.approx(14 / 3, rel=1e-15)
    assert (e.lower, e.upper) == (1.0, 6.0)


@pytest.mark.parametrize("loc,sd,low,high", [(1.0, 1.0, 0.0, math.inf), (5.0, 2.0, 1.0, 4.0),
                                             (0.0, 1.0, 6.0, 8.0), (0.0, 1.0, 8.0, math.inf),
                                             (3.0, 0.1, 2.9, 3.05), (20.0, 1.0, 0.0, 15.0)])
def test_truncated_normal_moments_match_scipy(loc, sd, low, high):
    d = Normal(loc, sd, low, high)
    a, b = (low - loc) / sd, (high - loc) / sd
    m, v = stats.truncnorm.stats(a, b, loc=loc, scale=sd, moments="mv")
    assert d.mean == pytest.approx(float(m), rel=1e-12)
    assert d.variance == pytest.approx(float(v), rel=1e-10)


def test_truncated_normal_far_tail_moments_asymptotics():
    """Beyond scipy's reach.  Normal(0, 1) truncated to [t, inf) has mean lambda(t) (inverse
    Mills ratio) = t + e, e = 1/t - 2/t^3 + 10/t^5 - 74/t^7 + 706/t^9 + O(t^-11), and variance
    1 - lambda e = 1/t^2 - 6/t^4 + 50/t^6 - 518/t^8 + O(t^-10); tolerances cover the
    series remainder only (the implementation does not cancel catastrophically)."""
    for t, rtol_var in ((40.0, 1e-8), (100.0, 1e-11), (500.0, 1e-13), (1e4, 1e-14)):
        e = 1 / t - 2 / t ** 3 + 10 / t ** 5 - 74 / t ** 7 + 706 / t ** 9
        var = 1 / t ** 2 - 6 / t ** 4 + 50 / t ** 6 - 518 / t ** 8
        d = Normal(0.0, 1.0, t)
        assert d._log
        assert d.mean == pytest.approx(t + e, rel=1e-15)
        assert d.variance == pytest.approx(var, rel=rtol_var)
        mirrored = Normal(t + 1.0, 1.0, 0.0, 1.0)  # the mass piles up at the upper end
        assert mirrored._log
        assert 1.0 - mirrored.mean == pytest.approx(e, rel=1e-15 * t)
        assert mirrored.variance == pytest.approx(var, rel=rtol_var)


@pytest.mark.parametrize("a,b,rtol_var", [(20.0, 21.0, 1e-12), (40.0, 40.01, 1e-12),
                                          (6.0, 8.0, 1e-12), (8.0, 60.0, 1e-12),
                                          (3.0, 3.1, 1e-12), (-2.0, 0.5, 1e-12),
                                          (3.0, 3.001, 1e-7), (-0.001, 0.001, 1e-8)])
def test_truncated_normal_moments_match_quadrature(a, b, rtol_var):
    """Reference by adaptive quadrature of the shifted density exp(-(x-a)(x+a)/2) on [a, b]
    (no underflow; quad's relative accuracy ~1e-13).  The last two intervals are very
    narrow, where the documented loss of digits in the variance applies."""
    from scipy.integrate import quad

    def f(x):
        return math.exp(-0.5 * (x - a) * (x + a))

    kw = {"epsabs": 0.0, "epsrel": 1e-13, "limit": 200}
    z = quad(f, a, b, **kw)[0]
    m = quad(lambda x: (x - a) * f(x), a, b, **kw)[0] / z
    v = quad(lambda x: (x - a - m) ** 2 * f(x), a, b, **kw)[0] / z
    loc = 0.0 if a >= 0 else 5.0  # keep low >= 0
    d = Normal(loc, 1.0, a + loc, b + loc)
    assert d.mean - loc == pytest.approx(a + m, rel=1e-13, abs=1e-15)
    assert d.variance == pytest.approx(v, rel=rtol_var)
    # the mirrored interval (lower tail) gives the mirrored answer
    dm = Normal(100.0, 1.0, 100.0 - b, 100.0 - a)
    assert 100.0 - dm.mean == pytest.approx(a + m, rel=1e-13, abs=1e-13)
    assert dm.variance == pytest.approx(v, rel=max(rtol_var, 1e-11))


# ---------------------------------------------------------------------------------------------
# Statistical checks of sample moments against the analytic ones.
Z_CRIT = 5.0  # two-sided P(|N(0,1)| > 5) = 5.7e-7 <= 1e-6 per check
N_STAT = 200_000
STAT_CASES = [Exponential(3.0), Normal(1.0, 0.5), Normal(0.0, 1.0, 6.0, 8.0),
              Normal(0.0, 1.0, 40.0, 41.0), Normal(50.0, 1.0, 0.0, 1.0), Normal(2.0, 3.0, 1.0, 9.0),
              LogNormal(0.5, 0.5), Uniform(0.5, 2.0), Empirical([0.0, 0.5, 3.0, 3.0, 7.5])]


@pytest.mark.parametrize("delay", STAT_CASES, ids=repr)
def test_sample_mean_and_variance_match_analytic(delay):
    """z-tests with false-alarm rate <= 1e-6 each (|z| <= 5, two-sided 5.7e-7).

    The seed is fixed so the test is deterministic, but the threshold is set as if it were
    random.  Mean: SE = sqrt(var/n) with the analytic variance.  Variance: SE =
    sqrt((m4 - s^4)/n) with the sample fourth central moment m4 (delta method).
    """
    x = delay.sample(np.random.default_rng(SEED + 1), N_STAT)
    z_mean = (x.mean() - delay.mean) / math.sqrt(delay.variance / N_STAT)
    c = x - x.mean()
    s2 = np.mean(c ** 2)
    m4 = np.mean(c ** 4)
    z_var = (s2 * N_STAT / (N_STAT - 1) - delay.variance) / math.sqrt((m4 - s2 ** 2) / N_STAT)
    assert abs(z_mean) < Z_CRIT, z_mean
    assert abs(z_var) < Z_CRIT, z_var


def test_moment_test_can_fail():
    """Negative control: the same z-test flags a 2% error in the claimed mean or variance."""
    d = Normal(1.0, 0.5)
    x = d.sample(np.random.default_rng(SEED + 1), N_STAT)
    assert abs((x.mean() - 1.02 * d.mean) / math.sqrt(d.variance / N_STAT)) > Z_CRIT
    c = x - x.mean()
    se = math.sqrt((np.mean(c ** 4) - np.mean(c ** 2) ** 2) / N_STAT)
    assert abs((np.var(x, ddof=1) - 1.02 * d.variance) / se) > Z_CRIT


@pytest.mark.parametrize("d", [Normal(1.0, 0.5), Normal(0.0, 1.0, 6.0, 8.0),
                               Normal(2.0, 3.0, 1.0, 9.0)], ids=repr)
def test_truncated_normal_distribution_ks(d):
    """Kolmogorov-Smirnov against scipy's truncnorm CDF; false-alarm rate 1e-6 (p > 1e-6)."""
    x = d.sample(np.random.default_rng(11), 20_000)
    a, b = (d.low - d.loc) / d.sd, (d.high - d.loc) / d.sd
    p = stats.kstest(x, stats.truncnorm(a, b, loc=d.loc, scale=d.sd).cdf).pvalue
    assert p > 1e-6


def test_empirical_resamples_its_values_uniformly():
    """Chi-square goodness of fit on 3 cells; false-alarm rate 1e-6."""
    e = Empirical([1.0, 2.0, 2.0, 9.0])
    x = e.sample(np.random.default_rng(5), 40_000)
    assert set(np.unique(x)) == {1.0, 2.0, 9.0}
    counts = [np.sum(x == v) for v in (1.0, 2.0, 9.0)]
    p = stats.chisquare(counts, f_exp=[10_000, 20_000, 10_000]).pvalue
    assert p > 1e-6


# ---------------------------------------------------------------------------------------------
# Support (hypothesis).
finite_pos = st.floats(1e-3, 1e3)


@st.composite
def any_delay(draw):
    kind = draw(st.sampled_from(sorted(KINDS)))
    if kind == "exponential":
        return Exponential(draw(finite_pos))
    if kind == "normal":
        low = draw(st.floats(0.0, 100.0))
        width = draw(st.one_of(st.just(math.inf), st.floats(1e-3, 100.0)))
        return Normal(draw(st.floats(-200.0, 200.0)), draw(st.floats(1e-2, 50.0)), low,
                      low + width)
    if kind == "lognormal":
        return LogNormal(draw(st.floats(-5.0, 5.0)), draw(st.floats(1e-2, 3.0)))
    if kind == "uniform":
        low = draw(st.floats(0.0, 100.0))
        return Uniform(low, low + draw(st.floats(0.0, 100.0)))
    if kind == "constant":
        return Constant(draw(st.floats(0.0, 1e6)))
    return Empirical(draw(st.lists(st.floats(0.0, 1e6), min_size=1, max_size=20)))


@settings(max_examples=50, deadline=None)
@given(any_delay(), st.integers(0, 2**32 - 1))
def test_samples_respect_support(delay, seed):
    x = delay.sample(np.random.default_rng(seed), 2000)
    assert 0.0 <= delay.lower <= delay.upper
    assert np.all(np.isfinite(x))
    assert np.all(x >= delay.lower) and np.all(x <= delay.upper)
    assert delay.lower <= delay.mean <= delay.upper
    assert delay.variance >= 0.0
    assert Delay.from_dict(delay.to_dict()) == delay


# ---------------------------------------------------------------------------------------------
# Validation.
BAD = [
    (Exponential, {"rate": -1.0}, "rate must be > 0, got rate=-1.0"),
    (Exponential, {"rate": 0.0}, "rate must be > 0"),
    (Exponential, {"rate": math.inf}, "rate must be finite, got rate=inf"),
    (Exponential, {"rate": math.nan}, "rate must not be NaN"),
    (Exponential, {"rate": "2"}, "rate must be a number"),
    (Exponential, {"rate": True}, "rate must be a number"),
    (Normal, {"mean": 1.0, "sd": 0.0}, "sd must be > 0"),
    (Normal, {"mean": 1.0, "sd": -1.0}, "sd must be > 0"),
    (Normal, {"mean": 1.0, "sd": math.inf}, "sd must be finite"),
    (LogNormal, {"mu": 0.0, "sigma": math.inf}, "sigma must be finite"),
    (Normal, {"mean": math.inf, "sd": 1.0}, "mean must be finite"),
    (Normal, {"mean": 1.0, "sd": 1.0, "low": -0.5}, "low must be >= 0"),
    (Normal, {"mean": 1.0, "sd": 1.0, "low": 2.0, "high": 2.0}, "high must be > low=2.0"),
    (Normal, {"mean": 1.0, "sd": 1.0, "low": 3.0, "high": 2.0}, "high must be > low"),
    (Normal, {"mean": 1.0, "sd": 1.0, "low": math.inf}, "low must be >= 0 and finite"),
    (Normal, {"mean": 1e10, "sd": 1e-300, "low": 0.0, "high": 1.0}, "sd must not be so small"),
    (Exponential, {"rate": 1e-320}, "rate must be large enough that the mean 1/rate is finite"),
    (LogNormal, {"mu": 0.0, "sigma": 0.0}, "sigma must be > 0"),
    (LogNormal, {"mu": 300.0, "sigma": 8.0}, "sigma must satisfy mu \\+ sigma\\^2 < 350"),
    (LogNormal, {"mu": math.nan, "sigma": 1.0}, "mu must not be NaN"),
    (Uniform, {"low": -1.0, "high": 1.0}, "low must be >= 0"),
    (Uniform, {"low": 2.0, "high": 1.0}, "high must be finite and >= low=2.0"),
    (Uniform, {"low": 0.0, "high": math.inf}, "high must be finite"),
    (Constant, {"value": -0.1}, "value must be >= 0 and finite, got value=-0.1"),
    (Constant, {"value": math.inf}, "value must be >= 0 and finite"),
    (Empirical, {"samples": []}, "samples must be non-empty"),
    (Empirical, {"samples": [1.0, -2.0]}, "samples must contain only values >= 0"),
    (Empirical, {"samples": [1.0, math.nan]}, "samples must contain only finite values"),
    (Empirical, {"samples": [[1.0], [2.0]]}, "samples must be one-dimensional"),
    (Empirical, {"samples": "123"}, "samples must be a sequence of numbers"),
    (Empirical, {"samples": ["a"]}, "samples must be a sequence of numbers"),
]


@pytest.mark.parametrize("cls,kwargs,msg", BAD, ids=[f"{c.__name__}-{m}" for c, _, m in BAD])
def test_bad_parameters_raise_config_error(cls, kwargs, msg):
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(".", r"\.")):
        cls(**kwargs)
    # the dict route gives the same rule, with the dotted field name
    with pytest.raises(ConfigError, match="delays.upload."):
        Delay.from_dict({"kind": cls.kind, **kwargs}, "delays.upload")


def test_from_dict_errors_name_the_key():
    with pytest.raises(ConfigError, match="delays.compute.kind must be one of"):
        Delay.from_dict({"kind": "gamma", "shape": 2.0}, "delays.compute")
    with pytest.raises(ConfigError, match="kind is required"):
        Delay.from_dict({"rate": 2.0})
    with pytest.raises(ConfigError, match="scale is not a parameter of a exponential delay"):
        Delay.from_dict({"kind": "exponential", "rate": 2.0, "scale": 1.0})
    with pytest.raises(ConfigError, match="sd is required for a normal delay"):
        Delay.from_dict({"kind": "normal", "mean": 1.0})
    with pytest.raises(ConfigError, match="delays.upload.rate must be > 0, "
                                          "got delays.upload.rate=-1.0"):
        Delay.from_dict({"kind": "exponential", "rate": -1.0}, "delays.upload")
    with pytest.raises(ConfigError, match="delay must be a table"):
        Delay.from_dict([("kind", "constant")])


def test_dict_and_toml_round_trip():
    ds = [Exponential(2.0), Normal(1.0, 0.5), Normal(2.0, 1.0, 0.5, 3.0), LogNormal(-1.0, 0.3),
          Uniform(0.0, 2.0), Constant(0.0), Empirical([0.25, 1.0, 1.0])]
    assert Delay.from_dict({"kind": "exponential", "rate": 2}) == Exponential(2.0)
    assert Normal(1.0, 0.5).to_dict() == {"kind": "normal", "mean": 1.0, "sd": 0.5, "low": 0.0,
                                          "high": math.inf}
    doc = {f"d{i}": d.to_dict() for i, d in enumerate(ds)}
    back = tomllib.loads(tomli_w.dumps(doc))
    for i, d in enumerate(ds):
        assert Delay.from_dict(back[f"d{i}"]) == d


def test_repr_shows_parameters_and_objects_are_frozen():
    assert repr(Exponential(2.0)) == "Exponential(rate=2.0)"
    assert repr(Normal(1, 0.5)) == "Normal(mean=1.0, sd=0.5, low=0.0, high=inf)"
    assert repr(LogNormal(0, 1)) == "LogNormal(mu=0.0, sigma=1.0)"
    assert repr(Uniform(0, 1)) == "Uniform(low=0.0, high=1.0)"
    assert repr(Constant(0)) == "Constant(value=0.0)"
    assert repr(Empirical([1, 2])) == "Empirical(samples=(1.0, 2.0))"
    assert repr(Empirical(list(range(10)))).startswith("Empirical(samples=(0.0, 1.0, 2.0, 3.0, ...")
    with pytest.raises(AttributeError):
        Exponential(1.0).rate = 2.0  # type: ignore[misc]
    assert Normal(1.0, 0.5).loc == 1.0 and Normal(1.0, 0.5).mean > 1.0  # truncated mean
    assert hash(Normal(1.0, 0.5)) == hash(Normal(1.0, 0.5))


def test_pickle_round_trip():
    """Scenarios travel to worker processes: every model must survive pickling intact."""
    rng_state = np.random.default_rng(4)
    for d in (Exponential(2.0), Normal(1.0, 0.5, 0.2, 3.0), Normal(0.0, 1.0, 40.0),
              LogNormal(0.0, 0.5), Uniform(0.0, 1.0), Constant(1.0), Empirical([1.0, 3.0])):
        back = pickle.loads(pickle.dumps(d))
        assert back == d and repr(back) == repr(d)
        assert (back.mean, back.variance, back.lower, back.upper) == (d.mean, d.variance,
                                                                     d.lower, d.upper)
        seed = int(rng_state.integers(2**31))
        np.testing.assert_array_equal(back.sample(np.random.default_rng(seed), 5),
                                      d.sample(np.random.default_rng(seed), 5))
