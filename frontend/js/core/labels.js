// One-line summaries of events, like Wireshark's Info column. DOM-free.
// They read only the event's kind keys (see docs/architecture.md "The event contract").

import { previewHex, octets } from './bytes.js';

const PREVIEW = 24;

function hexText(hex, max = PREVIEW) {
  return previewHex(typeof hex === 'string' ? hex : '', max);
}

/** A property value (text where UTF-8, else hex, as the backend sends it). */
function propertyText(value) {
  if (value === '' || value === null || value === undefined) return '""';
  const s = String(value);
  return /[\s"=]/.test(s) || s.length > 40 ? JSON.stringify(s.length > 40 ? s.slice(0, 40) + '…' : s) : s;
}

function commandLabel(ev) {
  const name = ev.name || 'command';
  const parts = [name];
  if (ev.properties && typeof ev.properties === 'object') {
    for (const [k, v] of Object.entries(ev.properties)) parts.push(`${k}=${propertyText(v)}`);
  }
  if (ev.reason !== undefined && ev.reason !== null) parts.push(`reason=${JSON.stringify(String(ev.reason))}`);
  if (typeof ev.ttl === 'number') parts.push(`ttl=${(ev.ttl / 10).toFixed(1)}s`);
  if (typeof ev.context === 'string' && ev.context.length) parts.push(`context=${hexText(ev.context, 16)}`);
  if (typeof ev.topic === 'string') parts.push(hexText(ev.topic));
  if (ev.username !== undefined && ev.username !== null) parts.push(`username=${JSON.stringify(String(ev.username))}`);
  if (ev.password !== undefined && ev.password !== null) parts.push(`password=${JSON.stringify(String(ev.password))}`);
  return parts.join(' ');
}

function greetingLabel(ev) {
  const parts = ['Greeting'];
  if (ev.version) parts.push(String(ev.version));
  if (ev.mechanism) parts.push(String(ev.mechanism));
  if (ev.as_server) parts.push('as-server');
  if (ev.socket_type) parts.push(String(ev.socket_type));
  if (typeof ev.identity === 'string' && ev.identity.length) parts.push(`Identity=${hexText(ev.identity)}`);
  return parts.join(' ');
}

function frameLabel(ev) {
  const parts = ['Frame'];
  if (ev.more) parts.push('MORE');
  if (ev.long) parts.push('LONG');
  if (typeof ev.size === 'number') parts.push(`size=${ev.size}`);
  if (typeof ev.body === 'string') {
    const preview = hexText(ev.body);
    // A body the backend cut (--max-body) but shorter than the preview: still mark the cut.
    parts.push(ev.truncated && !preview.endsWith('…') ? preview + '…' : preview);
  }
  return parts.join(' ');
}

function messageLabel(ev) {
  const frames = Array.isArray(ev.frames) ? ev.frames : [];
  const n = frames.length;
  const head = `Message [${n} frame${n === 1 ? '' : 's'}]`;
  const shown = frames.slice(0, 4).map((f) => hexText(f, n === 1 ? 40 : 20));
  if (n > 4) shown.push(`+${n - 4} more`);
  return [head, ...shown].join(' ');
}

/** Wireshark-style Info column text for any event; what a CURVE box held (opened with the session's keys) says so. */
export function infoLabel(ev) {
  if (!ev || typeof ev !== 'object') return '';
  const label = kindLabel(ev);
  return ev.decrypted ? `${label} (decrypted)` : label;
}

function kindLabel(ev) {
  switch (ev.kind) {
    case 'greeting':
      return greetingLabel(ev);
    case 'command':
      return commandLabel(ev);
    case 'frame':
      return frameLabel(ev);
    case 'message':
      return messageLabel(ev);
    case 'expert':
      return `[${ev.severity || 'note'}] ${ev.text || ''}`;
    case 'gap':
      return `Gap: ${octets(ev.length || 0)} missing`;
    default:
      return String(ev.kind || 'element');
  }
}

/** A short title for headers: "READY (c2s, 43 octets at 64)". */
export function elementTitle(ev) {
  if (!ev) return '';
  const what = ev.kind === 'command' ? ev.name || 'Command' : ev.kind ? ev.kind[0].toUpperCase() + ev.kind.slice(1) : 'Element';
  const where = ev.kind === 'message' || ev.kind === 'expert' ? `${ev.dir}, at ${ev.offset}` : `${ev.dir}, ${octets(ev.length || 0)} at ${ev.offset}`;
  return `${what} (${where})`;
}

/**
 * A field's value as plain text for trees and the explanation (value is
 * string/number/bool); long values (a 1 MiB body) are cut at `max` characters.
 */
export function fieldValueText(field, max = 200) {
  const v = field ? field.value : undefined;
  if (v === null || v === undefined) return '';
  const s = String(v);
  return s.length > max ? `${s.slice(0, max)}… (${(s.length - max).toLocaleString('en-US')} more characters)` : s;
}
