"""Runtimes that drive the engine: a deterministic simulation on a virtual clock, and asyncio TCP peers.

- `sockets`: ZeroMQ socket-type semantics as sans-IO routing logic (both runtimes).
- `options`: `PeerOptions`, every setting of a peer (libzmq defaults).
- `session`: a peer and its connections without I/O: engine `Connection`s plus libzmq's timers.
- `simulation`: any number of peers joined by in-memory links, stepped element by element; its pieces:
  `timeline` (the clock and the log), `simpeer` (a peer), `wire` (the links), `tracking` (socket decisions
  and message ids).
- `faults`: the faults a simulation can inject.
- `tcp`: real peers over asyncio TCP that interoperate with libzmq.
"""
