// A playground session's websocket, over an injected WebSocket constructor. DOM-free.
//
// Server -> browser: {type: "event", event}, {type: "state", playing, speed,
//   position, total, closed}, {type: "error", detail}, {type: "reset"},
//   {type: "log", entry} (with ?marks=1: connections opened/closed, faults), {type: "topology",
//   topology} (the session's nodes, links and connections; on connect and as links open); with
//   ?batch=1 a websocket message may hold an array of them, in order.
// Browser -> server: {type: "send", from, frames, hex}, {type: "play"},
//   {type: "pause"}, {type: "step"}, {type: "step_back"}, {type: "speed", value},
//   {type: "reset"}, {type: "fault", fault, args}, {type: "recv", node} (a topology node whose recv is
//   "manual" reads one message).

import { openJsonSocket } from './socket.js';

// The words of the fault menu (catalog ids), in its order. Which faults exist and which session modes (simulated: a
// virtual wire; tcp: real peers through a tap) can inject each come from the server's one table
// (GET /api/sessions/faults, peers.faults.SESSION_FAULTS). The page sends the peer whose output a fault
// affects (`peer`) and, for delay, `seconds`.
export const FAULT_TEXT = {
  corrupt_byte: { label: 'ui.fault.corruptByte', help: 'ui.fault.corruptByte.help' },
  split_writes: { label: 'ui.fault.splitWrites', help: 'ui.fault.splitWrites.help' },
  delay: { label: 'ui.fault.delay', help: 'ui.fault.delay.help' },
  wrong_mechanism: { label: 'ui.fault.wrongMechanism', help: 'ui.fault.wrongMechanism.help' },
  stop_pong: { label: 'ui.fault.stopPong', help: 'ui.fault.stopPong.help' },
  close: { label: 'ui.fault.close', help: 'ui.fault.close.help' },
  kill: { label: 'ui.fault.kill', help: 'ui.fault.kill.help' },
};

/**
 * The faults a session of this mode can inject, in the menu's order: `table` is the server's list
 * ({fault, modes} each; none yet: no fault). A fault the page has no words for shows its name.
 */
export function faultsFor(i18n, mode, table) {
  const order = Object.keys(FAULT_TEXT);
  const rank = (name) => (order.includes(name) ? order.indexOf(name) : order.length);
  return (table || [])
    .filter((f) => Array.isArray(f.modes) && f.modes.includes(mode))
    .map((f) => ({ fault: f.fault, modes: f.modes, ...(FAULT_TEXT[f.fault] ? { label: i18n.t(FAULT_TEXT[f.fault].label), help: i18n.t(FAULT_TEXT[f.fault].help) } : { label: f.fault, help: '' }) }))
    .sort((a, b) => rank(a.fault) - rank(b.fault));
}

/** A session's websocket: its messages to the callbacks, its commands as methods. */
export function openSession({ i18n, WebSocket, url, onEvent, onState, onError, onReset, onOpen, onClose, onLog, onTopology }) {
  function dispatch(msg) {
    switch (msg && msg.type) {
      case 'event':
        if (msg.event && onEvent) onEvent(msg.event);
        break;
      case 'state':
        if (onState) onState(msg);
        break;
      case 'error':
        // ("severity": "info": the command found nothing to do, which is no fault)
        if (onError) onError(String(msg.detail ?? 'error'), msg.severity === 'info' ? 'info' : 'error');
        break;
      case 'reset':
        if (onReset) onReset();
        break;
      case 'log':
        if (msg.entry && onLog) onLog(msg.entry);
        break;
      case 'topology':
        if (msg.topology && onTopology) onTopology(msg.topology);
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
    onUnreadable: () => onError && onError(i18n.t('ui.socket.unreadable')),
    onClose: (code, reason, mine) => !mine && onClose && onClose(code, reason),
    onError: () => onError && onError(i18n.t('ui.socket.error')),
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
    recv: (node) => send({ type: 'recv', node }),
    close: () => socket.close(),
    get isOpen() {
      return socket.isOpen;
    },
  };
}

/**
 * A session's `export.json` (GET /api/sessions/{id}/export.json) from a file's text: { id, mode, config, events,
 * topology } (topology: a topology session's, with its connections; null for two peers). Throws an Error that says
 * what the text is not.
 */
export function parseSessionExport(i18n, text) {
  let data;
  try {
    data = JSON.parse(String(text));
  } catch {
    throw new Error(i18n.t('ui.export.notJson'));
  }
  if (!data || typeof data !== 'object' || !Array.isArray(data.events) || !data.config || typeof data.config !== 'object') throw new Error(i18n.t('ui.export.notExport'));
  const events = data.events.filter((ev) => ev && typeof ev === 'object' && typeof ev.kind === 'string');
  const topo = data.config.topology;
  const topology = topo && typeof topo === 'object' && Array.isArray(topo.nodes) ? topo : null;
  return { id: String(data.id ?? ''), mode: data.mode === 'tcp' ? 'tcp' : 'simulated', config: data.config, events, topology };
}
