"""``ctxbench calibrate`` on a small generated transcript: numbers consistent with the
tokenizer's own counts, and the estimators behave as they must on known content."""

from __future__ import annotations

import csv
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

from ctxbench.cli import main  # noqa: E402
from ctxbench.tokens.calibrate import calibrate  # noqa: E402
from ctxbench.tokens.content_kinds import classify  # noqa: E402
from ctxbench.tokens.counting import TokenCounter  # noqa: E402
from ctxbench.tokens.tokenizers import get_tokenizer  # noqa: E402
from ctxbench.transcripts.canonical import write_transcripts  # noqa: E402
from ctxbench.transcripts.model import Message, ToolCall, Transcript  # noqa: E402

CJK = "数据库查询返回了以下结果，请检查每一行的状态并总结错误原因。用户表中有三条记录缺少邮箱地址。"
CODE = "def area(r: float) -> float:\n    return 3.14159 * r * r\n\nclass Box:\n    pass\n"
LOG = "2024-05-01 12:00:03,120 ERROR worker-3 timeout after 30s\n2024-05-01 12:00:04,001 INFO retrying job 17\n"


def cjk_transcript(turns: int = 12) -> Transcript:
    msgs = [Message("system", "你是一个数据分析助手。"), Message("user", CJK)]
    for i in range(turns):
        call = ToolCall(f"c{i}", "sql", json.dumps({"query": f"SELECT * FROM t{i}"}))
        msgs.append(Message("assistant", f"第{i}步：查询表。", tool_calls=(call,), metadata={"usage": {}}))
        msgs.append(Message("tool", CJK * 3, tool_call_id=f"c{i}", name="sql"))
    msgs.append(Message("assistant", "完成。"))
    return Transcript(id="cjk", messages=msgs)


def test_classifier_kinds() -> None:
    assert classify(CJK) == "cjk"
    assert classify(CODE) == "code"
    assert classify(LOG) == "logs"
    assert classify(json.dumps({"a": [1, 2], "b": {"c": "d"}})) == "json"
    assert classify("The report is ready and the numbers look right to me.") == "prose"


def test_len4_undercounts_cjk_and_ema_beats_it() -> None:
    transcript = cjk_transcript()
    result = calibrate([transcript], tokenizers=["cl100k_base"], references=["o200k_base"])
    rows = {r["estimator"]: r for r in result.error_rows()}
    # CJK is well under 4 chars per token: len/4 must undercount on every call.
    ratio_errs = result.errors[("cl100k_base", "ratio:4")]
    assert len(ratio_errs) == len(transcript.call_indices)
    assert all(e.estimate < e.true for e in ratio_errs)
    assert rows["ratio:4"]["bias_pct"] < -30
    # The EMA learns from each call: after a few calls its error is below len/4's.
    ema_errs = result.errors[("cl100k_base", "ema:0.8")]
    for e_ema, e_ratio in list(zip(ema_errs, ratio_errs))[3:]:
        assert abs(e_ema.rel) < abs(e_ratio.rel)
    assert rows["ema:0.8"]["mape_pct"] < rows["ratio:4"]["mape_pct"]
    assert rows["ema:0.8"]["settle_call_median"] is not None and rows["ratio:4"]["settle_call_median"] is None


def test_true_counts_are_the_tokenizers_prompt_counts() -> None:
    transcript = cjk_transcript(4)
    tok = get_tokenizer("llama3")
    result = calibrate([transcript], tokenizers=["llama3"], references=["cl100k_base"])
    counter = TokenCounter(tok)
    expected = [counter.prompt(transcript.messages[:i]) for i in transcript.call_indices]
    assert [e.true for e in result.errors[("llama3", "exact:cl100k_base")]] == expected
    cl100k = TokenCounter(get_tokenizer("cl100k_base"))
    guesses = [cl100k.prompt(transcript.messages[:i]) for i in transcript.call_indices]
    assert [e.estimate for e in result.errors[("llama3", "exact:cl100k_base")]] == guesses
    kinds = {r["kind"]: r for r in result.kind_rows() if r["tokenizer"] == "llama3"}
    cjk_chars = sum(len(m.content) for m in transcript.messages if classify(m.content) == "cjk")
    assert kinds["cjk"]["chars"] == cjk_chars
    assert kinds["cjk"]["chars_per_token"] < 2.0 < kinds["json"]["chars_per_token"]


def test_reported_usage_is_compared() -> None:
    tok = get_tokenizer("cl100k_base")
    msgs = [Message("system", "Be brief."), Message("user", "Fix the bug in parser.py please.")]
    true = TokenCounter(tok).prompt(msgs)
    msgs.append(Message("assistant", "Done.", metadata={"usage": {"prompt_tokens": true * 2}}))
    result = calibrate([Transcript(id="u", messages=msgs)], tokenizers=["cl100k_base"], references=[])
    (row,) = result.usage_rows()
    assert row["calls"] == 1 and abs(row["ratio_mean"] - 0.5) < 1e-9 and abs(row["mape_pct"] - 50) < 1e-9


def test_cli_writes_tables_and_plot(tmp_path, capsys) -> None:
    data = write_transcripts(tmp_path / "data" / "t.jsonl", [cjk_transcript(6)])
    out = tmp_path / "out"
    code = main(["calibrate", str(data), "--tokenizer", "cl100k_base", "--tokenizer", "qwen2.5", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Chars per token by content kind" in printed and "ema:0.8" in printed
    with (out / "estimator_error.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["tokenizer"], r["estimator"]) for r in rows} >= {
        ("qwen2.5", "exact:cl100k_base"),
        ("cl100k_base", "ratio:4"),
    }
    png = (out / "estimator_error.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert (out / "calibrate.md").read_text(encoding="utf-8").startswith("# Token calibration: 1 transcripts")


def test_cli_bad_input_is_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["calibrate", str(bad), "--tokenizer", "cl100k_base", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err
