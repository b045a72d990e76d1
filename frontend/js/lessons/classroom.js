// Presenter mode, DOM-free: the class websocket, what a student follows, what a
// teacher sends. The server relays the teacher's state to every student
// (backend/zmtplab/web/classes/registry.py):
//
//   server -> teacher: {type: "hello", role, code, state, count, following}, {type: "students", count, following},
//                      {type: "error", detail}, {type: "ended", reason}
//   server -> student: {type: "hello", role, code, teacher, state}, {type: "state", lesson, step, selection, highlights, seq},
//                      {type: "teacher", present}, {type: "error", detail}, {type: "ended", reason}
//   teacher -> server: first {type: "auth", token} (within a few seconds of connecting: the token never goes in
//                      the URL, where access logs and browser history would keep it), then
//                      {type: "state", lesson, step, selection: {element, field}, highlights}, {type: "end"}
//   student -> server: {type: "status", following}

import { openJsonSocket } from '../core/socket.js';

// Close codes after which reconnecting is pointless (4408, a late `auth`, is worth another try).
export const FINAL_CLOSE = new Set([1000, 4400, 4403, 4404, 4409, 4429]);

/** A teacher socket's first message. */
export function authMessage(token) {
  return { type: 'auth', token: String(token || '') };
}

/**
 * A class websocket that queues what is sent before it opens. `first` (an object), when given, is sent on
 * open before anything queued: the server reads a teacher's `auth` as the first message or not at all.
 */
export function openClassSocket({ WebSocket, url, first, onMessage, onOpen, onClose }) {
  return openJsonSocket({
    WebSocket,
    url,
    first,
    onOpen,
    onMessage: (msg) => msg && typeof msg === 'object' && onMessage && onMessage(msg),
    onClose: (code, reason, mine) => onClose && onClose(code || 0, reason || '', mine),
  });
}

/**
 * A student's view of the teacher: the latest state, and whether the student follows it.
 * apply(state) is called for every state while following, and on follow().
 * changed(following) is called when following changes.
 */
export function createFollower({ apply, changed }) {
  let latest = null;
  let following = true;
  return {
    get following() {
      return following;
    },
    get latest() {
      return latest;
    },
    receive(state) {
      if (!state || typeof state !== 'object') return;
      if (latest && typeof latest.seq === 'number' && typeof state.seq === 'number' && state.seq < latest.seq) return;
      latest = state;
      if (following) apply(state);
    },
    /** The student did something of their own; returns true when this starts wandering. */
    wander() {
      if (!following) return false;
      following = false;
      changed(false);
      return true;
    },
    follow() {
      const was = following;
      following = true;
      if (!was) changed(true);
      if (latest) apply(latest);
    },
  };
}

/** A state as the teacher sends it (and a key to skip sending the same one twice). */
export function teacherState({ lesson, step, element, field, highlights }) {
  return {
    type: 'state',
    lesson: String(lesson),
    step: Number(step),
    selection: { element: Number.isInteger(element) ? element : null, field: Number.isInteger(field) ? field : null },
    highlights: Array.isArray(highlights) ? highlights.filter(Number.isInteger).slice(0, 64) : [],
  };
}

/**
 * Sends the teacher's state at most once per `schedule` tick, and only when it changed.
 * schedule(fn) runs fn later (a microtask or an animation frame).
 */
export function createBroadcaster(send, schedule) {
  let pending = null;
  let last = '';
  let queued = false;
  function flush() {
    queued = false;
    if (!pending) return;
    const key = JSON.stringify(pending);
    pending = null;
    if (key === last) return;
    last = key;
    send(JSON.parse(key));
  }
  return {
    push(state) {
      pending = state;
      if (!queued) {
        queued = true;
        schedule(flush);
      }
    },
    /** Forget what was sent (a new connection must get the state again). */
    reset() {
      last = '';
    },
  };
}

/** Join codes: 6 characters of A-Z and 2-9 without the look-alikes; spaces and dashes ignored. */
export function normalizeCode(text) {
  return String(text || '')
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '')
    .slice(0, 16);
}
