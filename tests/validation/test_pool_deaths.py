"""A pool whose workers keep dying stops after a few tries with the first death's error
(issue 31, Deliver 2); an unguarded script is refused before any worker starts."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from fedsim.validation.montecarlo import run_tasks
from fedsim.validation.montecarlo_backends import MAX_WORKER_DEATHS
from fedsim.validation.montecarlo_store import Task

from fedsim.errors import FedsimError

FN = "fedsim.validation._selftest:normal_mean"


def test_workers_that_always_die_stop_the_run(tmp_path):
    flag = tmp_path / "CRASH"
    flag.touch()
    tasks = [Task(f"rep{r:03d}", FN, {"seed": 11, "replicate": r, "n": 5,
                                      "crash_if": str(flag)}) for r in range(12)]
    with pytest.raises(FedsimError, match=f"keep dying \\({MAX_WORKER_DEATHS} in a row"):
        run_tasks(tasks, tmp_path / "run", workers=2, progress=False)
    flag.unlink()  # the cause gone, the same run directory resumes and finishes
    res = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    assert all(r["status"] == "ok" for r in res.values())


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_the_main_guard_is_refused_at_once(tmp_path, guarded):
    body = 'fedsim.validation.validate("smoke", out="v")\n'
    if guarded:  # a refused argument, so the suite does not run
        body = ('if __name__ == "__main__":\n    '
                'fedsim.validation.validate("smoke", out="v", replicates=10**12)\n')
    script = tmp_path / "s.py"
    script.write_text("import fedsim.validation\n" + body)
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    last = r.stderr.strip().splitlines()[-1]
    if guarded:  # the guard is there: the next check (the CLI's replicate cap) speaks
        assert "replicates must be <= 1000000" in last, r.stderr
    else:
        assert "if __name__ == \"__main__\":" in last and "line 2" in last, r.stderr
    assert not (tmp_path / "v").exists()


def test_guard_detection_reads_the_calling_line(tmp_path):
    from fedsim.validation.montecarlo_backends import check_main_guarded

    script = tmp_path / "g.py"
    script.write_text(textwrap.dedent("""\
        from fedsim.validation.montecarlo_backends import check_main_guarded
        def f():
            check_main_guarded()
        if __name__ == "__main__":
            f()
        print("guarded ok")
        try:
            f()
        except Exception as exc:
            print("refused:", exc)
        """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=300)
    assert "guarded ok" in r.stdout and "refused:" in r.stdout and "line 8" in r.stdout, r
    check_main_guarded()  # pytest's own __main__: fine
