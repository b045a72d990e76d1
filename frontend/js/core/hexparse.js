// Parse pasted hex: plain hex, Wireshark's "Follow TCP Stream" hex dump, the
// dumps of `xxd` and `hexdump -C`, and packet hex dumps (Wireshark's "Copy as
// Hex Dump", `tshark -x`). DOM-free.
//
// Plain: hex digits with any whitespace, colons, commas, dashes or 0x prefixes
//   ("ff 00 00", "ff:00:00", "0xff, 0x00") -> one direction.
// Follow TCP Stream (Wireshark's "Hex Dump" view, or tshark -z follow,tcp,hex):
//   00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ...........NULL
//       00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ...........NULL
// Unindented lines are the first speaker (the client, c2s); indented lines
// (spaces or a tab) are the other direction (s2c). The ASCII column is ignored.
// xxd:         00000000: ff00 0000 0000 0000 017f 0301 4e55 4c4c  ............NULL
// hexdump -C:  00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c  |............NULL|
//              *        (lines like the one above, left out)
//              00000040 (the length)
//   -> one direction (format 'dump'), offsets and the ASCII column ignored.
// Packet dumps: 0000  00 00 00 00 00 00 00 00 00 00 00 00 08 00 45 00   ..............E.
//   one block per packet, each from offset 0: the TCP payloads of Ethernet or
//   raw IPv4/IPv6 packets, in both directions (format 'packets'; the client is
//   the side that sent the SYN, else the first sender). Blocks that are not
//   TCP packets are taken as they are (format 'dump').

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
export function parseHexInput(i18n, text) {
  if (typeof text !== 'string' || !text.trim()) throw new Error(i18n.t('ui.hexparse.nothing'));
  const kind = dumpKind(text);
  if (kind) return parseOffsetDump(i18n, text, kind);
  return isFollowStream(text) ? parseFollowStream(i18n, text) : parsePlainHex(i18n, text);
}

const XXD_LINE = /^[0-9a-fA-F]{8}: [0-9a-fA-F]{2}/;
const HEXDUMP_C_LINE = /^[0-9a-fA-F]{8}  [0-9a-fA-F]{2} .*\|.*\|\s*$/;
const PACKET_LINE = /^[0-9a-fA-F]{4,6} {2,3}[0-9a-fA-F]{2} /;

/** Which offset dump the text is ('xxd', 'hexdump', 'packets'), or null (Follow TCP Stream, or plain hex). */
export function dumpKind(text) {
  for (const line of text.split(/\r?\n/)) {
    if (XXD_LINE.test(line)) return 'xxd';
    if (HEXDUMP_C_LINE.test(line)) return 'hexdump';
    if (PACKET_LINE.test(line)) return 'packets';
    if (/^[0-9a-fA-F]{8}[ \t]/.test(line.trimStart())) return null; // a Follow TCP Stream line
  }
  return null;
}

const DUMP_NAMES = { xxd: 'ui.hexparse.xxd', hexdump: 'ui.hexparse.hexdump', packets: 'ui.hexparse.packets' };

/** Hex byte tokens after a dump line's offset, at most `max`; stops at the ASCII column. */
function dumpLineBytes(rest, max) {
  const out = [];
  const re = /([ \t]*)([^ \t]+)/g;
  let m;
  while (out.length < max && (m = re.exec(rest))) {
    const [, gap, token] = m;
    if (out.length > 0 && gap.length >= 3) break; // the padding before a short line's ASCII column
    if (!/^(?:[0-9a-fA-F]{2})+$/.test(token) || token.length > 8) break; // the ASCII column, or `|`
    for (let k = 0; k < token.length && out.length < max; k += 2) out.push(parseInt(token.slice(k, k + 2), 16));
  }
  return out;
}

/**
 * The blocks of an offset dump: each a run of lines from offset 0 on (`*` lines repeated until the next
 * offset); `label` is tshark's "Frame (74 bytes):"-style line before it, if any.
 */
function dumpBlocks(i18n, text, warnings) {
  const lines = text.split(/\r?\n/);
  const rows = []; // {n, offset, rest} | {n, star: true} | {n, label} | {n, blank: true}
  lines.forEach((line, n) => {
    const t = line.trim();
    if (!t) rows.push({ n, blank: true });
    else if (t === '*') rows.push({ n, star: true });
    else {
      const m = /^([0-9a-fA-F]{4,8})(:?)(?:[ \t]+(.*))?$/.exec(t);
      const label = /^(.+) \((\d+) bytes?\):$/.exec(t);
      if (m) rows.push({ n, offset: parseInt(m[1], 16), rest: m[3] || '' });
      else if (label) rows.push({ n, label: label[1] });
      else warnings.push(i18n.t('ui.hexparse.ignored', { line: n + 1 }));
    }
  });
  // Bytes per line: the usual step between one offset and the next (16 unless the dump says otherwise).
  const steps = new Map();
  for (let k = 1; k < rows.length; k++) {
    const a = rows[k - 1];
    const b = rows[k];
    if (a.offset !== undefined && b.offset !== undefined && b.offset > a.offset) steps.set(b.offset - a.offset, (steps.get(b.offset - a.offset) || 0) + 1);
  }
  const width = steps.size ? [...steps.entries()].sort((x, y) => y[1] - x[1])[0][0] : 16;
  const blocks = [];
  let block = null;
  let label = null;
  let squeezed = false;
  for (let k = 0; k < rows.length; k++) {
    const row = rows[k];
    if (row.blank) {
      block = null;
      continue;
    }
    if (row.label !== undefined) {
      label = row.label;
      block = null;
      continue;
    }
    if (row.star) {
      squeezed = true;
      continue;
    }
    if (!block || (row.offset === 0 && block.bytes.length > 0)) {
      if (row.offset !== 0) warnings.push(i18n.t('ui.hexparse.startsAt', { line: row.n + 1, offset: row.offset.toString(16) }));
      block = { label, bytes: [], line: row.n + 1 };
      blocks.push(block);
      label = null;
    }
    if (squeezed) {
      // `*`: the line before it repeats until this offset.
      const last = block.bytes.slice(-width);
      while (last.length && block.bytes.length + last.length <= row.offset) block.bytes.push(...last);
      squeezed = false;
    }
    const next = rows[k + 1];
    const max = next && next.offset !== undefined && next.offset > row.offset ? Math.min(width, next.offset - row.offset) : width;
    const bytes = dumpLineBytes(row.rest, max);
    if (row.offset !== block.bytes.length) {
      if (!bytes.length && row.offset > block.bytes.length) warnings.push(i18n.t('ui.hexparse.endsAt', { line: row.n + 1, offset: row.offset.toString(16), n: block.bytes.length }));
      else if (bytes.length) warnings.push(i18n.t('ui.hexparse.offsetSoFar', { line: row.n + 1, offset: row.offset.toString(16), n: block.bytes.length }));
      if (row.offset < block.bytes.length) continue; // a repeated line: keep the first copy
    }
    block.bytes.push(...bytes);
  }
  return blocks.filter((b) => b.bytes.length);
}

/** An xxd, hexdump -C or packet hex dump; see the top of this module. */
export function parseOffsetDump(i18n, text, kind = dumpKind(text) || 'xxd') {
  const warnings = [];
  let blocks = dumpBlocks(i18n, text, warnings);
  const extra = blocks.filter((b) => b.label && !/^frame$/i.test(b.label));
  if (extra.length) {
    warnings.push(i18n.tn('ui.hexparse.leftOut', extra.length, { label: extra[0].label }));
    blocks = blocks.filter((b) => !extra.includes(b));
  }
  if (!blocks.length) throw new Error(i18n.t('ui.hexparse.noOctets'));
  const packets = blocks.map((b) => tcpSegment(b.bytes));
  if (packets.every((p) => p !== null)) return fromPackets(i18n, packets, warnings);
  if (kind === 'packets' && blocks.length > 1) warnings.push(i18n.t('ui.hexparse.notTcp', { block: packets.findIndex((p) => p === null) + 1 }));
  const bytes = Uint8Array.from(blocks.flatMap((b) => b.bytes));
  return {
    format: 'dump',
    label: i18n.t(DUMP_NAMES[kind] || 'ui.hexparse.dump'),
    directions: [{ dir: 'c2s', bytes, hex: bytesToHex(bytes) }],
    segments: [{ dir: 'c2s', start: 0, end: bytes.length }],
    warnings,
  };
}

const u16 = (b, i) => (b[i] << 8) | b[i + 1];
const u32 = (b, i) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;

/** The TCP segment of an Ethernet (VLAN tags allowed) or raw IPv4/IPv6 packet, or null. */
export function tcpSegment(b) {
  const ip = (at) => {
    const v = b[at] >> 4;
    if (v === 4) {
      const ihl = (b[at] & 15) * 4;
      const total = u16(b, at + 2);
      if (ihl < 20 || b[at + 9] !== 6 || total < ihl + 20 || at + total > b.length) return null;
      return { src: [...b.slice(at + 12, at + 16)].join('.'), dst: [...b.slice(at + 16, at + 20)].join('.'), start: at + ihl, end: at + total };
    }
    if (v === 6) {
      const len = u16(b, at + 4);
      if (b[at + 6] !== 6 || at + 40 + len > b.length || len < 20) return null;
      const addr = (i) => Array.from({ length: 8 }, (_, k) => u16(b, i + 2 * k).toString(16)).join(':');
      return { src: addr(at + 8), dst: addr(at + 24), start: at + 40, end: at + 40 + len };
    }
    return null;
  };
  let found = null;
  if (b.length >= 14) {
    let at = 12;
    while (u16(b, at) === 0x8100 || u16(b, at) === 0x88a8) at += 4; // VLAN tags
    const type = u16(b, at);
    if (type === 0x0800 || type === 0x86dd) found = ip(at + 2);
  }
  if (!found && b.length >= 40) found = ip(0);
  if (!found) return null;
  const t = found.start;
  const dataOffset = (b[t + 12] >> 4) * 4;
  if (dataOffset < 20 || t + dataOffset > found.end) return null;
  const flags = b[t + 13];
  return {
    src: `${found.src}:${u16(b, t)}`,
    dst: `${found.dst}:${u16(b, t + 2)}`,
    seq: u32(b, t + 4),
    syn: !!(flags & 0x02),
    ack: !!(flags & 0x10),
    payload: b.slice(t + dataOffset, found.end),
  };
}

/** Both directions' bytes from TCP segments: retransmitted octets once, missing ones reported. */
function fromPackets(i18n, packets, warnings) {
  const opener = packets.find((p) => p.syn && !p.ack);
  const client = opener ? opener.src : packets[0].src;
  const ends = new Set(packets.flatMap((p) => [p.src, p.dst]));
  if (ends.size > 2) warnings.push(i18n.t('ui.hexparse.manyConnections', { n: ends.size, client }));
  const streams = { c2s: [], s2c: [] };
  const next = { c2s: null, s2c: null };
  const segments = [];
  packets.forEach((p, k) => {
    const dir = p.src === client ? 'c2s' : 's2c';
    let seq = p.syn ? (p.seq + 1) >>> 0 : p.seq;
    let data = [...p.payload];
    if (next[dir] !== null && data.length) {
      const behind = (next[dir] - seq) | 0; // octets of this segment already taken (32-bit wrap)
      if (behind >= data.length) {
        warnings.push(i18n.t('ui.hexparse.retransmission', { packet: k + 1 }));
        data = [];
      } else if (behind > 0) {
        data = data.slice(behind);
        seq = next[dir];
      } else if (behind < 0) warnings.push(i18n.t('ui.hexparse.missing', { packet: k + 1, n: -behind, dir }));
    }
    if (p.syn || data.length || next[dir] === null) next[dir] = (seq + data.length) >>> 0;
    if (!data.length) return;
    const stream = streams[dir];
    const last = segments[segments.length - 1];
    if (last && last.dir === dir && last.end === stream.length) last.end += data.length;
    else segments.push({ dir, start: stream.length, end: stream.length + data.length });
    for (const x of data) stream.push(x);
  });
  const directions = [];
  for (const dir of ['c2s', 's2c']) {
    if (streams[dir].length) {
      const bytes = Uint8Array.from(streams[dir]);
      directions.push({ dir, bytes, hex: bytesToHex(bytes) });
    }
  }
  if (!directions.length) throw new Error(i18n.tn('ui.hexparse.noPayload', packets.length));
  return { format: 'packets', label: i18n.t('ui.hexparse.packets'), directions, segments, warnings };
}

export function parsePlainHex(i18n, text) {
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
    if (hexValue(c.charCodeAt(0)) < 0) throw new Error(i18n.t('ui.hexparse.notHex', { line, col, c }));
    digits.push(c);
    i += 1;
    col += 1;
  }
  if (digits.length === 0) throw new Error(i18n.t('ui.hexparse.noDigits'));
  if (digits.length % 2) throw new Error(i18n.t('ui.hexparse.odd', { n: digits.length }));
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

export function parseFollowStream(i18n, text) {
  const streams = { c2s: [], s2c: [] };
  const segments = [];
  const warnings = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, n) => {
    const m = /^([ \t]*)([0-9a-fA-F]{8})(.*)$/.exec(line);
    if (!m) {
      if (line.trim() && !/^(=+|Follow:|Filter:|Node \d:)/.test(line.trim())) warnings.push(i18n.t('ui.hexparse.ignored', { line: n + 1 }));
      return;
    }
    const dir = m[1].length > 0 ? 's2c' : 'c2s';
    const offset = parseInt(m[2], 16);
    const bytes = lineBytes(m[3]);
    if (bytes.length === 0) {
      warnings.push(i18n.t('ui.hexparse.noBytes', { line: n + 1 }));
      return;
    }
    const stream = streams[dir];
    if (offset !== stream.length) {
      warnings.push(i18n.t('ui.hexparse.offsetDirSoFar', { line: n + 1, offset: m[2], n: stream.length, dir }));
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
  if (!directions.length) throw new Error(i18n.t('ui.hexparse.noLines'));
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
