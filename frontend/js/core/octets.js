// Octet-table layout: an element's fields drawn as the ZMTP specs draw them
// (boxes with values, byte offsets under the boxes, field names under those).
// DOM-free: produces rows of boxes; views/octets.js turns them into tables.
//
// Offsets are relative to the element's start, as in the spec's worked example:
// a one-octet field is labelled "8", a range "9 - 19", an empty field has no label.
// Two modes:
//   compact (default): one box per field; long values wrap into several boxes,
//     each labelled with its own range, capped at `maxShownOctets` and then a
//     "… N more octets" box.
//   expand: fields up to `expandMax` octets are drawn octet by octet, like the
//     READY command in 23/ZMTP's worked example (R | E | A | D | Y over 3 4 5 6 7).
// Rows break when they get too wide, and before a length prefix (a number field
// whose value is the next field's length) once a row holds two fields, which
// reproduces the spec's rows: [flags size] [5 "READY"] [11 "Socket-Type"] ...

import { hexToBytes, allPrintable, byteHex, isPrintable } from './bytes.js';
import { isLiteralRule } from './rules.js';

export const DEFAULTS = {
  expand: false,
  expandMax: 32,
  maxBoxChars: 24, // widest value text in one box
  maxRowChars: 78, // widest row (sum of box widths)
  maxShownOctets: 64, // per field, before "… N more octets"
};

/** Offset label of a relative range: "8", "9 - 19", or "" for an empty field. */
export function rangeLabel(start, length) {
  if (length <= 0) return '';
  return length === 1 ? String(start) : `${start} - ${start + length - 1}`;
}

/** %xNN rendering of literal octets, compressed as the spec does: "%x00...%x00". */
export function literalText(bytes) {
  if (bytes.length === 0) return '';
  if (bytes.length <= 4) return Array.from(bytes, (b) => '%x' + byteHex(b).toUpperCase()).join(' ');
  return `%x${byteHex(bytes[0]).toUpperCase()}...%x${byteHex(bytes[bytes.length - 1]).toUpperCase()}`;
}

function spacedHex(bytes) {
  return Array.from(bytes, byteHex).join(' ');
}

function latin1(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

/**
 * The element's octets as its fields describe them, or an empty array: event.hex, or event.unmasked when the
 * backend gives one (a client's WebSocket frame, whose payload the wire carries masked).
 */
export function elementBytes(event) {
  const hex = typeof event?.unmasked === 'string' ? event.unmasked : event?.hex;
  if (typeof hex !== 'string') return new Uint8Array(0);
  try {
    return hexToBytes(hex.length % 2 ? hex.slice(0, -1) : hex);
  } catch {
    return new Uint8Array(0);
  }
}

/** The octets of one field that we have (may be fewer than its length when the body was cut). */
export function fieldBytes(event, field, raw = elementBytes(event)) {
  const rel = field.offset - event.offset;
  if (rel < 0 || rel >= raw.length) return new Uint8Array(0);
  return raw.subarray(rel, Math.min(rel + field.length, raw.length));
}

function box(fieldIndex, field, rel, start, length, text, extra = {}) {
  return {
    field: fieldIndex,
    name: field.name || '',
    rule: field.rule || '',
    text,
    bytesText: '',
    start: rel + start, // relative offset of the first octet in this box
    length,
    label: rangeLabel(rel + start, length),
    ...extra,
  };
}

/** Boxes for a field value shown as chunks of text or hex, capped, then a "more" box. */
function chunkBoxes(i18n, fi, field, rel, bytes, opts, asText) {
  const out = [];
  const per = asText ? Math.max(1, opts.maxBoxChars - 2) : Math.max(1, Math.floor((opts.maxBoxChars + 1) / 3));
  const shown = Math.min(bytes.length, opts.maxShownOctets);
  for (let at = 0; at < shown; at += per) {
    const piece = bytes.subarray(at, Math.min(at + per, shown));
    const text = asText ? `"${latin1(piece)}"` : spacedHex(piece);
    out.push(box(fi, field, rel, at, piece.length, text, { format: asText ? 'text' : 'hex' }));
  }
  const rest = field.length - shown;
  if (rest > 0) out.push(box(fi, field, rel, shown, rest, i18n.tn('ui.octets.moreOctets', rest, { n: i18n.number(rest) }), { more: true, format: 'more' }));
  return out;
}

/** Boxes for one field. */
export function fieldBoxes(i18n, fi, field, event, raw, opts) {
  const rel = field.offset - event.offset;
  const len = Math.max(0, field.length | 0);
  const bytes = fieldBytes(event, field, raw);
  const complete = bytes.length === len;
  const value = field.value;
  const expandable = opts.expand && len > 1 && len <= opts.expandMax && complete;

  if (len === 0) {
    const text = typeof value === 'string' ? JSON.stringify(value) : value === undefined || value === null ? '""' : String(value);
    return [box(fi, field, rel, 0, 0, text, { empty: true, format: 'empty' })];
  }

  if (isLiteralRule(field.rule)) {
    const lit = bytes.length ? bytes : typeof value === 'number' && len === 1 ? Uint8Array.of(value & 255) : bytes;
    if (expandable) return Array.from(bytes, (b, k) => box(fi, field, rel, k, 1, literalText([b]), { format: 'literal' }));
    const text = lit.length ? literalText(lit) + (lit.length < len ? '…' : '') : String(value ?? '');
    const b = box(fi, field, rel, 0, len, text, { format: 'literal' });
    // A literal's meaning, when the backend spells it: "0x04 (COMMAND)" -> "COMMAND".
    const meaning = typeof value === 'string' ? /\(([^)]+)\)\s*$/.exec(value) : null;
    if (meaning) b.bytesText = meaning[1];
    return [b];
  }

  if (typeof value === 'number' || typeof value === 'boolean') {
    if (expandable) return Array.from(bytes, (b, k) => box(fi, field, rel, k, 1, literalText([b]), { format: 'literal' }));
    const b = box(fi, field, rel, 0, len, String(value), { format: 'number' });
    if (len > 1 && bytes.length) b.bytesText = len > 8 ? spacedHex(bytes.subarray(0, 8)) + ' …' : spacedHex(bytes);
    return [b];
  }

  const str = value === undefined || value === null ? '' : String(value);
  if (bytes.length && complete && allPrintable(bytes)) {
    if (expandable) return Array.from(bytes, (b, k) => box(fi, field, rel, k, 1, String.fromCharCode(b), { format: 'char' }));
    if (len + 2 <= opts.maxBoxChars) return [box(fi, field, rel, 0, len, `"${latin1(bytes)}"`, { format: 'text' })];
    return chunkBoxes(i18n, fi, field, rel, bytes, opts, true);
  }
  if (bytes.length && complete && str && latin1(bytes).replace(/\0+$/, '') === str) {
    // Null-padded text such as the greeting's mechanism: "NULL" over 20 octets.
    if (expandable) return Array.from(bytes, (b, k) => box(fi, field, rel, k, 1, isPrintable(b) ? String.fromCharCode(b) : literalText([b]), { format: 'char' }));
    const text = `"${str.length + 2 > opts.maxBoxChars ? str.slice(0, opts.maxBoxChars - 3) + '…' : str}"`;
    return [box(fi, field, rel, 0, len, text, { format: 'text' })];
  }
  if (bytes.length) {
    if (expandable) return Array.from(bytes, (b, k) => box(fi, field, rel, k, 1, isPrintable(b) ? String.fromCharCode(b) : literalText([b]), { format: 'char' }));
    const textual = allPrintable(bytes);
    return chunkBoxes(i18n, fi, field, rel, bytes, opts, textual);
  }
  // No octets available (e.g. a body beyond what the backend sent): show the value.
  const text = str.length > opts.maxBoxChars ? str.slice(0, opts.maxBoxChars - 1) + '…' : str;
  return [box(fi, field, rel, 0, len, text || `${len} octets`, { format: 'value' })];
}

function boxWidth(b) {
  return Math.max(b.text.length, b.label.length, b.bytesText.length, 2) + 3;
}

/** Width of a field's boxes in a row, counting its caption (names are set in a smaller font). */
function groupWidth(boxes) {
  const sum = boxes.reduce((w, b) => w + boxWidth(b), 0);
  return Math.max(sum, Math.ceil((boxes[0]?.name.length || 0) * 0.85) + 2);
}

/** Is field i a length prefix: a number equal to the length of field i+1? */
function isLengthPrefix(fields, i) {
  const f = fields[i];
  const next = fields[i + 1];
  return !!next && typeof f.value === 'number' && f.value === next.length && !isLiteralRule(f.rule);
}

/**
 * Lay out an event's fields.
 * Returns { rows: [{ boxes, groups }], length } where each box is
 * { field, name, rule, text, bytesText, start, length, label, format, more?, empty? }
 * and each group { field, name, rule, first, count, continued } spans the boxes
 * of one field within a row (the caption under them).
 */
export function layoutOctets(i18n, event, options = {}) {
  const opts = { ...DEFAULTS, ...options };
  let fields = Array.isArray(event?.fields) ? event.fields : [];
  if (!fields.length && typeof event?.hex === 'string' && event.hex.length) {
    fields = [{ name: 'octets', rule: '', offset: event.offset, length: event.length ?? event.hex.length / 2, value: event.hex }];
  }
  const raw = elementBytes(event);
  const rows = [];
  let row = null;
  let width = 0;
  const newRow = () => {
    row = { boxes: [], fields: 0 };
    rows.push(row);
    width = 0;
  };
  newRow();
  fields.forEach((field, fi) => {
    const boxes = fieldBoxes(i18n, fi, field, event, raw, opts);
    const total = groupWidth(boxes);
    const prefixBreak = row.fields >= 2 && isLengthPrefix(fields, fi);
    const widthBreak = width + total > opts.maxRowChars && total <= opts.maxRowChars;
    if (row.boxes.length > 0 && (prefixBreak || widthBreak)) newRow();
    if (total <= opts.maxRowChars) {
      row.boxes.push(...boxes);
      width += total;
    } else {
      // Wider than a row: let the field's boxes flow over several rows.
      for (const b of boxes) {
        const w = boxWidth(b);
        if (row.boxes.length > 0 && width + w > opts.maxRowChars) newRow();
        row.boxes.push(b);
        width += w;
      }
    }
    row.fields += 1;
  });
  for (const r of rows) {
    r.groups = [];
    r.boxes.forEach((b, i) => {
      const last = r.groups[r.groups.length - 1];
      if (last && last.field === b.field) last.count += 1;
      else r.groups.push({ field: b.field, name: b.name, rule: b.rule, first: i, count: 1, continued: false });
    });
    delete r.fields;
  }
  // A group is "continued" when its field's first box sits on an earlier row.
  const seen = new Set();
  for (const r of rows) {
    for (const g of r.groups) {
      if (seen.has(g.field)) g.continued = true;
      seen.add(g.field);
    }
  }
  return { rows: rows.filter((r) => r.boxes.length), length: event?.length ?? 0 };
}

/** Which field covers a relative/absolute offset (absolute stream offset). */
export function fieldAt(event, absOffset) {
  const fields = Array.isArray(event?.fields) ? event.fields : [];
  let best = -1;
  fields.forEach((f, i) => {
    if (absOffset >= f.offset && absOffset < f.offset + f.length) {
      if (best < 0 || f.length < fields[best].length) best = i;
    }
  });
  return best;
}
