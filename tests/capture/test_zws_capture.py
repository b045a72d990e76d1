"""ZeroMQ over WebSocket (45/ZWS) in captures: a ws:// conversation is found by its HTTP upgrade, on any port,
and decoded into the same contract events as ZMTP over TCP (docs/zws.md).

The committed captures are real: Debian's libzmq 4.3.4 and our peer over ws:// (captures/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from synthetic import CLIENT, capture
from zmtplab.capture.dissect import DissectResult, dissect_capture
from zmtplab.capture.pcapwriter import PcapngWriter
from zmtplab.engine import ZwsConnection
from zmtplab.engine.websocket import unmask

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def events_of(source, **kwargs) -> tuple[list[dict], DissectResult]:
    result = DissectResult()
    return list(dissect_capture(source, result=result, **kwargs)), result


def test_a_libzmq_router_and_our_dealer_over_ws():
    events, result = events_of(str(CAPTURES / "zws_dealer_router.pcapng"))
    assert [(c.zmtp, c.server[1]) for c in result.connections] == [(True, 15650)]
    shown = [(e["dir"], e["kind"], e.get("name") or e.get("protocol") or e.get("frames")) for e in events]
    assert shown == [
        ("c2s", "greeting", "ZWS2.0/NULL"),
        ("s2c", "greeting", "ZWS2.0/NULL"),
        ("s2c", "command", "READY"),
        ("c2s", "command", "READY"),
        ("c2s", "frame", None), ("c2s", "frame", None),
        ("c2s", "message", ["", b"request".hex()]),
        ("s2c", "frame", None), ("s2c", "frame", None),
        ("s2c", "message", ["", b"reply".hex()]),
    ]
    request, response = events[0], events[1]
    assert request["protocols"] == ["ZWS2.0/NULL", "ZWS2.0"] and request["target"] == "/zmq"
    assert (response["status"], response["version"], response["mechanism"], response["transport"]) == (
        101, "3.0", "NULL", "zws")
    assert events[2]["properties"] == {"Socket-Type": "ROUTER", "Identity": ""}  # libzmq's READY
    assert events[3]["properties"] == {"Socket-Type": "DEALER", "Identity": "client-1"}
    # Our client masks its frames: the capture holds masked octets, the events say what they mean.
    frame = events[5]
    key = next(f["value"] for f in frame["fields"] if f["name"] == "masking-key")
    wire = bytes.fromhex(frame["hex"])
    assert unmask(wire[6:], bytes.fromhex(key)) == b"\x00request" and frame["body"] == b"request".hex()
    for event in events:
        assert event["conn"] == "0" and event["packets"] and isinstance(event["ts"], float)
    assert events[0]["packets"] == [4] and events[1]["packets"] == [6]  # after the TCP handshake
    assert not [e for e in events if e["kind"] == "expert"]


def test_libzmq_s_routing_ids_to_a_server_that_took_zws2_0():
    events, _ = events_of(str(CAPTURES / "zws_routing_ids.pcapng"))
    greetings = [(e["dir"], e["protocol"], e["version"], e.get("identity")) for e in events if e["kind"] == "greeting"]
    assert greetings == [("c2s", "ZWS2.0", "2.0", None), ("s2c", "ZWS2.0", "2.0", None),
                         ("s2c", "ZWS2.0", "2.0", ""), ("c2s", "ZWS2.0", "2.0", "")]
    assert [e["frames"] for e in events if e["kind"] == "message"] == [[b"hello".hex()],
                                                                      [b"one".hex(), b"two".hex()]]
    assert not [e for e in events if e["kind"] == "command"]
    assert not [e for e in events if e["kind"] == "expert"]


def test_zmtplab_dissect_prints_a_ws_conversation():
    out = subprocess.run([sys.executable, "-m", "zmtplab.cli", "dissect", str(CAPTURES / "zws_dealer_router.pcapng"),
                          "--jsonl", "--no-fields"], capture_output=True, text=True, timeout=60, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["kind"] for e in lines][:3] == ["greeting", "greeting", "command"]
    readable = subprocess.run([sys.executable, "-m", "zmtplab.cli", "dissect",
                               str(CAPTURES / "zws_dealer_router.pcapng"), "--lang", "zh-CN"],
                              capture_output=True, text=True, timeout=60, check=True).stdout
    assert "Greeting ZWS upgrade GET /zmq offers ZWS2.0/NULL,ZWS2.0" in readable
    assert "# 客户端的掩码密钥" in readable  # the masking key's note, in Chinese


def ws_conversation(port_client: tuple[str, int], server: tuple[str, int], protocols: list[str] | None = None,
                    mss: int = 1400):
    """A capture builder: a NULL ZWS conversation between our two peers, the request cut into 3 segments."""
    client_conn = ZwsConnection("REQ", client=True, protocols=protocols)
    server_conn = ZwsConnection("REP", client=False)

    def build(writer: PcapngWriter) -> None:
        conn = writer.add_connection(port_client, server, mss=mss)
        conn.handshake(1.0)
        request = client_conn.start()
        for i, cut in enumerate((request[:5], request[5:40], request[40:])):
            conn.send("c2s", cut, 1.1 + i / 100)
        server_conn.receive_data(request)
        answer = server_conn.data_to_send()
        conn.send("s2c", answer, 1.2)
        client_conn.receive_data(answer)
        conn.send("c2s", client_conn.data_to_send(), 1.3)
        conn.send("c2s", client_conn.send([b"", b"Hello"]), 1.4)
        conn.close(2.0)

    return build


def test_a_ws_conversation_is_found_on_any_port_even_with_its_request_in_pieces():
    events, result = events_of(capture(ws_conversation(CLIENT, ("10.0.0.2", 443))))
    assert result.connections[0].zmtp
    assert [e["kind"] for e in events if e["dir"] == "c2s"] == ["greeting", "command", "frame", "frame", "message"]
    assert len(events[0]["packets"]) == 3  # the request's three segments
    assert [e["frames"] for e in events if e["kind"] == "message"] == [["", b"Hello".hex()]]


def test_websocket_that_is_not_zws_stays_unreadable():
    def chat(writer: PcapngWriter) -> None:
        conn = writer.add_connection(CLIENT, ("10.0.0.2", 8080))
        conn.handshake(1.0)
        conn.send("c2s", b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                         b"Sec-WebSocket-Protocol: chat\r\n\r\n", 1.1)
        conn.send("s2c", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                         b"\x81\x02hi", 1.2)
        conn.close(2.0)

    events, result = events_of(capture(chat))
    assert not result.connections[0].zmtp
    assert [(e["kind"], e["rule"]) for e in events] == [("expert", "unreadable"), ("expert", "unreadable")]
    assert '"GET /chat HT"' in events[0]["text"]  # the first 12 octets, as for any stream that is not ZMTP


def test_an_upgrade_cut_by_the_end_of_the_capture_is_unreadable():
    def cut(writer: PcapngWriter) -> None:
        conn = writer.add_connection(CLIENT, ("10.0.0.2", 80))
        conn.handshake(1.0)
        conn.send("c2s", b"GET /zmq HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Protocol: ZWS2.0", 1.1)

    events, result = events_of(capture(cut))
    assert not result.connections[0].zmtp
    assert [e["rule"] for e in events] == ["unreadable"]
