// Live sources (a live capture on a server interface, or a tap proxy): the
// request, the websocket, and the events per connection. DOM-free.
//
// POST /api/live {source: "capture", interface, port} | {source: "tap", target, listen_port}
//   -> 201 {id, state, listen}
// WS /ws/live/{id}?batch=1, server -> browser only (a websocket message may hold an array of them, in order):
//   {type: "connection", conn, client, server}
//   {type: "event", event}          (the event contract; `seq` counts the source's events)
//   {type: "status", state: "starting"|"capturing"|"stopped"|"error", detail, packets, events,
//    connections, dropped, source}
//   {type: "error", detail}
// The socket closes (1000) once the source has stopped.

import { EventLog, peerFrom } from './eventlog.js';
import { openJsonSocket } from './socket.js';

const PORT_RE = /^\d{1,5}$/;

/** A TCP port from a form value (1-65535; 0 too with allowZero), else null. */
export function parsePort(value, { allowZero = false } = {}) {
  const text = String(value ?? '').trim();
  if (!PORT_RE.test(text)) return null;
  const n = Number(text);
  return n <= 65535 && (n > 0 || (allowZero && n === 0)) ? n : null;
}

/**
 * The body of POST /api/live from the form's values, or { error } when a value is wrong.
 * form: { source: 'capture'|'tap', interface, port, target, listenPort }
 */
export function liveRequest(i18n, form) {
  if (form.source === 'tap') {
    const target = String(form.target || '').trim();
    if (!/^[^\s]+:\d{1,5}$/.test(target) || parsePort(target.slice(target.lastIndexOf(':') + 1)) === null) {
      return { error: i18n.t('ui.live.badTarget') };
    }
    const listen = String(form.listenPort ?? '').trim() === '' ? 0 : parsePort(form.listenPort, { allowZero: true });
    if (listen === null) return { error: i18n.t('ui.live.badListen') };
    return { source: 'tap', target, listen_port: listen };
  }
  const iface = String(form.interface || '');
  if (!iface) return { error: i18n.t('ui.live.noIface') };
  const port = parsePort(form.port);
  if (port === null) return { error: i18n.t('ui.live.badPort') };
  return { source: 'capture', interface: iface, port };
}

// A live source's states (web/live_sources.py), by name.
const STATE_IDS = { starting: 'ui.live.state.starting', capturing: 'ui.live.state.capturing', stopped: 'ui.live.state.stopped', error: 'ui.run.state.error' };
const liveState = (i18n, state) => (STATE_IDS[state] ? i18n.t(STATE_IDS[state]) : String(state || ''));

/** One line for the status: "capturing · 12 packets · 30 events · 1 connection · 2 dropped". */
export function statusText(i18n, s) {
  if (!s) return '';
  const parts = [liveState(i18n, s.state)];
  if (typeof s.packets === 'number') parts.push(i18n.tn('ui.live.packets', s.packets));
  if (typeof s.events === 'number') parts.push(i18n.tn('ui.live.events', s.events));
  if (typeof s.connections === 'number') parts.push(i18n.tn('ui.live.connections', s.connections));
  parts.push(i18n.t('ui.live.dropped', { n: Number(s.dropped) || 0 }));
  return parts.join(' · ');
}

/** What a source is, in a few words: "tcp port 5555 on lo", "tap 127.0.0.1:6000 → 127.0.0.1:5555". */
export function describeSource(i18n, src) {
  if (!src || typeof src !== 'object') return '';
  if (src.kind === 'capture') return i18n.t('ui.live.describeCapture', { port: src.port, iface: src.interface });
  if (src.kind === 'tap') return i18n.t('ui.live.describeTap', { listen: src.listen || '?', target: src.target || '?' });
  return '';
}

/** The live websocket over an injected WebSocket constructor (server -> browser only). Returns { close(), isOpen }. */
export function openLive({ i18n, WebSocket, url, onEvent, onConnection, onStatus, onError, onOpen, onClose }) {
  const dispatch = (msg) => {
    switch (msg && msg.type) {
      case 'event':
        if (msg.event && typeof msg.event === 'object' && onEvent) onEvent(msg.event);
        break;
      case 'connection':
        if (onConnection) onConnection(msg);
        break;
      case 'status':
        if (onStatus) onStatus(msg);
        break;
      case 'error':
        if (onError) onError(String(msg.detail ?? 'error'));
        break;
      default:
        break;
    }
  };
  const socket = openJsonSocket({
    WebSocket,
    url,
    onOpen,
    // (?batch=1: a websocket message may hold an array of messages, in order)
    onMessage: (msg) => (Array.isArray(msg) ? msg.forEach(dispatch) : dispatch(msg)),
    onUnreadable: () => onError && onError(i18n.t('ui.socket.unreadable')),
    onClose: (code, reason, mine) => !mine && onClose && onClose(code, reason),
    onError: () => onError && onError(i18n.t('ui.socket.error')),
  });
  return {
    close: () => socket.close(),
    get isOpen() {
      return socket.isOpen;
    },
  };
}

const emptyPair = () => ({ c2s: null, s2c: null });

/**
 * The events of a live source, per connection: an EventLog each, plus a summary in the
 * shape of a capture's connection summary (what ConnectionsView shows).
 */
export class LiveModel {
  constructor() {
    this.clear();
  }

  clear() {
    this.conns = new Map(); // conn -> { log, summary }
    this.version = 0; // bumps on every change (cheap change detection for redraws)
  }

  entry(conn) {
    const key = String(conn);
    let e = this.conns.get(key);
    if (!e) {
      e = {
        log: new EventLog(),
        summary: {
          conn: key,
          client: null,
          server: null,
          versions: emptyPair(),
          mechanism: null,
          socket_types: emptyPair(),
          identities: emptyPair(),
          messages: { c2s: 0, s2c: 0 },
          bytes: { c2s: 0, s2c: 0 },
          expert: { note: 0, warn: 0, error: 0 },
          first_ts: null,
          last_ts: null,
          events: 0,
        },
      };
      this.conns.set(key, e);
    }
    return e;
  }

  /** A `connection` message: the endpoints of a TCP connection. */
  addConnection(msg) {
    if (!msg || msg.conn === undefined || msg.conn === null) return;
    const s = this.entry(msg.conn).summary;
    if (typeof msg.client === 'string') s.client = msg.client;
    if (typeof msg.server === 'string') s.server = msg.server;
    this.version++;
  }

  /** One event; returns its index in its connection's list. */
  add(ev) {
    if (!ev || (ev.dir !== 'c2s' && ev.dir !== 's2c')) return -1;
    const e = this.entry(ev.conn ?? '0');
    const before = e.log.length;
    const i = e.log.add(ev);
    const s = e.summary;
    if (e.log.length > before) {
      s.events++;
      const end = (Number(ev.offset) || 0) + (Number(ev.length) || 0);
      if (end > s.bytes[ev.dir]) s.bytes[ev.dir] = end;
      if (ev.kind === 'message') s.messages[ev.dir]++;
      if (ev.kind === 'expert' && ev.severity in s.expert) s.expert[ev.severity]++;
      if (typeof ev.ts === 'number') {
        if (s.first_ts === null) s.first_ts = ev.ts;
        s.last_ts = ev.ts;
      }
      if (ev.kind === 'greeting' || ev.kind === 'command') this.learn(e, ev.dir);
    }
    this.version++;
    return i;
  }

  learn(e, dir) {
    const peer = peerFrom(e.log.events, dir);
    const s = e.summary;
    if (peer.version) s.versions[dir] = peer.version;
    if (peer.mechanism && !s.mechanism) s.mechanism = peer.mechanism;
    if (peer.socketType) s.socket_types[dir] = peer.socketType;
    if (peer.identity) s.identities[dir] = peer.identity;
  }

  log(conn) {
    const e = this.conns.get(String(conn));
    return e ? e.log : null;
  }

  summary(conn) {
    const e = this.conns.get(String(conn));
    return e ? e.summary : null;
  }

  /** Every connection's summary, in the order they appeared. */
  summaries() {
    return [...this.conns.values()].map((e) => e.summary);
  }

  get size() {
    return this.conns.size;
  }
}
