"""The written forms every layer shares (engine.notation): endpoints, typed hex, compact JSON."""

from __future__ import annotations

import pytest

from zmtplab.capture.tap import parse_endpoint as tap_endpoint
from zmtplab.engine.notation import Endpoint, compact_json, format_address, parse_endpoint, parse_hex
from zmtplab.peers.topology import Topology


@pytest.mark.parametrize(("text", "bind", "default", "expected"), [
    ("tcp://127.0.0.1:5555", False, None, Endpoint("tcp", "127.0.0.1", 5555)),
    ("tcp://*:5555", True, None, Endpoint("tcp", "0.0.0.0", 5555)),
    ("tcp://*:*", True, None, Endpoint("tcp", "0.0.0.0", 0)),
    ("tcp://[::1]:7", False, None, Endpoint("tcp", "::1", 7)),
    ("ws://localhost:80", False, None, Endpoint("ws", "localhost", 80, "/")),
    ("ws://localhost:80/a/b", False, None, Endpoint("ws", "localhost", 80, "/a/b")),
    ("host:9", False, None, Endpoint("", "host", 9)),
    ("9", True, "127.0.0.1", Endpoint("", "127.0.0.1", 9)),
    (":9", True, "127.0.0.1", Endpoint("", "127.0.0.1", 9)),
])
def test_one_endpoint_grammar(text, bind, default, expected):
    assert parse_endpoint(text, bind=bind, default_host=default) == expected


@pytest.mark.parametrize(("text", "bind", "words"), [
    ("udp://a:1", True, "only tcp:// and ws://"),
    ("tcp://*:5", False, "connect needs a host"),
    ("tcp://a:0", False, "bad port"),
    ("tcp://a:65536", True, "bad port"),
    ("tcp://a:x", True, "bad port"),
    ("tcp://:5", True, "no host:port"),
    ("5555", True, "no host:port"),
])
def test_bad_endpoints_say_why(text, bind, words):
    with pytest.raises(ValueError, match=words):
        parse_endpoint(text, bind=bind)


def test_the_tap_takes_tcp_endpoints_only():
    assert tap_endpoint("5555") == ("127.0.0.1", 5555)
    assert tap_endpoint("tcp://[::1]:5555") == ("::1", 5555)
    for bad in ("ws://a:1/x", "a:0", "a:b", "udp://a:1"):
        with pytest.raises(ValueError, match="not a TCP endpoint"):
            tap_endpoint(bad)


def test_addresses_are_written_one_way():
    assert format_address("10.0.0.1", 5555) == "10.0.0.1:5555"
    assert format_address("::1", 5555) == "[::1]:5555"


@pytest.mark.parametrize("text", ["deadbeef", "de ad be ef", "de:ad:be:ef", "0xde 0xad 0xbe 0xef", r"\xde\xad\xbe\xef",
                                  "de,ad,be,ef", "de.ad.be.ef", "de_ad_be_ef", "de-ad-be-ef", "DE AD\nBE\tEF"])
def test_typed_hex_has_one_grammar(text):
    assert parse_hex(text) == b"\xde\xad\xbe\xef"


@pytest.mark.parametrize(("text", "words"), [("abc", "odd number"), ("zz", "'z' is not a hex digit")])
def test_bad_hex_says_why(text, words):
    with pytest.raises(ValueError, match=words):
        parse_hex(text)


def test_a_scripted_send_takes_the_websockets_hex():
    """A topology's scripted hex send reads the same spellings as a websocket send (it took only spaces)."""
    topo = Topology.from_dict({"nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PULL"}],
                               "links": [{"connect": "b", "bind": "a"}],
                               "script": [{"from": "a", "frames": ["0xde:ad", "be-ef"], "hex": True}]})
    assert topo.script[0].frame_bytes() == (b"\xde\xad", b"\xbe\xef")


def test_compact_json_keeps_text():
    assert compact_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'


def test_what_is_wrong_with_typed_hex_is_said_in_chinese_too():
    from zmtplab.i18n import translate

    for text, zh in (("zz", "'z' 不是十六进制数字"), ("abc", "十六进制数字的个数是奇数")):
        with pytest.raises(ValueError) as info:
            parse_hex(text)
        assert translate(f"frame 1 is not hex: {info.value}", "zh-CN") == f"第 1 帧不是十六进制：{zh}"  # noqa: RUF001
