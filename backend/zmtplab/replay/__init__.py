"""Replaying a capture as a topology: `analyze`'s model of it runs again on the simulator, with one thing changed.

`ReplayModel.from_capture` (`model.py`) turns the capture into sockets, links, proxies and each application's
sends at their captured times; `simulate` (`run.py`) plays it with the playground's socket rules (`peers`, the one
model of ZeroMQ's behaviour the analysis also uses) and analyses what the replay put on the wire with
`zmtplab analyze`'s rules; `compare.py` checks the replay against the capture (the fidelity check) and a changed
replay against the unchanged one (the diff). `replay` does it all for the CLI and the web app.
"""

from __future__ import annotations

from .compare import fidelity, replay, shown_message
from .model import ReplayError, ReplayModel, fits_topology
from .run import OPTIONS, Change, apply_changes, parse_change, simulate

__all__ = ["OPTIONS", "Change", "ReplayError", "ReplayModel", "apply_changes", "fidelity", "fits_topology",
           "parse_change", "replay", "shown_message", "simulate"]
