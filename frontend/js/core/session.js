// A playground session's websocket, over an injected WebSocket constructor. DOM-free.
//
// Server -> browser: {type: "event", event}, {type: "state", playing, speed,
//   position, total, closed}, {type: "error", detail}, {type: "reset"},
//   {type: "log", entry} (with ?marks=1: connections opened/closed, faults); with
//   ?batch=1 a websocket message may hold an array of them, in order.
// Browser -> server: {type: "send", from, frames, hex}, {type: "play"},
//   {type: "pause"}, {type: "step"}, {type: "step_back"}, {type: "speed", value},
//   {type: "reset"}, {type: "fault", fault, args}.

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

export function openSession({ WebSocket, url, onEvent, onState, onError, onReset, onOpen, onClose, onLog }) {
  const ws = new WebSocket(url);
  const queue = [];
  let open = false;
  let closed = false;

  ws.onopen = () => {
    open = true;
    for (const msg of queue.splice(0)) ws.send(msg);
    if (onOpen) onOpen();
  };
  ws.onmessage = (e) => {
    let msg;
    try {
      msg = JSON.parse(e.data);
    } catch {
      if (onError) onError(`unreadable message from the server`);
      return;
    }
    if (Array.isArray(msg)) for (const m of msg) dispatch(m);
    else dispatch(msg);
  };
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
  ws.onclose = (e) => {
    open = false;
    if (!closed && onClose) onClose(e && e.code, e && e.reason);
    closed = true;
  };
  ws.onerror = () => {
    if (onError && !closed) onError('websocket error');
  };

  function send(cmd) {
    const text = JSON.stringify(cmd);
    if (open) ws.send(text);
    else if (!closed) queue.push(text);
  }

  return {
    send,
    play: () => send({ type: 'play' }),
    pause: () => send({ type: 'pause' }),
    step: () => send({ type: 'step' }),
    stepBack: () => send({ type: 'step_back' }),
    speed: (value) => send({ type: 'speed', value: Number(value) }),
    reset: () => send({ type: 'reset' }),
    fault: (fault, args = {}) => send({ type: 'fault', fault, args }),
    close() {
      closed = true;
      ws.close();
    },
    get isOpen() {
      return open;
    },
  };
}
