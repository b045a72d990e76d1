"""The pipeline's HTML report in Simplified Chinese (`zmtplab pipeline --lang zh-CN|both`), English as before."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zmtplab.cli import main

pytestmark = pytest.mark.spark
CAPTURES = Path(__file__).resolve().parents[2] / "captures"
HAN = re.compile(r"[\u4e00-\u9fff]")


def test_report_in_both_languages(spark, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("mismatch_push_push.pcapng", "push_pull.pcapng"):
        (inputs / name).write_bytes((CAPTURES / name).read_bytes())
    assert main(["pipeline", str(inputs), "--out", str(tmp_path / "out"), "--quiet", "--lang", "both"]) == 0
    english = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    chinese = (tmp_path / "out" / "report.zh-CN.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in english and not HAN.search(english)
    for title in ("ZMTP Lab pipeline report", "Socket-type pairs, client \u2192 server (connections)",
                  "Message-size distribution (body octets, log2 buckets)", "Findings by severity and rule"):
        assert title in english
    assert '<html lang="zh-CN">' in chinese
    for title in ("ZMTP Lab 流水线报告", "套接字类型组合，客户端 \u2192 服务器（连接数）",
                  "消息大小分布（主体字节数，按 log2 分桶）", "按严重程度和规则统计的发现（zmtplab analyze）",
                  "<th>严重程度</th>"):
        assert title in chinese
    # findings and expert examples are translated, wire names stay
    assert "无效的套接字组合：客户端 PUSH 不能与服务器 PUSH 通信" in chinese
    assert "invalid socket pair: client PUSH cannot talk to server PUSH" in english
    assert chinese.count("<svg") == english.count("<svg") >= 5
