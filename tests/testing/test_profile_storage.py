"""The ``fedsim`` hypothesis profile writes nothing to ``.hypothesis/`` (issue 30): no example
database, and hypothesis's constants cache (it parses local source files, an editable
fedsim's among them) goes to a temporary directory.  At 3788ae3 a plug-in's property test
left about 160 files there."""

from __future__ import annotations

import os
import subprocess
import sys

TEST = '''
from hypothesis import given, strategies as st
from fedsim.testing import fedsim_profile

@fedsim_profile
@given(st.integers(0, 10))
def test_square_is_not_negative(x):
    assert x * x >= 0
'''


def test_a_fedsim_profile_session_leaves_no_hypothesis_folder(tmp_path):
    (tmp_path / "test_one.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--hypothesis-profile=fedsim", "test_one.py"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / ".hypothesis").exists(), sorted(
        str(p.relative_to(tmp_path)) for p in (tmp_path / ".hypothesis").rglob("*"))[:5]
