"""The commands a session takes (the websocket's browser -> server messages), one class each, validated by pydantic
and carried out by their own `apply`: `Session.command` dispatches on the class, and `COMMAND_TYPES`, the `type`
of each, is read from the classes (`Command` is their union, with `type` as its discriminator)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from .session import Session

NodeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,32}$")]


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    async def apply(self, session: Session) -> None:
        """Carries the command out on `session` (under its lock); `SessionError` for the browser to see."""
        raise NotImplementedError


class SendCommand(_Command):
    """Send one message from one node (`server` or `client` in a two-peer session): frames as text (UTF-8) or,
    with `hex`, as hex."""

    type: Literal["send"]
    from_: NodeName = Field(..., alias="from")
    frames: list[str] = Field(..., min_length=1)
    hex: bool = False

    async def apply(self, session: Session) -> None:
        frames = session.frames(self.frames, self.hex)
        session.count_message()
        session.charge(self.from_, frames)
        await session.runtime.send(self.from_, frames)


class RecvCommand(_Command):
    """The application of a topology node whose `recv` is "manual" reads one message (a `peer recv` event);
    an error when none is waiting."""

    type: Literal["recv"]
    node: NodeName

    async def apply(self, session: Session) -> None:
        await session.runtime.recv(self.node)


class PlayCommand(_Command):
    type: Literal["play"]

    async def apply(self, session: Session) -> None:
        await session.runtime.play()


class PauseCommand(_Command):
    type: Literal["pause"]

    async def apply(self, session: Session) -> None:
        await session.runtime.pause()


class StepCommand(_Command):
    type: Literal["step"]

    async def apply(self, session: Session) -> None:
        await session.runtime.step()


class StepBackCommand(_Command):
    type: Literal["step_back"]

    async def apply(self, session: Session) -> None:
        await session.runtime.step_back()


class SpeedCommand(_Command):
    type: Literal["speed"]
    value: float = Field(..., gt=0, le=1000)

    async def apply(self, session: Session) -> None:
        await session.runtime.set_speed(self.value)


class ResetCommand(_Command):
    type: Literal["reset"]

    async def apply(self, session: Session) -> None:
        await session.reset()


class FaultCommand(_Command):
    type: Literal["fault"]
    fault: str = Field(..., max_length=64)
    args: dict[str, Any] = Field(default_factory=dict)

    async def apply(self, session: Session) -> None:
        session.count_message()
        await session.runtime.fault(self.fault, self.args)


COMMANDS = (SendCommand, PlayCommand, PauseCommand, StepCommand, StepBackCommand, SpeedCommand, ResetCommand,
            FaultCommand, RecvCommand)
Command = Annotated[
    SendCommand | PlayCommand | PauseCommand | StepCommand | StepBackCommand | SpeedCommand | ResetCommand
    | FaultCommand | RecvCommand,
    Field(discriminator="type"),
]
COMMAND_TYPES: tuple[str, ...] = tuple(get_args(cls.model_fields["type"].annotation)[0] for cls in COMMANDS)
