"""fedsim.safefile and the output paths of every subcommand (issue 21, "Files")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_corpus import make_device

from fedsim import safefile
from fedsim.cli import main
from fedsim.errors import ConfigError, FedsimError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fedasync_quadratic.toml"


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code)


def _one_line_error(capsys, needle: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert needle in err, err


@pytest.mark.parametrize("make", ["symlink", "dangling", "fifo", "dir", "device"])
def test_check_output_file_refuses_non_regular(tmp_path, make):
    p = tmp_path / "out.csv"
    target = tmp_path / "target.csv"
    if make == "symlink":
        target.write_text("keep")
        p.symlink_to(target)
    elif make == "dangling":
        p.symlink_to(tmp_path / "nowhere")
    elif make == "fifo":
        os.mkfifo(p)
    elif make == "dir":
        p.mkdir()
    else:
        make_device(p)
    with pytest.raises(ConfigError, match="regular file or a new path"):
        safefile.check_output_file("--out", p)
    if make == "symlink":
        assert target.read_text() == "keep"


def test_check_output_dir_refuses_links_files_and_empty(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    make_device(tmp_path / "dev")
    for p in (tmp_path / "f", tmp_path / "link", tmp_path / "dev"):
        with pytest.raises(ConfigError, match="directory or a new path"):
            safefile.check_output_dir("--out", p)
    with pytest.raises(ConfigError, match="empty"):
        safefile.check_output_dir("--out", "")
    with pytest.raises(ConfigError, match="is not a directory"):
        safefile.check_output_dir("--out", tmp_path / "f" / "sub")
    assert safefile.check_output_dir("--out", tmp_path / "a" / "b") == tmp_path / "a" / "b"


def test_atomic_writer_replaces_a_file_and_never_writes_through_a_link(tmp_path):
    p = tmp_path / "x.txt"
    safefile.atomic_write_text(p, "one")
    safefile.atomic_write_text(p, "two")
    assert p.read_text() == "two"
    assert os.listdir(tmp_path) == ["x.txt"]
    victim = tmp_path / "victim"
    victim.write_text("intact")
    link = tmp_path / "link"
    link.symlink_to(victim)
    with pytest.raises(FedsimError, match="symlink"):
        safefile.atomic_write_text(link, "evil")
    assert victim.read_text() == "intact" and link.is_symlink()
    make_device(tmp_path / "dev")
    with pytest.raises(FedsimError, match="device|FIFO"):
        safefile.atomic_write_bytes(tmp_path / "dev", b"x")
    assert not (tmp_path / "dev").is_file()
    assert sorted(os.listdir(tmp_path)) == ["dev", "link", "victim", "x.txt"]  # no temporary


def test_link_planted_during_the_work_is_refused_at_the_rename(tmp_path):
    p = tmp_path / "out.csv"
    victim = tmp_path / "victim"
    victim.write_text("intact")
    with pytest.raises(FedsimError, match="symlink"), safefile.atomic_writer(p) as fh:
        fh.write("data")
        p.symlink_to(victim)
    assert victim.read_text() == "intact"
    assert sorted(os.listdir(tmp_path)) == ["out.csv", "victim"]


def test_lock_file_symlink_is_refused_and_its_target_untouched(tmp_path):
    from fedsim.validation.montecarlo_store import lock_run_dir

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".lock").symlink_to(victim)
    with pytest.raises(FedsimError, match="lock file"), lock_run_dir(run):
        pass
    assert victim.read_text() == "precious\n"


def test_stale_temporaries_removed_when_the_lock_is_taken(tmp_path):
    from fedsim.validation.montecarlo_store import lock_run_dir

    (tmp_path / "meta").mkdir()
    (tmp_path / ".tmp-abc-verdicts.csv").write_text("half")
    (tmp_path / "meta" / ".tmp-1.json").write_text("{")
    (tmp_path / "keep.json").write_text("{}")
    with lock_run_dir(tmp_path):
        pass
    left = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert left == [".lock", "keep.json"]


@pytest.mark.parametrize("argv,needle", [
    (["run", str(EXAMPLE), "--out", ""], "--out must be a path"),
    (["run", str(EXAMPLE), "--plot", "x.xyz"], "--plot must end in one of"),
    (["run", str(EXAMPLE), "--out", "dev"], "regular file or a new path"),
    (["run", str(EXAMPLE), "--out", "dev"], "a "),
    (["run", "/dev/zero"], "regular TOML file"),
    (["validate", "--suite", "smoke", "--out", ""], "--out must be a path"),
    (["validate", "--suite", "smoke", "--report", "dev"], "a "),
    (["report", "/nonexistent-run", "--out", "dev"], "a "),
    (["search", "theorem8", "--family", "theorem8-lemma", "--space", "n=1..3",
      "--out", ""], "--out must be a path"),
])
def test_cli_refuses_bad_output_paths_before_any_work(argv, needle, capsys, tmp_path,
                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_device(tmp_path / "dev")  # never the system's /dev/null: an unsafe writer replaces it
    assert _exit_code(argv) == 2
    _one_line_error(capsys, needle)
    assert os.listdir(tmp_path) == ["dev"]  # nothing written, not even a run directory
    assert not (tmp_path / "dev").is_file()


def test_cli_refuses_a_fifo_and_a_symlinked_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo.toml")
    assert main(["run", "fifo.toml"]) == 2
    _one_line_error(capsys, "regular TOML file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert main(["validate", "--suite", "smoke", "--out", "dangling"]) == 2
    _one_line_error(capsys, "a symlink")
    assert not (tmp_path / "nowhere").exists()


def test_deeply_nested_toml_is_a_config_error(tmp_path, capsys):
    p = tmp_path / "deep.toml"
    p.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["run", str(p)]) == 2
    _one_line_error(capsys, "invalid TOML")
