// Parse pasted hex: plain hex, or Wireshark's "Follow TCP Stream" hex dump.
// DOM-free.
//
// Plain: hex digits with any whitespace, colons, commas, dashes or 0x prefixes
//   ("ff 00 00", "ff:00:00", "0xff, 0x00") -> one direction.
// Follow TCP Stream (Wireshark's "Hex Dump" view, or tshark -z follow,tcp,hex):
//   00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ...........NULL
//       00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ...........NULL
// Unindented lines are the first speaker (the client, c2s); indented lines
// (spaces or a tab) are the other direction (s2c). The ASCII column is ignored.

import { bytesToHex, hexValue } from './bytes.js';

const FOLLOW_LINE = /^([ \t]*)([0-9a-fA-F]{8})[ \t]{1,2}([0-9a-fA-F]{2})(?=[ \t]|$)/;

/** Does the text look like a Follow TCP Stream hex dump? */
export function isFollowStream(text) {
  for (const line of text.split(/\r?\n/)) {
    const m = FOLLOW_LINE.exec(line);
    if (m) return parseInt(m[2], 16) === 0;
  }
  return false;
}

/**
 * Parse pasted text.
 * Returns { format: 'plain'|'follow', directions: [{dir, bytes: Uint8Array, hex}],
 *           segments: [{dir, start, end}], warnings: [string] }.
 * `segments` records the order in which the two directions spoke (Follow format),
 * so decoded events can be interleaved as on the wire.
 * Throws Error with a message naming the line/position on malformed input.
 */
export function parseHexInput(text) {
  if (typeof text !== 'string' || !text.trim()) throw new Error('nothing to decode: paste some hex');
  return isFollowStream(text) ? parseFollowStream(text) : parsePlainHex(text);
}

export function parsePlainHex(text) {
  const digits = [];
  let i = 0;
  let line = 1;
  let col = 1;
  while (i < text.length) {
    const c = text[i];
    if (c === '0' && (text[i + 1] === 'x' || text[i + 1] === 'X') && (i === 0 || /[\s,:;-]/.test(text[i - 1]))) {
      i += 2;
      col += 2;
      continue;
    }
    if (c === '\n') {
      line += 1;
      col = 1;
      i += 1;
      continue;
    }
    if (/[\s,:;-]/.test(c)) {
      i += 1;
      col += 1;
      continue;
    }
    if (hexValue(c.charCodeAt(0)) < 0) throw new Error(`line ${line}, column ${col}: "${c}" is not a hex digit`);
    digits.push(c);
    i += 1;
    col += 1;
  }
  if (digits.length === 0) throw new Error('no hex digits found');
  if (digits.length % 2) throw new Error(`odd number of hex digits (${digits.length}): one is missing`);
  const bytes = new Uint8Array(digits.length / 2);
  for (let k = 0; k < bytes.length; k++) bytes[k] = (hexValue(digits[2 * k].charCodeAt(0)) << 4) | hexValue(digits[2 * k + 1].charCodeAt(0));
  return {
    format: 'plain',
    directions: [{ dir: 'c2s', bytes, hex: bytesToHex(bytes) }],
    segments: [{ dir: 'c2s', start: 0, end: bytes.length }],
    warnings: [],
  };
}

/** Hex byte tokens of one dump line after its offset; stops at the ASCII column. */
function lineBytes(rest) {
  const out = [];
  let i = 0;
  while (out.length < 16 && i < rest.length) {
    let spaces = 0;
    while (i < rest.length && (rest[i] === ' ' || rest[i] === '\t')) {
      spaces += rest[i] === '\t' ? 3 : 1;
      i += 1;
    }
    if (out.length > 0 && spaces >= 3) break; // the gap before the ASCII column
    if (out.length === 0 && spaces > 2) break;
    const a = hexValue(rest.charCodeAt(i));
    const b = hexValue(rest.charCodeAt(i + 1));
    const after = rest[i + 2];
    if (a < 0 || b < 0 || (after !== undefined && after !== ' ' && after !== '\t')) break;
    out.push((a << 4) | b);
    i += 2;
  }
  return out;
}

export function parseFollowStream(text) {
  const streams = { c2s: [], s2c: [] };
  const segments = [];
  const warnings = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, n) => {
    const m = /^([ \t]*)([0-9a-fA-F]{8})(.*)$/.exec(line);
    if (!m) {
      if (line.trim() && !/^(=+|Follow:|Filter:|Node \d:)/.test(line.trim())) warnings.push(`line ${n + 1}: ignored (not a dump line)`);
      return;
    }
    const dir = m[1].length > 0 ? 's2c' : 'c2s';
    const offset = parseInt(m[2], 16);
    const bytes = lineBytes(m[3]);
    if (bytes.length === 0) {
      warnings.push(`line ${n + 1}: no hex bytes after the offset`);
      return;
    }
    const stream = streams[dir];
    if (offset !== stream.length) {
      warnings.push(`line ${n + 1}: offset ${m[2]} but ${stream.length} ${dir} octets so far`);
      if (offset < stream.length) return; // a repeated line: keep the first copy
    }
    const last = segments[segments.length - 1];
    if (last && last.dir === dir && last.end === stream.length) last.end += bytes.length;
    else segments.push({ dir, start: stream.length, end: stream.length + bytes.length });
    for (const b of bytes) stream.push(b);
  });
  const directions = [];
  for (const dir of ['c2s', 's2c']) {
    if (streams[dir].length) {
      const bytes = Uint8Array.from(streams[dir]);
      directions.push({ dir, bytes, hex: bytesToHex(bytes) });
    }
  }
  if (!directions.length) throw new Error('no dump lines found');
  return { format: 'follow', directions, segments, warnings };
}

/**
 * Order decoded events of two directions as the paste interleaved them:
 * by the segment in which each event starts, then by offset.
 * `eventsByDir` maps 'c2s'/'s2c' to event arrays (each sorted by offset).
 */
export function interleaveBySegments(eventsByDir, segments) {
  const tagged = [];
  for (const [dir, events] of Object.entries(eventsByDir)) {
    const segs = segments.filter((s) => s.dir === dir);
    for (const ev of events) {
      let k = segs.findIndex((s) => ev.offset >= s.start && ev.offset < s.end);
      if (k < 0) k = ev.offset >= (segs[segs.length - 1]?.end ?? 0) ? segs.length - 1 : 0;
      const seg = segs[k];
      tagged.push({ ev, order: seg ? segments.indexOf(seg) : 0 });
    }
  }
  // Stable sort: same segment keeps each direction's own order.
  return tagged
    .map((t, i) => ({ ...t, i }))
    .sort((a, b) => a.order - b.order || a.i - b.i)
    .map((t) => t.ev);
}
