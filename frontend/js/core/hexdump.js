// Hex dump model: both directions of a connection interleaved in stream order,
// as Wireshark's Follow TCP Stream shows them. DOM-free.
//
// Chunks come from events that carry raw bytes (`hex`): greeting, command, frame.
// Each chunk starts a new line; offsets are absolute per direction. Bytes already
// shown (an event overlapping an earlier one) are not shown twice; a body the
// backend cut (`truncated`) ends with a "missing" line; a `gap` event is a gap line.

import { hexToBytes, asciiColumn, byteHex } from './bytes.js';

export const BYTES_PER_LINE = 16;

/**
 * The octets a line shows in `columns` monospace characters, so nothing runs past the pane (a projector's
 * large text): 16, 8 or 4 in the hex view (the offset's 10, 2.6 an octet and 1 in the ASCII column, 3 of
 * margins and the server side's indent of 5), 64, 32 or 16 in the ASCII and UTF-8 views (the offset, the
 * indent and the text). Unknown width: the widest.
 */
export function fittingBytesPerLine(columns, mode = 'hex') {
  const choices = mode === 'hex' ? [16, 8, 4] : [64, 32, 16];
  if (!(columns > 0)) return choices[0];
  const need = (n) => (mode === 'hex' ? 18 + n * 3.6 : 17 + n);
  return choices.find((n) => need(n) <= columns) ?? choices[choices.length - 1];
}

/**
 * An incremental chunk builder: add(index, event) in list order; `chunks` grows.
 * Chunks: [{ dir, offset, bytes, index, missing, gap }].
 */
export function createChunker() {
  const covered = { c2s: -1, s2c: -1 };
  const chunks = [];
  function add(index, ev) {
    if (!ev || (ev.dir !== 'c2s' && ev.dir !== 's2c')) return;
    if (ev.kind === 'gap') {
      chunks.push({ dir: ev.dir, offset: ev.offset, bytes: new Uint8Array(0), index, missing: 0, gap: ev.length || 0 });
      covered[ev.dir] = Math.max(covered[ev.dir], ev.offset + (ev.length || 0));
      return;
    }
    if (typeof ev.hex !== 'string' || ev.kind === 'message' || ev.kind === 'expert') return;
    let bytes;
    try {
      bytes = hexToBytes(ev.hex.length % 2 ? ev.hex.slice(0, -1) : ev.hex);
    } catch {
      return;
    }
    const length = typeof ev.length === 'number' ? ev.length : bytes.length;
    const cut = Math.max(0, covered[ev.dir] - ev.offset);
    covered[ev.dir] = Math.max(covered[ev.dir], ev.offset + length);
    if (cut >= length) return;
    const shown = bytes.subarray(Math.min(cut, bytes.length));
    const missing = Math.max(0, length - Math.max(cut, bytes.length));
    chunks.push({ dir: ev.dir, offset: ev.offset + cut, bytes: shown, index, missing, gap: 0 });
  }
  return { chunks, add };
}

/** Chunks of entries [{ index, event }] in list order (see createChunker). */
export function buildChunks(entries) {
  const chunker = createChunker();
  for (const { index, event } of entries) chunker.add(index, event);
  return chunker.chunks;
}

const LINE_BYTES = 0;
const LINE_MISSING = 1;
const LINE_GAP = 2;

/**
 * Lines of a dump over chunks. Compact (typed arrays) so 200,000 elements stay cheap.
 * Returns an object with: count, line(i), findLine(dir, offset).
 */
export function layoutLines(chunks, bytesPerLine = BYTES_PER_LINE) {
  let count = 0;
  for (const c of chunks) count += Math.ceil(c.bytes.length / bytesPerLine) + (c.missing ? 1 : 0) + (c.gap ? 1 : 0);
  const lineChunk = new Int32Array(count);
  const lineFrom = new Int32Array(count);
  const lineKind = new Uint8Array(count);
  const firstLine = new Int32Array(chunks.length);
  const byDir = { c2s: [], s2c: [] };
  let n = 0;
  chunks.forEach((c, ci) => {
    firstLine[ci] = n;
    byDir[c.dir].push(ci);
    for (let from = 0; from < c.bytes.length; from += bytesPerLine) {
      lineChunk[n] = ci;
      lineFrom[n] = from;
      lineKind[n++] = LINE_BYTES;
    }
    if (c.missing) {
      lineChunk[n] = ci;
      lineKind[n++] = LINE_MISSING;
    }
    if (c.gap) {
      lineChunk[n] = ci;
      lineKind[n++] = LINE_GAP;
    }
  });

  function line(i) {
    const c = chunks[lineChunk[i]];
    const kind = lineKind[i];
    if (kind === LINE_BYTES) {
      const from = lineFrom[i];
      return { kind: 'bytes', dir: c.dir, offset: c.offset + from, bytes: c.bytes.subarray(from, from + bytesPerLine), index: c.index };
    }
    if (kind === LINE_MISSING) {
      return { kind: 'missing', dir: c.dir, offset: c.offset + c.bytes.length, count: c.missing, index: c.index };
    }
    return { kind: 'gap', dir: c.dir, offset: c.offset, count: c.gap, index: c.index };
  }

  /** Line holding octet `offset` of direction `dir`, or the nearest line before it; -1 if none. */
  function findLine(dir, offset) {
    const list = byDir[dir] || [];
    let lo = 0;
    let hi = list.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (chunks[list[mid]].offset <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return list.length ? firstLine[list[0]] : -1;
    const ci = list[found];
    const c = chunks[ci];
    const rel = offset - c.offset;
    if (rel < c.bytes.length) return firstLine[ci] + Math.floor(rel / bytesPerLine);
    const lines = Math.ceil(c.bytes.length / bytesPerLine) + (c.missing ? 1 : 0) + (c.gap ? 1 : 0);
    return firstLine[ci] + Math.max(0, lines - 1);
  }

  return { count, bytesPerLine, line, findLine };
}

/** The octets of `chunks` as text in Wireshark's Follow TCP Stream hex dump format. */
export function toFollowText(chunks, bytesPerLine = BYTES_PER_LINE) {
  const out = [];
  for (const c of chunks) {
    const indent = c.dir === 's2c' ? '    ' : '';
    for (let from = 0; from < c.bytes.length; from += bytesPerLine) {
      const bytes = c.bytes.subarray(from, from + bytesPerLine);
      out.push(indent + formatDumpLine(c.offset + from, bytes, bytesPerLine));
    }
  }
  return out.join('\n') + (out.length ? '\n' : '');
}

/** "00000010  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ...........NULL" */
export function formatDumpLine(offset, bytes, bytesPerLine = BYTES_PER_LINE) {
  const cells = [];
  for (let k = 0; k < bytesPerLine; k++) {
    cells.push(k < bytes.length ? byteHex(bytes[k]) : '  ');
    if (k === 7 && bytesPerLine > 8) cells.push('');
  }
  return `${offset.toString(16).padStart(8, '0')}  ${cells.join(' ')}   ${asciiColumn(bytes)}`;
}
