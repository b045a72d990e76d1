// Byte helpers shared by every module: hex <-> bytes, printable previews.
// DOM-free.

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

/** Hex string (no separators, even length) -> Uint8Array. Throws on bad input. */
export function hexToBytes(hex) {
  if (typeof hex !== 'string') return new Uint8Array(0);
  if (hex.length % 2 !== 0) throw new Error(`odd number of hex digits (${hex.length})`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = hexValue(hex.charCodeAt(2 * i));
    const lo = hexValue(hex.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) throw new Error(`not a hex digit at ${2 * i + (hi < 0 ? 0 : 1)}`);
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

/** Preview of a hex string (as the backend sends bodies) — see escapeBytes. */
export function previewHex(hex, max = 32) {
  if (typeof hex !== 'string') return '""';
  const even = hex.length - (hex.length % 2);
  let bytes;
  try {
    bytes = hexToBytes(hex.slice(0, Math.min(even, 2 * (max + 1))));
  } catch {
    return hex.slice(0, max);
  }
  return escapeBytes(bytes, max);
}

/** UTF-8 encode a string. */
export function utf8Encode(text) {
  return new TextEncoder().encode(text);
}

/** Byte count in words: "1 octet", "41 octets", "1,048,576 octets". */
export function octets(n) {
  return `${formatCount(n)} octet${n === 1 ? '' : 's'}`;
}

export function formatCount(n) {
  return Number(n).toLocaleString('en-US');
}

/** Human size: 1023 B, 1.5 KiB, 2.0 MiB. */
export function humanSize(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}
