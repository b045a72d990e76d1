// A playground session's websocket, over an injected WebSocket constructor. DOM-free.
//
// Server -> browser: {type: "event", event}, {type: "state", playing, speed,
//   position, total, closed}, {type: "error", detail}, {type: "reset"},
//   {type: "log", entry} (with ?marks=1: connections opened/closed, faults); with
//   ?batch=1 a websocket message may hold an array of them, in order.
// Browser -> server: {type: "send", from, frames, hex}, {type: "play"},
//   {type: "pause"}, {type: "step"}, {type: "step_back"}, {type: "speed", value},
//   {type: "reset"}, {type: "fault", fault, args}.

import { openJsonSocket } from './socket.js';

// `modes`: the sessions that can inject it (simulated: a virtual wire; tcp: real peers through a tap).
// The page sends the peer whose output a fault affects (`peer`) and, for delay, `seconds`.
export const FAULTS = [
  { fault: 'corrupt_byte', label: 'Corrupt a byte', help: 'flip one octet of the next element on the wire', modes: ['simulated', 'tcp'] },
  { fault: 'split_writes', label: 'Split writes', help: 'deliver the next bytes one TCP write at a time', modes: ['simulated', 'tcp'] },
  { fault: 'delay', label: 'Delay', help: 'hold the next element back for a while', modes: ['simulated', 'tcp'] },
  { fault: 'wrong_mechanism', label: 'Wrong mechanism', help: 'announce a different security mechanism in the greeting', modes: ['simulated'] },
  { fault: 'stop_pong', label: 'Stop answering PING', help: 'the peer stops sending PONG', modes: ['simulated'] },
  { fault: 'close', label: 'Close the connection', help: 'the peer closes its TCP connection now', modes: ['simulated', 'tcp'] },
  { fault: 'kill', label: 'Kill the peer', help: 'the peer dies at once, whatever it was writing', modes: ['tcp'] },
];

/** The faults a session of this mode can inject. */
export function faultsFor(mode) {
  return FAULTS.filter((f) => f.modes.includes(mode));
}

/** A session's websocket: its messages to the callbacks, its commands as methods. */
export function openSession({ WebSocket, url, onEvent, onState, onError, onReset, onOpen, onClose, onLog }) {
  function dispatch(msg) {
    switch (msg && msg.type) {
      case 'event':
        if (msg.event && onEvent) onEvent(msg.event);
        break;
      case 'state':
        if (onState) onState(msg);
        break;
      case 'error':
        if (onError) onError(String(msg.detail ?? 'error'));
        break;
      case 'reset':
        if (onReset) onReset();
        break;
      case 'log':
        if (msg.entry && onLog) onLog(msg.entry);
        break;
      default:
        break;
    }
  }
  const socket = openJsonSocket({
    WebSocket,
    url,
    onOpen,
    onMessage: (msg) => {
      if (Array.isArray(msg)) for (const m of msg) dispatch(m);
      else dispatch(msg);
    },
    onUnreadable: () => onError && onError('unreadable message from the server'),
    onClose: (code, reason, mine) => !mine && onClose && onClose(code, reason),
    onError: () => onError && onError('websocket error'),
  });
  const send = (cmd) => socket.send(cmd);

  return {
    send,
    play: () => send({ type: 'play' }),
    pause: () => send({ type: 'pause' }),
    step: () => send({ type: 'step' }),
    stepBack: () => send({ type: 'step_back' }),
    speed: (value) => send({ type: 'speed', value: Number(value) }),
    reset: () => send({ type: 'reset' }),
    fault: (fault, args = {}) => send({ type: 'fault', fault, args }),
    close: () => socket.close(),
    get isOpen() {
      return socket.isOpen;
    },
  };
}
