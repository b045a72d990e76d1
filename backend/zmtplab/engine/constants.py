"""Protocol constants: socket types, the 23/ZMTP table of valid pairs, framing flags."""

from __future__ import annotations

SOCKET_TYPES: tuple[str, ...] = (
    "REQ", "REP", "DEALER", "ROUTER", "PUB", "XPUB", "SUB", "XSUB", "PUSH", "PULL", "PAIR",
)

# The legal combinations of 23/ZMTP "The Socket-Type Property" (symmetric).
VALID_PEERS: dict[str, frozenset[str]] = {
    "REQ": frozenset({"REP", "ROUTER"}),
    "REP": frozenset({"REQ", "DEALER"}),
    "DEALER": frozenset({"REP", "DEALER", "ROUTER"}),
    "ROUTER": frozenset({"REQ", "DEALER", "ROUTER"}),
    "PUB": frozenset({"SUB", "XSUB"}),
    "XPUB": frozenset({"SUB", "XSUB"}),
    "SUB": frozenset({"PUB", "XPUB"}),
    "XSUB": frozenset({"PUB", "XPUB"}),
    "PUSH": frozenset({"PULL"}),
    "PULL": frozenset({"PUSH"}),
    "PAIR": frozenset({"PAIR"}),
}

# 15/ZMTP socket-type octets; XPUB/XSUB are API constructs that go on the wire as PUB/SUB.
SOCKET_TYPE_CODES_V2: dict[str, int] = {
    "PAIR": 0, "PUB": 1, "SUB": 2, "REQ": 3, "REP": 4, "DEALER": 5, "ROUTER": 6, "PULL": 7, "PUSH": 8,
    "XPUB": 1, "XSUB": 2,
}
SOCKET_TYPE_NAMES_V2: dict[int, str] = {
    0: "PAIR", 1: "PUB", 2: "SUB", 3: "REQ", 4: "REP", 5: "DEALER", 6: "ROUTER", 7: "PULL", 8: "PUSH",
}

MECHANISMS: tuple[str, ...] = ("NULL", "PLAIN", "CURVE")
VERSIONS: tuple[str, ...] = ("3.1", "3.0", "2.0", "1.0")  # the ZMTP versions a peer may speak, newest first
NO_MECHANISM_VERSIONS = frozenset({"2.0", "1.0"})  # security mechanisms came with 3.0 (23/ZMTP)


def mechanism_problem(version: str, mechanism: str) -> str | None:
    """Why a peer speaking ZMTP `version` cannot use `mechanism` (1.0 and 2.0 have only NULL), or None."""
    if version in NO_MECHANISM_VERSIONS and mechanism != "NULL":
        return f"ZMTP {version} has no security mechanisms; only NULL"
    return None

# Frame flags (23/ZMTP "Framing").
FLAG_MORE = 0x01
FLAG_LONG = 0x02
FLAG_COMMAND = 0x04
RESERVED_V3 = 0xF8
RESERVED_V2 = 0xFC

GREETING_SIZE = 64
SIGNATURE_SIZE = 10
PARTIAL_GREETING_SIZE = 11
MAX_PING_CONTEXT = 16
MAX_SHORT_SIZE = 255

# Socket types that keep (or route by) an Identity property (23/ZMTP "The Identity Property").
IDENTITY_AWARE = frozenset({"REQ", "DEALER", "ROUTER"})


def is_valid_pair(ours: str, theirs: str) -> bool:
    """True when the 23/ZMTP table lets a socket of type `ours` talk to one of type `theirs`."""
    return theirs.upper() in VALID_PEERS.get(ours.upper(), frozenset())


# Which socket types' applications send messages, and which receive them (a SUB's and an XSUB's subscriptions,
# and an XPUB's reading of them, are not messages of the application's stream): a link's messages go from a
# sender to a receiver, whichever end binds.
MESSAGE_SENDERS = frozenset({"PUSH", "PUB", "XPUB", "REQ", "REP", "DEALER", "ROUTER", "PAIR"})
MESSAGE_RECEIVERS = frozenset({"PULL", "SUB", "XSUB", "REQ", "REP", "DEALER", "ROUTER", "PAIR"})
