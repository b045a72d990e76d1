"""`--lang` on `zmtplab dissect`, `decode` and `analyze`: notes and findings in Chinese on request; without it the
readable output is what it always was, and JSON output is the English contract whatever `--lang` says."""
# ruff: noqa: RUF001  (the Chinese texts use full-width punctuation, as Chinese does)

from __future__ import annotations

import re
from pathlib import Path

from zmtplab.cli import main

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "mismatch_push_push.pcapng"
HAN = re.compile(r"[\u4e00-\u9fff]")


def run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_dissect_with_lang(capsys):
    plain = run(capsys, "dissect", str(CAPTURE))
    assert "#" not in plain.split("\n")[1]  # no notes without --lang
    english = run(capsys, "dissect", str(CAPTURE), "--lang", "en")
    chinese = run(capsys, "dissect", str(CAPTURE), "--lang", "zh-CN")
    assert "signature: 0xff  # First octet of the signature: %xFF." in english
    assert "signature: 0xff  # 签名的第一个字节：%xFF。" in chinese
    assert "Expert ERROR: 无效的套接字组合：客户端 PUSH 不能与服务器 PUSH 通信（23/ZMTP 套接字类型表）" in chinese
    # the same lines, only the notes and expert texts differ
    assert [line.split("  # ")[0] for line in english.splitlines() if "Expert" not in line] == \
        [line.split("  # ")[0] for line in chinese.splitlines() if "Expert" not in line]
    assert [line.split("  # ")[0] for line in english.splitlines()] == plain.splitlines()
    assert run(capsys, "dissect", str(CAPTURE), "--jsonl", "--lang", "zh-CN") == run(capsys, "dissect", str(CAPTURE),
                                                                                        "--jsonl")


def test_decode_and_analyze_with_lang(capsys):
    chinese = run(capsys, "decode", "--hex", "ff00000000000000017f03014e554c4c" + "00" * 48 + "0400", "--lang", "zh-CN")
    assert "Expert ERROR: 命令帧的主体为空：没有命令名称" in chinese
    assert "# 签名的第一个字节：%xFF。" in chinese
    plain = run(capsys, "analyze", str(CAPTURE))
    chinese = run(capsys, "analyze", str(CAPTURE), "--lang", "zh-CN")
    assert "invalid-socket-pair [conn 0]: invalid socket pair: client PUSH cannot talk to server PUSH" in plain
    assert "invalid-socket-pair [conn 0]: 无效的套接字组合：客户端 PUSH 不能与服务器 PUSH 通信" in chinese
    assert run(capsys, "analyze", str(CAPTURE), "--json", "--lang", "zh-CN") == run(capsys, "analyze", str(CAPTURE),
                                                                                      "--json")


def test_decode_says_bad_hex_in_the_language_asked(capsys):
    assert main(["decode", "--hex", "ff zz", "--lang", "zh-CN"]) == 2
    assert capsys.readouterr().err == "zmtplab decode: 'z' 不是十六进制数字\n"
    assert main(["decode", "--hex", "abc", "--lang", "zh-CN"]) == 2
    assert capsys.readouterr().err == "zmtplab decode: 十六进制数字的个数是奇数\n"
    assert main(["decode", "--hex", "ff zz"]) == 2
    assert capsys.readouterr().err == "zmtplab decode: 'z' is not a hex digit\n"


def test_analyze_headings_follow_lang(capsys):
    """The readable analysis's headings and words are in the language asked; without --lang, as they always were."""
    broker = str(Path(__file__).resolve().parents[2] / "captures" / "broker.pcapng")
    plain = run(capsys, "analyze", broker)
    chinese = run(capsys, "analyze", broker, "--lang", "zh-CN")
    for english, zh in (("Nodes (6)", "节点（6）"), ("broker candidate", "可能是代理（broker）"),
                        ("Connections (5 of 5 TCP)", "连接（5 个 TCP 连接中的 5 个）"),
                        ("client identity 'c-0'  messages 2/2  closed by the server (FIN)",
                         "客户端 身份 'c-0'  消息 2/2  由服务器关闭（FIN）"),
                        ("Flows across connections (12)", "跨连接的消息流（12）"),
                        ("Findings (0)\n  none", "发现（0）\n  无")):
        assert english in plain and zh in chinese and english not in chinese
