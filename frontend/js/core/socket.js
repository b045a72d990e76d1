// The one websocket wrapper of the pages, over an injected WebSocket constructor. DOM-free.
// Each page's socket (a playground session, a live source, a class) is this wrapper plus its
// own message types: see openSession (session.js), openLive (live.js), openClassSocket
// (lessons/classroom.js).

/**
 * A websocket of JSON messages.
 *
 * - send(obj) sends obj as JSON; what is sent before the socket opens waits in a queue and goes
 *   out on open, in order, after `first` (an object) when given: a server may read only the
 *   first message for something (a teacher's `auth`). Nothing is sent once closed.
 * - onMessage(msg) gets each message parsed (an array, a batch, as it is); a message that is
 *   not JSON goes to onUnreadable() instead.
 * - onClose(code, reason, mine) once, when the socket closes; `mine` is true when close() asked for it.
 * - onError(): a socket error while not closed by close().
 *
 * Returns { send(obj), close(), isOpen }.
 */
export function openJsonSocket({ WebSocket, url, first, onMessage, onUnreadable, onOpen, onClose, onError }) {
  const ws = new WebSocket(url);
  const queue = [];
  let open = false;
  let closed = false;

  ws.onopen = () => {
    open = true;
    if (first) ws.send(JSON.stringify(first));
    for (const text of queue.splice(0)) ws.send(text);
    if (onOpen) onOpen();
  };
  ws.onmessage = (e) => {
    let msg;
    try {
      msg = JSON.parse(e.data);
    } catch {
      if (onUnreadable) onUnreadable();
      return;
    }
    if (onMessage) onMessage(msg);
  };
  ws.onclose = (e) => {
    open = false;
    const mine = closed;
    closed = true;
    if (onClose) onClose(e && e.code, e && e.reason, mine);
  };
  ws.onerror = () => {
    if (onError && !closed) onError();
  };

  return {
    send(obj) {
      const text = JSON.stringify(obj);
      if (open) ws.send(text);
      else if (!closed) queue.push(text);
    },
    close() {
      closed = true;
      ws.close();
    },
    get isOpen() {
      return open;
    },
  };
}
