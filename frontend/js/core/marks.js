// Marks in a session's sequence: where a connection closed (who closed it, and why), where the next
// one opened, and where a fault was injected. DOM-free.
//
// The server sends them as `log` entries (`?marks=1`): {kind: "link", what: "open" | "half-closed" |
// "closed" | "fault", conn, side, reason, fault, ...}. A mark sits before the element that arrived
// after it (`at`, an element index). MarkedSource shows marks as rows of their own among the
// elements; rowOf/eventOf translate between row and element indexes.


// Each fault's sentence (an unknown fault: ui.mark.fault.other).
const FAULT_IDS = {
  corrupt: 'ui.mark.fault.corrupt',
  'corrupt-armed': 'ui.mark.fault.corruptArmed',
  split: 'ui.mark.fault.split',
  delay: 'ui.mark.fault.delay',
  close: 'ui.mark.fault.close',
  garbage: 'ui.mark.fault.garbage',
  wrong_mechanism: 'ui.mark.fault.wrongMechanism',
  invalid_socket_pair: 'ui.mark.fault.invalidSocketPair',
  zmtp_version: 'ui.mark.fault.zmtpVersion',
  bad_password: 'ui.mark.fault.badPassword',
  stop_answering: 'ui.mark.fault.stopAnswering',
  kill: 'ui.mark.fault.kill',
};
const DIR_IDS = { c2s: 'ui.dir.c2s', s2c: 'ui.dir.s2c' };
const SIDE_IDS = { client: 'ui.peer.client', server: 'ui.peer.server' };

const dirText = (i18n, dir) => (DIR_IDS[dir] ? i18n.t(DIR_IDS[dir]) : String(dir));
const sideText = (i18n, side) => (SIDE_IDS[side] ? i18n.t(SIDE_IDS[side]) : String(side ?? ''));

/** A fault mark's message: [id, params] (directions and sides are named when drawn). */
function faultMessage(entry, conn) {
  const base = { ...entry, conn };
  if (entry.fault === 'delay') return typeof entry.until === 'number' ? ['ui.mark.fault.delayUntil', base] : ['ui.mark.fault.delay', base];
  if (entry.fault === 'invalid_socket_pair') return [FAULT_IDS.invalid_socket_pair, { ...base, type: entry.socket_type }];
  return FAULT_IDS[entry.fault] ? [FAULT_IDS[entry.fault], base] : ['ui.mark.fault.other', base];
}

/**
 * Turns `log` entries into marks: new Marker(i18n); .take(entry, at) -> mark | null ; .truncate(count) ; .clear()
 * A mark: { kind: 'mark', mark: 'open' | 'closed' | 'fault', conn, text, at }.
 */
export class Marker {
  /** i18n: the page's language, which a mark's text is read in when drawn. */
  constructor(i18n) {
    this.i18n = i18n;
    this.clear();
  }

  clear() {
    this.marks = [];
    this.closers = new Map(); // conn -> { side, reason } of its first half-close
  }

  /**
   * The mark a log entry makes (null for most entries), sitting before element `at`. `events`: the
   * elements so far, where a closing connection's ERROR command is looked for (the reason to name).
   */
  take(entry, at, events = []) {
    if (!entry || entry.kind !== 'link') return null;
    const conn = entry.conn !== undefined ? String(entry.conn) : '';
    let mark = null;
    if (entry.what === 'half-closed') {
      if (!this.closers.has(conn)) this.closers.set(conn, { side: entry.side, reason: entry.reason });
    } else if (entry.what === 'open') {
      if (at > 0 || this.marks.length) mark = { mark: 'open', conn, message: ['ui.mark.open', { conn }] };
    } else if (entry.what === 'closed') {
      const who = this.closers.get(conn);
      const error = lastError(events, conn);
      let message;
      if (who && who.side && error !== null) message = ['ui.mark.closedError', { conn, side: who.side, error }];
      else if (who && who.side) message = ['ui.mark.closed', { conn, side: who.side, reason: who.reason || '' }];
      else message = ['ui.mark.closedQuietly', { conn }];
      mark = { mark: 'closed', conn, message };
    } else if (entry.what === 'fault') {
      mark = { mark: 'fault', conn, message: faultMessage(entry, conn) };
    }
    if (!mark) return null;
    // The text is read when drawn, so a change of language rewrites the marks already there.
    const [id, params] = mark.message;
    const { i18n } = this;
    const full = {
      kind: 'mark',
      mark: mark.mark,
      conn,
      at,
      get text() {
        return i18n.t(id, { ...params, way: dirText(i18n, params.dir), peer: sideText(i18n, params.peer), side: sideText(i18n, params.side) });
      },
    };
    this.marks.push(full);
    return full;
  }

  /** Stepping back to `count` elements: marks at or after the cut happened after it. */
  truncate(count) {
    const before = this.marks.length;
    this.marks = this.marks.filter((m) => m.at < count);
    return this.marks.length !== before;
  }
}

/** The reason of the ERROR command among the last elements of connection `conn`, or null. */
function lastError(events, conn, scan = 64) {
  for (let i = events.length - 1, n = 0; i >= 0 && n < scan; i--) {
    const ev = events[i];
    if (!ev || String(ev.conn) !== conn) continue;
    n++;
    if (ev.kind === 'command' && ev.name === 'ERROR') return String(ev.reason ?? '');
  }
  return null;
}

/**
 * A source (see source.js) of rows: the elements of `events` (a source) with `marks` (sorted by `at`)
 * as rows of their own, each before the element it precedes.
 */
export class MarkedSource {
  constructor(events, marks = []) {
    this.events = events;
    this.marks = marks;
    this.listeners = new Set();
    events.subscribe(() => this.emit());
  }

  setMarks(marks) {
    this.marks = marks;
    this.emit();
  }

  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  emit() {
    for (const fn of [...this.listeners]) fn();
  }

  get length() {
    return this.events.length + this.visibleMarks();
  }

  /** The elements alone (the sequence's count). */
  get elementCount() {
    return this.events.length;
  }

  /** Marks that precede an element already shown, or the end (a mark never sits past the last element). */
  visibleMarks() {
    const n = this.events.length;
    let k = this.marks.length;
    while (k > 0 && this.marks[k - 1].at > n) k--;
    return k;
  }

  /** How many marks sit on rows before `row`. */
  marksBefore(row) {
    let lo = 0;
    let hi = this.visibleMarks();
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.marks[mid].at + mid < row) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(row) {
    const m = this.marksBefore(row);
    if (m < this.visibleMarks() && this.marks[m].at + m === row) return this.marks[m];
    return this.events.get(row - m);
  }

  isMark(row) {
    const item = this.get(row);
    return !!item && item.kind === 'mark';
  }

  /** The element shown on `row`, or null for a mark. */
  eventOf(row) {
    const m = this.marksBefore(row);
    if (m < this.visibleMarks() && this.marks[m].at + m === row) return null;
    return row - m;
  }

  /** The row that shows element `index`. */
  rowOf(index) {
    let lo = 0;
    let hi = this.visibleMarks();
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.marks[mid].at <= index) lo = mid + 1;
      else hi = mid;
    }
    return index + lo;
  }

  ensure(start, end) {
    return this.events.ensure ? this.events.ensure(start, end) : Promise.resolve();
  }
}
