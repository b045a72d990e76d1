"""The pipeline report's page in each language, from the aggregates `write_report` computes (a pure function:
no Spark here; the corpus tests run the whole pipeline and read both languages' reports back)."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import re

from zmtplab.cli.pipeline import REPORT_LANGS
from zmtplab.pipeline.report import render_report

HAN = re.compile(r"[\u4e00-\u9fff]")
FINDING = "invalid socket pair: client PUSH cannot talk to server PUSH (23/ZMTP socket-type table)"
AGGREGATES = {
    "vm": [("3.1 NULL", 5)], "pairs": [("PULL \u2192 PUSH", 3)],
    "hist": [{"bucket": 4, "second": 1_700_000_000, "count": 9}],
    "experts": [{"severity": "note", "rule": "tcp.analysis.retransmission", "count": 4,
                 "example": "TCP retransmission of the FIN"}],
    "per_capture": [{"capture": "a.pcapng", "connections": 2, "zmtp": 1, "events": 10, "messages": 3, "experts": 1}],
    "findings": [{"severity": "error", "rule": "invalid-socket-pair", "capture": "a.pcapng", "conns": ["0"],
                  "text": FINDING}],
    "by_rule": [{"severity": "error", "rule": "invalid-socket-pair", "count": 1}],
}
SUMMARY = {"inputs": 1, "captures": 1, "bytes": 12345, "frames": 20, "connections": 2, "zmtp_connections": 1,
           "events": 10, "errors": [], "events_by_kind": {"frame": 5}, "tables": {"events": "events"}}


def test_the_report_in_english_and_in_chinese():
    english = render_report(AGGREGATES, SUMMARY, "en")
    chinese = render_report(AGGREGATES, SUMMARY, "zh-CN")
    assert '<html lang="en">' in english and not HAN.search(english)
    assert FINDING in english and "TCP retransmission of the FIN" in english and "<th>severity</th>" in english
    assert '<html lang="zh-CN">' in chinese and "<title>ZMTP Lab 流水线报告</title>" in chinese
    assert "1 个抓包文件，12,345 字节，10 个事件。" in chinese
    assert "无效的套接字组合：客户端 PUSH 不能与服务器 PUSH 通信（23/ZMTP 套接字类型表）" in chinese
    assert "TCP FIN 重传" in chinese and "<th>严重程度</th>" in chinese and "<p class='none'>无</p>" in chinese
    assert chinese.count("<svg") == english.count("<svg") >= 5
    # the data stay as they are: rule ids, capture names, numbers
    for same in ("invalid-socket-pair", "tcp.analysis.retransmission", "a.pcapng", "3.1 NULL", "PULL \u2192 PUSH"):
        assert same in english and same in chinese


def test_pipeline_lang_option():
    assert REPORT_LANGS == {"en": ("en",), "zh-CN": ("zh-CN",), "both": ("en", "zh-CN")}
