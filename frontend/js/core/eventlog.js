// In-memory event list for sessions and pasted hex. DOM-free.
// Session events carry `seq` (a per-session counter): an event that arrives
// again with a known seq replaces the old copy, and a state message whose
// `position` is below some seqs (after step_back) trims the list to it.


export class EventLog {
  constructor() {
    this.clear();
  }

  clear() {
    this.events = [];
    this.seqIndex = new Map(); // seq -> index in events
    this.experts = []; // indexes of expert events
    this.maxSeq = null; // the highest seq held (null: none)
  }

  get length() {
    return this.events.length;
  }

  /** Add an event; returns its index. */
  add(ev) {
    const seq = typeof ev.seq === 'number' ? ev.seq : null;
    if (seq !== null && this.seqIndex.has(seq)) {
      const i = this.seqIndex.get(seq);
      this.events[i] = ev;
      return i;
    }
    const last = this.events[this.events.length - 1];
    if (seq !== null && last && typeof last.seq === 'number' && seq < last.seq) {
      // Out of order: insert by seq, then rebuild the indexes.
      let i = this.events.length;
      while (i > 0 && typeof this.events[i - 1].seq === 'number' && this.events[i - 1].seq > seq) i--;
      this.events.splice(i, 0, ev);
      this.reindex();
      return i;
    }
    const i = this.events.length;
    this.events.push(ev);
    if (seq !== null) {
      this.seqIndex.set(seq, i);
      if (this.maxSeq === null || seq > this.maxSeq) this.maxSeq = seq;
    }
    if (ev.kind === 'expert') this.experts.push(i);
    return i;
  }

  addAll(events) {
    for (const ev of events) this.add(ev);
  }

  /** Keep only events with seq < position (events without seq stay). Returns true if any went. */
  truncate(position) {
    // (a session's state message says its position many times a second: nothing to drop, said without a pass)
    if (this.maxSeq === null || this.maxSeq < position) return false;
    const before = this.events.length;
    this.events = this.events.filter((ev) => typeof ev.seq !== 'number' || ev.seq < position);
    if (this.events.length === before) return false;
    this.reindex();
    return true;
  }

  reindex() {
    this.seqIndex = new Map();
    this.experts = [];
    this.maxSeq = null;
    this.events.forEach((ev, i) => {
      if (typeof ev.seq === 'number') {
        this.seqIndex.set(ev.seq, i);
        if (this.maxSeq === null || ev.seq > this.maxSeq) this.maxSeq = ev.seq;
      }
      if (ev.kind === 'expert') this.experts.push(i);
    });
  }

  /**
   * What is known of the peer sending in `dir`: from its greeting (version,
   * mechanism, 2.0 socket type) and its READY/INITIATE properties.
   * Returns { version, mechanism, socketType, identity } (keys present when known).
   */
  peer(dir) {
    return peerFrom(this.events, dir);
  }

  /** Spec context for a field in `dir`: that direction's greeting, else the other's. */
  context(dir) {
    const own = this.peer(dir);
    const other = this.peer(dir === 'c2s' ? 's2c' : 'c2s');
    return { version: own.version || other.version, mechanism: own.mechanism || other.mechanism };
  }
}

/**
 * Peer facts from the first greeting and metadata command of `dir` in a list of
 * events (they open a connection, so only the first `scan` events are read).
 */
export function peerFrom(events, dir, scan = 200) {
  const out = {};
  for (let i = 0; i < Math.min(scan, events.length); i++) {
    const ev = events[i];
    if (!ev || ev.dir !== dir) continue;
    if (ev.kind === 'greeting' && !out.version) {
      if (ev.version) out.version = ev.version;
      if (ev.mechanism) out.mechanism = ev.mechanism;
      if (ev.socket_type) out.socketType = ev.socket_type;
    } else if (ev.kind === 'command' && ev.properties && typeof ev.properties === 'object' && !out.socketType) {
      for (const [k, v] of Object.entries(ev.properties)) {
        if (k.toLowerCase() === 'socket-type') out.socketType = String(v);
        if (k.toLowerCase() === 'identity' && v) out.identity = String(v);
      }
    }
    if (out.version && out.socketType) break;
  }
  return out;
}

/** Lifeline label: "client DEALER \"client-1\" · 3.1 NULL". */
export function peerLabel(i18n, role, peer) {
  const parts = [role === 'client' || role === 'server' ? i18n.t(role === 'client' ? 'ui.peer.client' : 'ui.peer.server') : role];
  if (peer.socketType) parts.push(peer.socketType);
  if (peer.identity) parts.push(JSON.stringify(peer.identity));
  const proto = [peer.version, peer.mechanism].filter(Boolean).join(' ');
  return proto ? `${parts.join(' ')} · ${proto}` : parts.join(' ');
}
