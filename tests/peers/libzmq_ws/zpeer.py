"""libzmq sockets driven line by line over stdin/stdout, for tests/peers/test_zws_interop.py.

It runs under Debian's /usr/bin/python3 with Debian's python3-zmq, which links Debian's libzmq5 (4.3.4),
built with the ws:// transport; pyzmq's wheels from PyPI bundle a libzmq without it. One process serves
a whole test session. Frames are hex, a message is its frames joined by "," (an empty frame is an empty
string). Every command answers one line: "ok ...", "msg ...", "timeout" or "err <what went wrong>".

    new NAME TYPE                  a socket (linger 0, 5 s send timeout)
    set NAME OPTION VALUE          setsockopt(zmq.OPTION, VALUE): an integer, else the text's octets
    bind NAME ENDPOINT             -> ok ENDPOINT as bound (ZMQ_LAST_ENDPOINT)
    connect NAME ENDPOINT          -> ok
    send NAME F1,F2,...            -> ok | timeout
    recv NAME TIMEOUT_MS           -> msg F1,F2,... | timeout
    sub NAME HEX / unsub NAME HEX  -> ok
    close NAME                     -> ok
    zap USER PASSWORD              a ZAP handler (RFC 27) accepting PLAIN USER/PASSWORD only: a libzmq 4.3 PLAIN
                                   server needs one, without it every handshake fails
    version                        -> ok LIBZMQ_VERSION
    quit                           -> ok, then the process exits
"""

import sys
import threading

import zmq


def main() -> None:
    ctx = zmq.Context()
    sockets = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            answer = command(ctx, sockets, words)
        except zmq.Again:
            answer = "timeout"
        except Exception as exc:  # every failure is an answer: the test reads it
            answer = f"err {type(exc).__name__}: {exc}".replace("\n", " ")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
        if words[0] == "quit":
            break
    for sock in sockets.values():
        sock.close(linger=0)
    ctx.term()


def command(ctx, sockets, words):
    what, args = words[0], words[1:]
    if what == "version":
        return "ok " + zmq.zmq_version()
    if what == "quit":
        return "ok"
    if what == "zap":
        ready = threading.Event()
        threading.Thread(target=zap_handler, args=(ctx, args[0].encode(), args[1].encode(), ready),
                         daemon=True).start()
        ready.wait(5)
        return "ok"
    if what == "new":
        sock = ctx.socket(getattr(zmq, args[1]))
        sock.linger = 0
        sock.sndtimeo = 5000
        sockets[args[0]] = sock
        return "ok"
    sock = sockets[args[0]]
    if what == "set":
        value = int(args[2]) if args[2].lstrip("-").isdigit() else args[2].encode()
        sock.setsockopt(getattr(zmq, args[1].upper()), value)
        return "ok"
    if what == "bind":
        sock.bind(args[1])
        return "ok " + sock.getsockopt(zmq.LAST_ENDPOINT).decode()
    if what == "connect":
        sock.connect(args[1])
        return "ok"
    if what == "send":
        frames = [bytes.fromhex(f) for f in (args[1] if len(args) > 1 else "").split(",")]
        sock.send_multipart(frames)
        return "ok"
    if what == "recv":
        if not sock.poll(int(args[1])):
            return "timeout"
        return "msg " + ",".join(f.hex() for f in sock.recv_multipart())
    if what in ("sub", "unsub"):
        topic = bytes.fromhex(args[1]) if len(args) > 1 else b""
        sock.setsockopt(zmq.SUBSCRIBE if what == "sub" else zmq.UNSUBSCRIBE, topic)
        return "ok"
    if what == "close":
        sockets.pop(args[0]).close(linger=0)
        return "ok"
    return f"err unknown command {what}"


def zap_handler(ctx, user, password, ready):
    """Answers ZAP requests (RFC 27) until the context ends: 200 for USER/PASSWORD, 400 for anything else."""
    sock = ctx.socket(zmq.REP)
    sock.linger = 0
    sock.bind("inproc://zeromq.zap.01")
    ready.set()
    try:
        while True:
            request = sock.recv_multipart()
            version, request_id, _domain, _address, _identity, mechanism, *credentials = request
            ok = mechanism == b"PLAIN" and credentials == [user, password]
            sock.send_multipart([version, request_id, b"200" if ok else b"400", b"OK" if ok else b"denied",
                                 user if ok else b"", b""])
    except zmq.ContextTerminated:
        sock.close(linger=0)


if __name__ == "__main__":
    main()
