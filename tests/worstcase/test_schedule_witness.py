"""A delay list's quadratic witness as a scenario fedsim runs (fedsim.worstcase.
schedule_witness): the recorded timeline replays the schedule and reproduces the value."""

import pytest

import fedsim
from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd
from fedsim.worstcase.schedule_witness import recorded_witness

NC = FunctionClass(kind="nonconvex", L=1.0)


def test_inconsistent_or_multi_step_schedules_say_why(tmp_path):
    # version 2 read twice (steps 3 and 4): not a one-job-per-worker timeline
    got = recorded_witness(delayed_gd(0.1), NC, Schedule.from_delays([0, 0, 0, 1]),
                           "avg_grad_sq", 1.0, tmp_path)
    assert "reads version 2 a second time" in got["reason"]
    got = recorded_witness(FedAsync(eta=0.1, Q=2), NC, Schedule.constant(1, 4),
                           "avg_grad_sq", 1.0, tmp_path)
    assert "Q = 1" in got["reason"]


@pytest.mark.slow
def test_fedsim_run_reproduces_the_quadratic_witness(tmp_path):
    sched = Schedule.constant(2, 6)         # reads 0, 0, 0, 1, 2, 3: three workers
    got = recorded_witness(delayed_gd(0.3), NC, sched, "avg_grad_sq", 2.0, tmp_path, points=201)
    assert got["schedule"].read_text().split()[-6:] == ["0", "1", "2", "2", "2", "2"]
    tr = fedsim.run(fedsim.load(got["toml"]))
    df = tr.metrics_frame()
    assert df["grad_sq"].iloc[:6].mean() == pytest.approx(got["value"], rel=1e-12)
    assert tr.to_pandas()["staleness_steps"].tolist()[1:] == [0, 1, 2, 2, 2, 2]
