// A playground session's websocket, over an injected WebSocket constructor. DOM-free.
//
// Server -> browser: {type: "event", event}, {type: "state", playing, speed,
//   position, total, closed}, {type: "error", detail}, {type: "reset"}; with
//   ?batch=1 a websocket message may hold an array of them, in order.
// Browser -> server: {type: "send", from, frames, hex}, {type: "play"},
//   {type: "pause"}, {type: "step"}, {type: "step_back"}, {type: "speed", value},
//   {type: "reset"}, {type: "fault", fault, args}.

export const FAULTS = [
  { fault: 'corrupt_byte', label: 'Corrupt a byte', help: 'flip one octet of the next element on the wire' },
  { fault: 'split_writes', label: 'Split writes', help: 'deliver the next bytes one TCP write at a time' },
  { fault: 'delay', label: 'Delay', help: 'hold the next element back for a while' },
  { fault: 'wrong_mechanism', label: 'Wrong mechanism', help: 'announce a different security mechanism in the greeting' },
  { fault: 'stop_pong', label: 'Stop answering PING', help: 'the peer stops sending PONG' },
  { fault: 'close', label: 'Close the connection', help: 'drop the TCP connection now' },
  { fault: 'kill', label: 'Kill the peer', help: 'the peer dies at once, whatever it was writing (real TCP sessions)' },
];

export function openSession({ WebSocket, url, onEvent, onState, onError, onReset, onOpen, onClose }) {
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
