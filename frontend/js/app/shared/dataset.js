// What a workbench shows (a playground tab's session or pasted hex, a lesson's scene): the elements, the
// sequence's rows (with connection and fault marks for a session) and the hex dump's chunks.

import { EventLog } from '../../core/eventlog.js';
import { ArraySource } from '../../core/source.js';
import { Marker, MarkedSource } from '../../core/marks.js';
import { createChunker } from '../../core/hexdump.js';

export class Dataset {
  /** marks: show connection boundaries and faults as rows of their own (core/marks.js), said in `i18n`. */
  constructor({ i18n = null, marks = false } = {}) {
    this.log = new EventLog();
    this.source = new ArraySource(this.log.events);
    this.marker = new Marker(i18n);
    this.rows = marks ? new MarkedSource(this.source, this.marker.marks) : this.source;
    this.chunkConn = null; // a topology session's hex dump follows one connection (null: every element)
    this.rebuildChunks();
  }

  /** The element a sequence row shows (null for a mark). */
  eventOfRow(row) {
    return this.rows.eventOf ? this.rows.eventOf(row) : row;
  }

  /** The sequence row of an element. */
  rowOfEvent(index) {
    return this.rows.rowOf ? this.rows.rowOf(index) : index;
  }

  /** Starts the hex dump over (its chunks are rebuilt from the first element on the next chunks()). */
  rebuildChunks() {
    this.chunker = createChunker();
    this.chunked = 0;
  }

  /** The hex dump's chunks, brought up to date with the elements. */
  chunks() {
    if (this.chunked > this.log.length) this.rebuildChunks();
    const conn = this.chunkConn;
    for (; this.chunked < this.log.length; this.chunked++) {
      const ev = this.log.events[this.chunked];
      if (conn === null || String(ev.conn) === conn) this.chunker.add(this.chunked, ev);
    }
    return this.chunker.chunks;
  }

  /** Which connection the hex dump shows (a topology session has many; null: all, as with one). */
  setChunkConn(conn) {
    const next = conn === null || conn === undefined ? null : String(conn);
    if (next === this.chunkConn) return false;
    this.chunkConn = next;
    this.rebuildChunks();
    return true;
  }

  /** Forgets every element and mark. */
  clear() {
    this.chunkConn = null;
    this.log.clear();
    this.marker.clear();
    this.setMarks();
    this.rebuildChunks();
  }

  /** Keeps the first `position` elements (a step back); true when some were dropped. */
  truncate(position) {
    if (!this.log.truncate(position)) return false;
    this.marker.truncate(position);
    this.setMarks();
    this.rebuildChunks();
    return true;
  }

  /** A session's `log` entry as a mark at the current end; true when it made one. */
  takeLog(entry) {
    if (!this.marker.take(entry, this.log.length, this.log.events)) return false;
    this.setMarks();
    return true;
  }

  setMarks() {
    if (this.rows.setMarks) this.rows.setMarks(this.marker.marks);
  }
}
