"""`judge=llm llm=local` with no server: one line and exit 2 before any work, not a minute of
retries per transcript and a table with every probe unjudged (issue 27). With the server up the
check lets the run through; a judge that fails anyway gets a loud line under the table."""

import socket
import subprocess
import time

from ctxbench.llm.preflight import check_local_servers
from ctxbench.run_app import unjudged_warning
from tests.conftest import CTXBENCH, ROOT
from tests.llm_server import LLMServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_local_server_is_one_line_and_exit_2(tmp_path):
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["run", "judge=llm", "llm=local", f"llm.answerer.api_base={base}", f"llm.judge.api_base={base}"]
    args += ["dataset.include=[synth-sql_060k]", f"output.root={tmp_path}", "progress=false"]
    started = time.monotonic()
    done = subprocess.run([*CTXBENCH, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ctxbench run: error:")]
    assert len(errors) == 1 and "llm.answerer.api_base" in errors[0] and "no server answers there" in errors[0]
    assert time.monotonic() - started < 60
    assert not list(tmp_path.rglob("summary.json"))


def test_a_listening_server_passes_and_offline_runs_are_not_checked():
    with LLMServer() as server:
        spec = {"api_base": server.api_base, "cassette": {"mode": "record"}}
        check_local_servers({"judge": {"kind": "llm"}, "llm": {"answerer": spec, "judge": spec}})
    closed = {"api_base": f"http://127.0.0.1:{_closed_port()}/v1", "cassette": {"mode": "replay"}}
    check_local_servers({"judge": {"kind": "llm"}, "llm": {"answerer": closed, "judge": closed}})  # replay: no call
    check_local_servers({"judge": {"kind": "deterministic"}, "llm": {"judge": {**closed, "cassette": {}}}})


def test_mostly_unjudged_cells_get_a_warning_line():
    def summary(share, failures):
        metrics = {"unjudged_share": share, "judge_calls": 10, "llm_failures": failures}
        return {"cell": {"strategy": "dbgpt"}, "metrics": metrics}

    line = unjudged_warning([summary(1.0, {"judge": {"connection": 12}}), summary(0.0, {})])
    assert line.startswith("WARNING:") and "100%" in line and "judge connection x12" in line and "\n" not in line
    assert unjudged_warning([summary(0.1, {})]) == ""
