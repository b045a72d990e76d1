"""`RelayLog` alone: what counts as a hop through a relay, what is impossible, and what is ambiguous and why."""

from __future__ import annotations

from zmtplab.analysis.facts import ConnFacts
from zmtplab.analysis.flows import RelayLog, host

BROKER = "10.0.0.5"
FRONT, BACK = (BROKER, 5559), (BROKER, 5560)


def conn(log: RelayLog, cid: str, client: tuple[str, int], server: tuple[str, int], client_type: str,
         server_type: str, identity: str = "") -> ConnFacts:
    """A connection whose handshake is done (the Collector tells the log its sockets then)."""
    facts = ConnFacts(cid, client, server)
    facts.socket_types = {"c2s": client_type, "s2c": server_type}
    if identity:
        facts.identities["c2s"] = identity
    log.sockets_seen(facts)
    return facts


def send(log: RelayLog, facts: ConnFacts, d: str, ts: float, *frames: bytes) -> None:
    """One message, as the Collector hands it over (the count of the direction is the message's number)."""
    if log.wants(facts, d):
        log(facts, d, [(0, list(frames))], [ts], [[int(ts * 1e6)]])
    facts.messages[d] += 1


def routes(flows):
    return sorted((tuple((h["conn"], h["dir"]) for h in f["hops"]), f["ambiguous"]) for f in flows)


def test_host_takes_the_loopback_as_one_node():
    assert host("127.0.0.1") == host("::1") == host("127.0.0.2") == "loopback"
    assert host("::ffff:10.0.0.5") == "10.0.0.5" and host("10.0.0.5") == "10.0.0.5"


def test_an_announced_identity_binds_the_hops():
    log = RelayLog()
    client = conn(log, "0", ("10.0.0.1", 40001), FRONT, "DEALER", "ROUTER", identity="c1")
    worker = conn(log, "1", ("10.0.0.2", 40002), BACK, "DEALER", "DEALER")
    send(log, client, "c2s", 1.0, b"", b"job")
    send(log, worker, "s2c", 1.001, b"c1", b"", b"job")
    send(log, worker, "c2s", 1.002, b"c1", b"", b"done")
    send(log, client, "s2c", 1.003, b"", b"done")
    flows, total = log.flows()
    assert total == 2
    assert routes(flows) == [((("0", "c2s"), ("1", "s2c")), False), ((("1", "c2s"), ("0", "s2c")), False)]
    request = next(f for f in flows if f["message"] == "job")
    assert request["steps"][0] | {"latency": 0} == {"node": BROKER, "latency": 0, "envelope": "added",
                                                    "frames": ["c1"], "basis": "identity", "routing_id": "c1"}


def test_generated_routing_ids_are_learned_from_the_order_of_requests_and_replies():
    # Two anonymous REQ clients ask the same thing; the back side's routing ids say which answer is whose: the
    # first client's request and reply fall before the second one asks.
    log = RelayLog()
    a = conn(log, "0", ("10.0.0.1", 40001), FRONT, "REQ", "ROUTER")
    b = conn(log, "1", ("10.0.0.3", 40003), FRONT, "REQ", "ROUTER")
    worker = conn(log, "2", ("10.0.0.2", 40002), BACK, "REP", "DEALER")
    ida, idb = b"\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x02"
    send(log, a, "c2s", 1.000, b"", b"ping")
    send(log, b, "c2s", 1.0005, b"", b"ping")
    send(log, worker, "s2c", 1.001, ida, b"", b"ping")
    send(log, worker, "c2s", 1.002, ida, b"", b"pong")
    send(log, a, "s2c", 1.003, b"", b"pong")
    send(log, worker, "s2c", 1.004, idb, b"", b"ping")
    send(log, worker, "c2s", 1.005, idb, b"", b"pong")
    send(log, b, "s2c", 1.006, b"", b"pong")
    send(log, a, "c2s", 1.007, b"", b"ping")  # a asks again: only a can have had its answer by now
    send(log, worker, "s2c", 1.008, ida, b"", b"ping")
    send(log, worker, "c2s", 1.009, ida, b"", b"pong")
    send(log, a, "s2c", 1.010, b"", b"pong")
    flows, total = log.flows()
    assert total == 6 and not any(f["ambiguous"] for f in flows)
    by_client = {}
    for f in flows:
        front = f["hops"][0] if f["hops"][0]["conn"] in ("0", "1") else f["hops"][-1]
        by_client.setdefault(front["conn"], set()).add(f["steps"][0]["routing_id"])
    assert by_client == {"0": {"0000000001"}, "1": {"0000000002"}}


def test_an_inbound_message_is_never_forwarded_into_another_clients_inbound_direction():
    # Three clients of one ROUTER on one host send the same payload: a relay does not send what it got back
    # into the socket it came in on, and REQ is no relay: there is no hop at all.
    log = RelayLog()
    local = "127.0.0.1"
    clients = [conn(log, str(i), (local, 40000 + i), (local, 5555), "REQ", "ROUTER") for i in range(3)]
    for i, c in enumerate(clients):
        send(log, c, "c2s", 1.0 + i * 1e-4, b"", b"ping")
    assert log.flows() == ([], 0)


def test_a_capture_without_relays_keeps_nothing():
    # A PUSH with its PULLs, a PUB with its SUBs, all on one host: no socket here is fed by one peer and sends to
    # another, so no message is even kept for matching (the bulk of a big capture costs nothing here).
    log = RelayLog()
    local = "127.0.0.1"
    pulls = [conn(log, str(i), (local, 41000 + i), (local, 5557), "PULL", "PUSH") for i in range(3)]
    subs = [conn(log, str(10 + i), (local, 42000 + i), (local, 5556), "SUB", "PUB") for i in range(3)]
    for n in range(10):
        for c in pulls + subs:
            send(log, c, "s2c", 1.0 + n * 1e-3, b"task %d" % n)
    assert log.kept == 0 and log.flows() == ([], 0)
    # A ROUTER answering its DEALERs could relay between them (one ROUTER for clients and workers, as
    # Majordomo's): their messages are kept, and no answer is mistaken for a forward.
    dealers = [conn(log, str(20 + i), (local, 43000 + i), (local, 5558), "DEALER", "ROUTER") for i in range(3)]
    for n in range(10):
        for c in dealers:
            send(log, c, "c2s", 2.0 + n * 1e-3, b"", b"hello")
            send(log, c, "s2c", 2.0 + n * 1e-3 + 1e-4, b"", b"hi")
    assert log.kept == 60 and log.flows() == ([], 0)


def test_fan_out_from_one_socket_is_no_flow():
    log = RelayLog()
    pub = ("10.0.0.5", 5556)
    subs = [conn(log, str(i), ("10.0.0.5", 41000 + i), pub, "SUB", "PUB") for i in range(2)]
    for s in subs:
        send(log, s, "s2c", 1.0, b"news")
    assert log.flows()[1] == 0


def test_a_forwarder_fans_one_publication_out_to_each_subscriber():
    log = RelayLog()
    upstream = conn(log, "0", ("10.0.0.1", 40001), FRONT, "PUB", "XSUB")
    subs = [conn(log, str(i), (f"10.0.0.{10 + i}", 41000), BACK, "SUB", "XPUB") for i in (1, 2)]
    send(log, upstream, "c2s", 1.0, b"weather", b"sunny")
    for s in subs:
        send(log, s, "s2c", 1.0002, b"weather", b"sunny")
    flows, total = log.flows()
    assert total == 2
    assert {f["hops"][-1]["conn"] for f in flows} == {"1", "2"} and not any(f["ambiguous"] for f in flows)
    assert all(f["steps"][0]["basis"] == "same" for f in flows)


def two_possible_origins() -> list:
    """The flows of a streamer that got `job` from two PUSHes 0.1 ms apart and sent one `job` on."""
    log = RelayLog()
    a = conn(log, "0", ("10.0.0.1", 40001), FRONT, "PUSH", "PULL")
    b = conn(log, "1", ("10.0.0.3", 40003), FRONT, "PUSH", "PULL")
    out = conn(log, "2", ("10.0.0.2", 40002), BACK, "PULL", "PUSH")
    send(log, a, "c2s", 1.0, b"job")
    send(log, b, "c2s", 1.0001, b"job")
    send(log, out, "s2c", 1.0002, b"job")
    return log.flows()[0]


def test_two_possible_origins_without_an_envelope_are_ambiguous_and_say_why():
    [flow] = two_possible_origins()
    assert flow["ambiguous"] and flow["hops"][0]["conn"] == "0"  # the earliest is taken
    assert "connection(s) 0, 1" in flow["why"]


def test_outside_the_window_or_on_another_host_is_no_flow():
    late = RelayLog(window=0.5)
    a = conn(late, "0", ("10.0.0.1", 40001), FRONT, "PUSH", "PULL")
    out = conn(late, "1", ("10.0.0.2", 40002), BACK, "PULL", "PUSH")
    send(late, a, "c2s", 1.0, b"job")
    send(late, out, "s2c", 1.6, b"job")
    assert late.flows()[1] == 0
    elsewhere = RelayLog()
    a = conn(elsewhere, "0", ("10.0.0.1", 40001), FRONT, "PUSH", "PULL")
    away = conn(elsewhere, "1", ("10.0.0.2", 40002), ("10.9.9.9", 5560), "PULL", "PUSH")
    send(elsewhere, a, "c2s", 1.0, b"job")
    send(elsewhere, away, "s2c", 1.001, b"job")
    assert elsewhere.flows()[1] == 0


def test_memory_stays_bounded():
    log = RelayLog(max_kept=100)
    a = conn(log, "0", ("10.0.0.1", 40001), FRONT, "PUSH", "PULL")
    conn(log, "1", ("10.0.0.2", 40002), BACK, "PULL", "PUSH")  # (the node also has a PUSH: a streamer)
    for i in range(1000):
        send(log, a, "c2s", 1.0 + i * 1e-6, b"job %d" % i)
    assert log.kept <= 100 and log.partial


def test_why_a_flow_is_ambiguous_is_said_in_chinese_too():
    from zmtplab.i18n import localize_analysis, translate

    flows = two_possible_origins()
    [flow] = localize_analysis({"findings": [], "flows": flows}, "zh-CN")["flows"]
    assert flow["why"].startswith("在它离开之前的 0.20 毫秒内") and "相同的帧从连接 0, 1 进来" in flow["why"]
    assert localize_analysis({"findings": [], "flows": flows}, "en")["flows"] == flows
    routed = ("routing id 0x0080000001 fits connection 3 and connection 4 alike (their requests and replies "
              "interleave the same way): the capture cannot tell which it is")
    assert translate(routed, "zh-CN").startswith("路由 ID 0x0080000001 与连接 3 和连接 4 都吻合")
