"""`FlowMatcher` alone: what counts as a hop through a node, and what does not."""

from __future__ import annotations

from dataclasses import dataclass

from zmtplab.analysis.flows import FlowMatcher, envelope_change

BROKER = "10.0.0.5"
CLIENT, WORKER, OTHER_CLIENT = ("10.0.0.1", 40001), ("10.0.0.2", 40002), ("10.0.0.3", 40003)
FRONT, BACK = (BROKER, 5559), (BROKER, 5560)


@dataclass
class Conn:
    conn: str
    client: tuple[str, int]
    server: tuple[str, int]

    def ends(self, d):
        return (self.client, self.server) if d == "c2s" else (self.server, self.client)


FRONT_CONN = Conn("0", CLIENT, FRONT)  # a client connects to the broker's frontend
BACK_CONN = Conn("1", WORKER, BACK)  # a worker connects to its backend
OTHER_FRONT = Conn("2", OTHER_CLIENT, FRONT)


def send(matcher, conn, d, ts, *frames):
    matcher(conn, d, [(0, list(frames))], [ts], [[int(ts * 1000)]])


def test_envelope_change():
    assert envelope_change([b"", b"x"], [b"id", b"", b"x"]) == ("added", [b"id"])
    assert envelope_change([b"id", b"", b"x"], [b"", b"x"]) == ("removed", [b"id"])
    assert envelope_change([b"x"], [b"x"]) == ("same", [])
    assert envelope_change([b"a", b"x"], [b"b", b"x"]) is None


def test_a_forward_through_the_broker_is_one_flow():
    m = FlowMatcher()
    send(m, FRONT_CONN, "c2s", 1.0, b"", b"job")
    send(m, BACK_CONN, "s2c", 1.001, b"c1", b"", b"job")
    flows, total = m.flows()
    assert total == 1
    [flow] = flows
    assert [(h["conn"], h["dir"]) for h in flow["hops"]] == [("0", "c2s"), ("1", "s2c")]
    assert flow["steps"][0]["envelope"] == "added" and flow["steps"][0]["frames"] == ["c1"]
    assert abs(flow["latency"] - 0.001) < 1e-9 and not flow["ambiguous"]


def test_outside_the_window_or_on_another_host_is_no_flow():
    late = FlowMatcher(window=0.5)
    send(late, FRONT_CONN, "c2s", 1.0, b"job")
    send(late, BACK_CONN, "s2c", 1.6, b"job")
    assert late.flows()[1] == 0
    elsewhere = FlowMatcher()
    send(elsewhere, FRONT_CONN, "c2s", 1.0, b"job")
    send(elsewhere, Conn("3", WORKER, ("10.9.9.9", 5560)), "s2c", 1.001, b"job")
    assert elsewhere.flows()[1] == 0


def test_copies_from_one_sender_and_echoes_are_not_forwards():
    fan_out = FlowMatcher()  # a PUB at FRONT sends the same message to two subscribers
    send(fan_out, FRONT_CONN, "s2c", 1.0, b"news")
    send(fan_out, OTHER_FRONT, "s2c", 1.0001, b"news")
    assert fan_out.flows()[1] == 0
    echo = FlowMatcher()  # a server answers each client with what it sent: a reply, not a forward
    send(echo, FRONT_CONN, "c2s", 1.0, b"ping")
    send(echo, OTHER_FRONT, "c2s", 1.0001, b"ping")
    send(echo, OTHER_FRONT, "s2c", 1.0002, b"ping")
    assert echo.flows()[1] == 0


def test_two_possible_origins_are_ambiguous():
    m = FlowMatcher()
    send(m, FRONT_CONN, "c2s", 1.0, b"job")
    send(m, OTHER_FRONT, "c2s", 1.0001, b"job")
    send(m, BACK_CONN, "s2c", 1.0002, b"job")
    [flow] = m.flows()[0]
    assert flow["ambiguous"] and flow["hops"][0]["conn"] == "2"  # the latest is taken


def test_memory_stays_bounded():
    m = FlowMatcher(max_recent=100)
    for i in range(1000):
        send(m, FRONT_CONN, "c2s", 1.0 + i * 1e-6, b"job %d" % i)
    assert m.remembered <= 100
    send(m, BACK_CONN, "s2c", 1.01, b"job 999")  # still remembered: among the latest
    send(m, BACK_CONN, "s2c", 1.01, b"job 1")  # forgotten
    assert [f["message"] for f in m.flows()[0]] == ["job 999"]
