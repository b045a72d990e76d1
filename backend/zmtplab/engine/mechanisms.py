"""Security mechanisms as small state machines: NULL (23/ZMTP) and PLAIN (24/ZMTP-PLAIN).

A mechanism turns the peer's handshake commands into our replies. The `Connection`
owns framing and metadata checks; a mechanism only decides which command comes next.
CURVE lives in `curve.py` and follows the same interface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .commands import error_body, initiate_body, plain_hello_body, plain_welcome_body, ready_body
from .events import Command

# The flags octet inside a CURVE MESSAGE box, as libzmq 4.3 encodes it: bit 0 MORE, bit 1 COMMAND
# (a command such as PING or SUBSCRIBE sent after the handshake). 26/CurveZMQ reserves bits 7-1.
MESSAGE_FLAG_MORE = 0x01
MESSAGE_FLAG_COMMAND = 0x02


@dataclass
class Step:
    """What the mechanism wants after a command: bodies to send, and whether the handshake is done."""

    send: list[bytes] = field(default_factory=list)
    done: bool = False
    peer_metadata: dict[str, bytes] | None = None
    error: str | None = None  # fatal: the connection sends ERROR with this reason (when `reply_error`) and closes
    reply_error: bool = True
    user_id: str | None = None


class Mechanism:
    """Base: the interface every mechanism offers the `Connection`."""

    name = "NULL"
    as_server = False

    def start(self, metadata: dict[str, bytes]) -> Step:
        """Commands to send once both greetings are exchanged."""
        raise NotImplementedError

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        """Handles one handshake command from the peer."""
        raise NotImplementedError

    def encode_message(self, frames: list[bytes] | tuple[bytes, ...]) -> bytes | None:
        """Wire bytes for a message when the mechanism encrypts traffic; None for clear-text framing."""
        return None

    def decode_message_command(self, command: Command) -> tuple[int, bytes]:
        """(flags, body) of a traffic command that carries a message frame (CURVE MESSAGE): see
        MESSAGE_FLAG_MORE and MESSAGE_FLAG_COMMAND."""
        raise NotImplementedError

    def session_keys(self) -> tuple[bytes, bytes] | None:
        """What decrypts this connection's traffic, once known: (the client's short-term public key, the session
        key) for CURVE (see curve.keylog_line); None for a mechanism that does not encrypt."""
        return None


class NullMechanism(Mechanism):
    """NULL: both sides send READY; no authentication (23/ZMTP)."""

    name = "NULL"
    as_server = False

    def start(self, metadata: dict[str, bytes]) -> Step:
        return Step(send=[ready_body(metadata)])

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        if command.name == "READY":
            return Step(done=True, peer_metadata=dict(command.metadata))
        if command.name == "ERROR":
            return Step(error=f"peer sent ERROR: {command.details.get('reason', '')}", reply_error=False)
        return Step(error=f"unexpected {command.name} command during the NULL handshake")


Authenticator = Callable[[str, str], "str | None"]


class PlainClient(Mechanism):
    """PLAIN client: HELLO, then INITIATE after WELCOME, done on READY (24/ZMTP-PLAIN)."""

    name = "PLAIN"
    as_server = False

    def __init__(self, username: str, password: str) -> None:
        self.username = username.encode()
        self.password = password.encode()
        self._state = "hello"

    def start(self, metadata: dict[str, bytes]) -> Step:
        self._state = "welcome"
        return Step(send=[plain_hello_body(self.username, self.password)])

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        if command.name == "ERROR":
            return Step(error=f"server refused: {command.details.get('reason', '')}", reply_error=False)
        if self._state == "welcome" and command.name == "WELCOME":
            self._state = "ready"
            return Step(send=[initiate_body(metadata)])
        if self._state == "ready" and command.name == "READY":
            self._state = "done"
            return Step(done=True, peer_metadata=dict(command.metadata))
        return Step(error=f"unexpected {command.name} command in PLAIN state {self._state}")


class PlainServer(Mechanism):
    """PLAIN server: checks HELLO's credentials, WELCOME, then READY after INITIATE."""

    name = "PLAIN"
    as_server = True

    def __init__(self, authenticate: Authenticator | None = None) -> None:
        # With no authenticator every username/password is accepted, as libzmq does without ZAP.
        self.authenticate = authenticate or (lambda user, password: user)
        self._state = "hello"
        self.user_id: str | None = None

    def start(self, metadata: dict[str, bytes]) -> Step:
        return Step()

    def on_command(self, command: Command, metadata: dict[str, bytes]) -> Step:
        if command.name == "ERROR":
            return Step(error=f"client sent ERROR: {command.details.get('reason', '')}", reply_error=False)
        if self._state == "hello" and command.name == "HELLO":
            user = command.details.get("username", "")
            password = command.details.get("password", "")
            user_id = self.authenticate(user, password)
            if user_id is None:
                return Step(error="Invalid username or password")
            self.user_id = user_id
            self._state = "initiate"
            return Step(send=[plain_welcome_body()])
        if self._state == "initiate" and command.name == "INITIATE":
            self._state = "done"
            return Step(send=[ready_body(metadata)], done=True, peer_metadata=dict(command.metadata),
                        user_id=self.user_id)
        return Step(error=f"unexpected {command.name} command in PLAIN state {self._state}")


def error_command(reason: str) -> bytes:
    """The body of the ERROR a mechanism failure sends."""
    return error_body(reason)
