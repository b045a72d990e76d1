"""Socket-type semantics without I/O: routing, queues, envelopes, subscriptions, high-water marks."""

from __future__ import annotations

import random

import pytest

from zmtplab.peers.sockets import Again, Socket, SocketStateError, Subscription


def up(sock: Socket, pipe_id: str, *, identity: bytes = b"", version: str = "3.1", connect: bool = False):
    pipe = sock.add_pipe(pipe_id, connect_side=connect)
    assert sock.pipe_up(pipe, peer_identity=identity, version=version) is None
    return pipe


def drain(pipe) -> list:
    out = list(pipe.out)
    pipe.out.clear()
    return out


def test_push_round_robin_and_blocking() -> None:
    push = Socket("PUSH", sndhwm=2)
    with pytest.raises(Again):
        push.send([b"nobody"])  # no peer yet (bind side): libzmq blocks
    a, b = up(push, "a"), up(push, "b")
    for i in range(4):
        push.send([b"%d" % i])
    assert drain(a) == [(b"0",), (b"2",)] and drain(b) == [(b"1",), (b"3",)]
    for _ in range(4):
        push.send([b"x"])
    with pytest.raises(Again):
        push.send([b"over the high-water mark"])
    with pytest.raises(SocketStateError):
        push.recv()


def test_push_round_robin_goes_on_from_the_first_pipe_when_one_joins() -> None:
    """libzmq's lb takes its next pipe modulo the pipes there now: after 20 messages to two pipes the next goes to
    the first again, and a pipe that joins waits its turn (captures/push_late_pull.pcapng: task 20 went to the first
    PULL, task 22 to the late one)."""
    push = Socket("PUSH")
    a, b = up(push, "a"), up(push, "b")
    for i in range(20):
        push.send([b"%d" % i])
    c = up(push, "c")
    for i in range(20, 23):
        push.send([b"%d" % i])
    assert drain(a)[-1] == (b"20",) and drain(b)[-1] == (b"21",) and drain(c) == [(b"22",)]


def test_connect_side_pipe_queues_before_it_is_up() -> None:
    push = Socket("PUSH")
    pipe = push.add_pipe("c", connect_side=True)
    push.send([b"early"])
    assert list(pipe.out) == [(b"early",)]
    assert Socket("PUSH", immediate=True).writable is False


def test_pull_fair_queues_between_pipes() -> None:
    pull = Socket("PULL")
    a, b = up(pull, "a"), up(pull, "b")
    for i in range(3):
        pull.deliver(a, (b"a%d" % i,))
    pull.deliver(b, (b"b0",))
    got = [pull.recv() for _ in range(4)]
    assert got == [(b"a0",), (b"b0",), (b"a1",), (b"a2",)]
    assert pull.recv() is None


def test_router_identities_generated_duplicate_and_routing() -> None:
    router = Socket("ROUTER", rng=random.Random(7))
    named = up(router, "1", identity=b"client-1")
    anon1, anon2 = up(router, "2"), up(router, "3")
    assert anon1.routing_id[0] == 0 and len(anon1.routing_id) == 5
    assert int.from_bytes(anon2.routing_id[1:], "big") == int.from_bytes(anon1.routing_id[1:], "big") + 1
    dup = router.add_pipe("4", connect_side=False)
    assert "already in use" in router.pipe_up(dup, peer_identity=b"client-1")
    router.deliver(named, (b"", b"hi"))
    assert router.recv() == (b"client-1", b"", b"hi")
    router.send([b"client-1", b"", b"reply"])
    router.send([anon2.routing_id, b"to anon2"])
    router.send([b"unknown", b"dropped"])
    assert drain(named) == [(b"", b"reply")] and drain(anon2) == [(b"to anon2",)] and drain(anon1) == []


def test_req_envelope_alternation_and_reply_pipe() -> None:
    req = Socket("REQ")
    a, b = up(req, "a"), up(req, "b")
    with pytest.raises(SocketStateError):
        req.recv()
    req.send([b"q1"])
    with pytest.raises(SocketStateError):
        req.send([b"again"])
    assert drain(a) == [(b"", b"q1")]
    req.deliver(b, (b"", b"not from the peer we asked"))
    req.deliver(a, (b"no delimiter",))
    assert req.recv() is None
    req.deliver(a, (b"", b"r1"))
    assert req.recv() == (b"r1",)
    req.send([b"q2"])
    assert drain(b) == [(b"", b"q2")]  # round robin to the next peer


def test_rep_strips_and_restores_the_envelope() -> None:
    rep = Socket("REP")
    a = up(rep, "a")
    with pytest.raises(SocketStateError):
        rep.send([b"nothing asked"])
    rep.deliver(a, (b"no delimiter: dropped",))
    rep.deliver(a, (b"hop2", b"hop1", b"", b"question", b"part 2"))
    assert rep.recv() == (b"question", b"part 2")
    with pytest.raises(SocketStateError):
        rep.recv()
    rep.send([b"answer"])
    assert drain(a) == [(b"hop2", b"hop1", b"", b"answer")]


def test_pub_filters_by_prefix_and_drops_at_hwm() -> None:
    pub = Socket("PUB", sndhwm=1)
    a, b, old = up(pub, "a"), up(pub, "b"), up(pub, "old", version="1.0")
    pub.on_subscription(a, b"weather", True)
    pub.on_subscription(b, b"", True)
    pub.send([b"weather.paris", b"sunny"])
    pub.send([b"sports", b"3-1"])  # a is full after one message; b and old are full too: dropped, never blocks
    assert drain(a) == [(b"weather.paris", b"sunny")]
    assert drain(b) == [(b"weather.paris", b"sunny")]
    assert drain(old) == [(b"weather.paris", b"sunny")]  # a 1.0 subscriber gets everything
    pub.on_subscription(a, b"weather", False)
    pub.send([b"weather.rome"])
    assert drain(a) == []
    with pytest.raises(SocketStateError):
        pub.recv()


def test_sub_counts_subscriptions_and_filters_locally() -> None:
    sub = Socket("SUB")
    pipe = up(sub, "p")
    sub.subscribe(b"a")
    sub.subscribe(b"a")
    sub.unsubscribe(b"a")
    sub.unsubscribe(b"never")
    items = drain(pipe)
    assert [(i.topic, i.subscribe) for i in items] == [(b"a", True), (b"a", True)]  # cancel only at zero
    sub.unsubscribe(b"a")
    assert [(i.topic, i.subscribe) for i in drain(pipe)] == [(b"a", False)]
    sub.subscribe(b"t")
    drain(pipe)
    sub.deliver(pipe, (b"x-unwanted",))
    sub.deliver(pipe, (b"t-wanted", b"2"))
    assert sub.recv() == (b"t-wanted", b"2")
    assert sub.recv() is None
    late = sub.add_pipe("late", connect_side=True)
    sub.pipe_up(late)
    assert [(i.topic, i.subscribe) for i in late.out if isinstance(i, Subscription)] == [(b"t", True)]


def test_xpub_passes_first_subscribe_and_last_cancel() -> None:
    xpub = Socket("XPUB")
    a, b = up(xpub, "a"), up(xpub, "b")
    xpub.on_subscription(a, b"t", True)
    xpub.on_subscription(b, b"t", True)
    xpub.on_subscription(a, b"t", False)
    assert xpub.recv() == (b"\x01t",) and xpub.recv() is None
    xpub.remove_pipe(b)  # the last subscriber leaves: libzmq passes the cancel up
    assert xpub.recv() == (b"\x00t",)
    xpub.deliver(a, (b"not a subscription",))
    assert xpub.recv() == (b"not a subscription",)


def test_xsub_sends_subscriptions_from_messages() -> None:
    xsub = Socket("XSUB")
    pipe = up(xsub, "p")
    xsub.send([b"\x01topic"])
    xsub.send([b"other", b"message"])
    xsub.send([b"\x00topic"])
    items = drain(pipe)
    assert isinstance(items[0], Subscription) and items[0].subscribe
    assert items[1] == (b"other", b"message")
    assert isinstance(items[2], Subscription) and not items[2].subscribe


def test_pair_talks_to_one_peer() -> None:
    pair = Socket("PAIR")
    first = up(pair, "1")
    second = pair.add_pipe("2", connect_side=False)
    assert "one peer" in pair.pipe_up(second)
    pair.send([b"x"])
    assert drain(first) == [(b"x",)]


def test_received_messages_outlive_their_pipe_and_receive_hwm() -> None:
    pull = Socket("PULL", rcvhwm=2)
    pipe = up(pull, "a")
    unblocked = []
    pull.on_read_unblocked = unblocked.append
    for i in range(3):
        pull.deliver(pipe, (b"%d" % i,))
    assert pipe.read_blocked
    pull.remove_pipe(pipe)
    assert [pull.recv(), pull.recv(), pull.recv(), pull.recv()] == [(b"0",), (b"1",), (b"2",), None]
