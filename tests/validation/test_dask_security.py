"""Issue 14 item 8: ``fedsim validate --dask tls://... --dask-tls-ca/--dask-tls-cert/
--dask-tls-key`` builds a ``distributed.Security`` and it reaches the Client."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from fedsim.validation import montecarlo_backends as backends
from fedsim.validation.montecarlo import Task, payload_hash

distributed = pytest.importorskip("distributed")

FN = "fedsim.validation._selftest:normal_mean"


def _certs(d: Path) -> dict[str, Path]:
    """A CA and one certificate it signs (for 127.0.0.1), made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not available")

    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
         "-keyout", "ca.key", "-out", "ca.pem")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", "node.key", "-out", "node.csr")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "node.pem")
    return {"ca": d / "ca.pem", "cert": d / "node.pem", "key": d / "node.key"}


def _fake_suite(monkeypatch) -> dict:
    seen: dict = {}

    def run_suite(suite, **kw):
        seen.update(kw)
        return {"verdicts": "v.csv", "report": None}

    monkeypatch.setitem(sys.modules, "fedsim.validation.suites",
                        types.SimpleNamespace(run_suite=run_suite))
    return seen


def test_tls_options_build_the_security_passed_to_run_suite(tmp_path, monkeypatch):
    from fedsim.cli import main

    c = _certs(tmp_path)
    seen = _fake_suite(monkeypatch)
    assert main(["validate", "--suite", "quick", "--out", str(tmp_path / "r"), "--dask",
                 "tls://10.0.0.5:8786", "--dask-tls-ca", str(c["ca"]), "--dask-tls-cert",
                 str(c["cert"]), "--dask-tls-key", str(c["key"])]) == 0
    sec = seen["dask_security"]
    assert isinstance(sec, distributed.Security)
    assert (sec.tls_ca_file, sec.tls_client_cert, sec.tls_client_key) == (
        str(c["ca"]), str(c["cert"]), str(c["key"]))
    assert sec.require_encryption is True
    assert seen["dask"] == "tls://10.0.0.5:8786"


@pytest.mark.parametrize("argv, needle", [
    (["--dask", "tls://h:1", "--dask-tls-ca", "{ca}"], "--dask-tls-cert, --dask-tls-key missing"),
    (["--dask", "tcp://h:1", "--dask-tls-ca", "{ca}", "--dask-tls-cert", "{cert}",
      "--dask-tls-key", "{key}"], "need a tls:// scheduler address"),
    (["--dask", "local", "--dask-tls-ca", "{ca}", "--dask-tls-cert", "{cert}",
      "--dask-tls-key", "{key}"], "need a tls:// scheduler address"),
    (["--dask", "tls://h:1", "--dask-tls-ca", "{ca}", "--dask-tls-cert", "{cert}",
      "--dask-tls-key", "/no/such.key"], "--dask-tls-key /no/such.key: no such file"),
])
def test_bad_tls_options_exit_2_with_one_line(tmp_path, monkeypatch, capsys, argv, needle):
    from fedsim.cli import main

    files = {k: tmp_path / f"{k}.pem" for k in ("ca", "cert", "key")}
    for f in files.values():
        f.write_text("x")
    seen = _fake_suite(monkeypatch)
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    assert main(["validate", "--suite", "quick", "--out", str(tmp_path / "r"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert not seen  # refused before anything ran


def test_plain_tcp_to_another_host_warns(tmp_path, monkeypatch, capsys):
    from fedsim.cli import main

    _fake_suite(monkeypatch)
    assert main(["validate", "--suite", "quick", "--out", str(tmp_path / "r"),
                 "--dask", "tcp://10.1.2.3:8786"]) == 0
    assert "unencrypted, unauthenticated" in capsys.readouterr().err
    assert main(["validate", "--suite", "quick", "--out", str(tmp_path / "r"),
                 "--dask", "tcp://127.0.0.1:8786"]) == 0
    assert "unauthenticated" not in capsys.readouterr().err


@pytest.mark.slow
def test_run_dask_on_a_tls_cluster_needs_and_uses_the_security(tmp_path):
    """A real TLS LocalCluster (scheduler and workers require client certificates): the
    runner reaches it with the Security built from the files, and cannot without it."""
    c = _certs(tmp_path)
    Security = distributed.Security
    server = Security(tls_ca_file=str(c["ca"]), tls_scheduler_cert=str(c["cert"]),
                      tls_scheduler_key=str(c["key"]), tls_worker_cert=str(c["cert"]),
                      tls_worker_key=str(c["key"]), tls_client_cert=str(c["cert"]),
                      tls_client_key=str(c["key"]), require_encryption=True)
    client_sec = Security(tls_ca_file=str(c["ca"]), tls_client_cert=str(c["cert"]),
                          tls_client_key=str(c["key"]), require_encryption=True)
    tasks = [Task(f"r{i}", FN, {"seed": 2, "replicate": i, "n": 10}) for i in range(4)]
    todo = [(t, payload_hash(t)) for t in tasks]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  protocol="tls://", host="127.0.0.1", security=server,
                                  dashboard_address=None, silence_logs=40) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tls://")
        got: list[dict] = []
        backends.run_dask(todo, addr, None, got.append, security=client_sec)
        assert sorted(r["task_id"] for r in got) == ["r0", "r1", "r2", "r3"]
        assert all(r["status"] == "ok" for r in got)
        ref: list[dict] = []
        backends.run_inprocess(todo, ref.append)
        assert sorted(got, key=lambda r: r["task_id"]) == ref
        with pytest.raises(Exception):  # noqa: B017 -- no certificate: the handshake fails
            backends.run_dask(todo, addr, None, [].append,
                              security=Security(tls_ca_file=str(c["ca"])))
