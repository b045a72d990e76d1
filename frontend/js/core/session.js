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

// The words of the fault menu, in its order. Which faults exist and which session modes (simulated: a
// virtual wire; tcp: real peers through a tap) can inject each come from the server's one table
// (GET /api/sessions/faults, peers.faults.SESSION_FAULTS). The page sends the peer whose output a fault
// affects (`peer`) and, for delay, `seconds`.
export const FAULT_TEXT = {
  corrupt_byte: { label: 'Corrupt a byte', help: 'flip one octet of the next element on the wire' },
  split_writes: { label: 'Split writes', help: 'deliver the next bytes one TCP write at a time' },
  delay: { label: 'Delay', help: 'hold the next element back for a while' },
  wrong_mechanism: { label: 'Wrong mechanism', help: 'announce a different security mechanism in the greeting' },
  stop_pong: { label: 'Stop answering PING', help: 'the peer stops sending PONG' },
  close: { label: 'Close the connection', help: 'the peer closes its TCP connection now' },
  kill: { label: 'Kill the peer', help: 'the peer dies at once, whatever it was writing' },
};

/**
 * The faults a session of this mode can inject, in the menu's order: `table` is the server's list
 * ({fault, modes} each; none yet: no fault). A fault the page has no words for shows its name.
 */
export function faultsFor(mode, table) {
  const order = Object.keys(FAULT_TEXT);
  const rank = (name) => (order.includes(name) ? order.indexOf(name) : order.length);
  return (table || [])
    .filter((f) => Array.isArray(f.modes) && f.modes.includes(mode))
    .map((f) => ({ fault: f.fault, modes: f.modes, ...(FAULT_TEXT[f.fault] || { label: f.fault, help: '' }) }))
    .sort((a, b) => rank(a.fault) - rank(b.fault));
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
