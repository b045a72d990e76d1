// Byte helpers shared by every module: hex <-> bytes, printable previews.
// DOM-free.

import { MessageError } from './i18n.js';

const HEX = '0123456789abcdef';

/** Bytes (Uint8Array or array of numbers) -> lowercase hex without separators. */
export function bytesToHex(bytes, sep = '') {
  const parts = new Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    parts[i] = HEX[b >> 4] + HEX[b & 15];
  }
  return parts.join(sep);
}

/** Hex string (no separators, even length) -> Uint8Array. Throws a MessageError on bad input. */
export function hexToBytes(hex) {
  if (typeof hex !== 'string') return new Uint8Array(0);
  if (hex.length % 2 !== 0) throw new MessageError('ui.bytes.odd', { n: hex.length });
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = hexValue(hex.charCodeAt(2 * i));
    const lo = hexValue(hex.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) throw new MessageError('ui.bytes.notHex', { at: 2 * i + (hi < 0 ? 0 : 1) });
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function hexValue(code) {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

export function byteHex(b) {
  return HEX[b >> 4] + HEX[b & 15];
}

export function isPrintable(b) {
  return b >= 0x20 && b <= 0x7e;
}

export function allPrintable(bytes) {
  for (let i = 0; i < bytes.length; i++) if (!isPrintable(bytes[i])) return false;
  return true;
}

/** The ASCII column of a hex dump: printable bytes as themselves, the rest as '.'. */
export function asciiColumn(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += isPrintable(bytes[i]) ? String.fromCharCode(bytes[i]) : '.';
  return s;
}

/**
 * A short, quoted, escaped preview of some bytes, as Wireshark writes strings:
 * printable ASCII as is, `"` and `\` escaped, other bytes as \xNN.
 * `max` limits the number of bytes shown; an ellipsis marks the cut.
 */
export function escapeBytes(bytes, max = 32) {
  let s = '';
  const n = Math.min(bytes.length, max);
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === 0x22) s += '\\"';
    else if (b === 0x5c) s += '\\\\';
    else if (isPrintable(b)) s += String.fromCharCode(b);
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x0d) s += '\\r';
    else if (b === 0x09) s += '\\t';
    else s += '\\x' + byteHex(b);
  }
  return '"' + s + '"' + (bytes.length > max ? '…' : '');
}

/** Preview of a hex string (as the backend sends bodies) — see escapeBytes; bytes that are valid UTF-8
 * with some non-ASCII text show as that text (see utf8Preview). */
export function previewHex(hex, max = 32) {
  if (typeof hex !== 'string') return '""';
  const even = hex.length - (hex.length % 2);
  let bytes;
  try {
    // (3 octets more than shown: enough to finish a character cut at `max`)
    bytes = hexToBytes(hex.slice(0, Math.min(even, 2 * (max + 4))));
  } catch {
    return hex.slice(0, max);
  }
  const text = utf8Preview(bytes, max, even / 2);
  return text !== null ? text : escapeBytes(bytes, max);
}

const UTF8 = typeof TextDecoder === 'function' ? new TextDecoder('utf-8', { fatal: true }) : null;

/** `bytes` as text when they are UTF-8 (not mere ASCII), else null. */
export function utf8Text(bytes) {
  if (!UTF8 || !bytes.some((b) => b >= 0x80)) return null;
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * A quoted preview of UTF-8 text (escaped as escapeBytes does), or null when the first `max` octets
 * (ended at a character boundary) are not UTF-8 or are plain ASCII. `total`: the whole length, for the
 * ellipsis.
 */
export function utf8Preview(bytes, max = 32, total = bytes.length) {
  let n = Math.min(bytes.length, max);
  while (n > 0 && n < bytes.length && (bytes[n] & 0xc0) === 0x80) n--; // not inside a character
  const text = utf8Text(bytes.subarray ? bytes.subarray(0, n) : bytes.slice(0, n));
  if (text === null) return null;
  let s = '';
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (ch === '"') s += '\\"';
    else if (ch === '\\') s += '\\\\';
    else if (c === 0x0a) s += '\\n';
    else if (c === 0x0d) s += '\\r';
    else if (c === 0x09) s += '\\t';
    else if (c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0)) s += '\\x' + byteHex(c & 0xff);
    else s += ch;
  }
  return '"' + s + '"' + (total > n ? '…' : '');
}

/**
 * The UTF-8 column of a text dump: per octet, the character it starts (its continuation octets get ''),
 * or '.' for an octet that is not printable or not part of a character complete within `bytes`.
 */
export function utf8Cells(bytes) {
  const out = new Array(bytes.length).fill('.');
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (len === 1) {
      out[i] = isPrintable(b) ? String.fromCharCode(b) : '.';
      i++;
      continue;
    }
    const text = len && i + len <= bytes.length ? utf8Text(bytes.slice(i, i + len)) : null;
    if (text === null || /[\u0080-\u009f]/.test(text)) {
      i++;
      continue;
    }
    out[i] = text;
    for (let k = 1; k < len; k++) out[i + k] = '';
    i += len;
  }
  return out;
}

/** UTF-8 encode a string. */
export function utf8Encode(text) {
  return new TextEncoder().encode(text);
}

/** Byte count in words: "1 octet", "41 octets", "1,048,576 octets". */
export function octets(i18n, n) {
  return i18n.tn('ui.octets', n, { n: formatCount(n) });
}

const COUNT_FORMAT = new Intl.NumberFormat('en-US'); // (made once: toLocaleString makes one per call)

export function formatCount(n) {
  return COUNT_FORMAT.format(Number(n));
}

/** Human size: 1023 B, 1.5 KiB, 2.0 MiB. */
export function humanSize(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}
