// One-line summaries of events, like Wireshark's Info column. DOM-free.
// They read only the event's kind keys (see docs/architecture.md "The event contract").

import { previewHex, octets, formatCount } from './bytes.js';

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
  if (typeof ev.code === 'number') parts.push(`code=${ev.code}`); // a WebSocket close (ZWS)
  if (ev.reason !== undefined && ev.reason !== null) parts.push(`reason=${JSON.stringify(String(ev.reason))}`);
  if (typeof ev.data === 'string' && ev.data.length) parts.push(`data=${hexText(ev.data, 16)}`); // a WebSocket ping or pong
  if (typeof ev.ttl === 'number') parts.push(`ttl=${(ev.ttl / 10).toFixed(1)}s`);
  if (typeof ev.context === 'string' && ev.context.length) parts.push(`context=${hexText(ev.context, 16)}`);
  if (typeof ev.topic === 'string') parts.push(hexText(ev.topic));
  if (ev.username !== undefined && ev.username !== null) parts.push(`username=${JSON.stringify(String(ev.username))}`);
  if (ev.password !== undefined && ev.password !== null) parts.push(`password=${JSON.stringify(String(ev.password))}`);
  return parts.join(' ');
}

function greetingLabel(i18n, ev) {
  const parts = [i18n.t('ui.kind.greeting')];
  if (ev.transport === 'zws') {
    // ZMTP over WebSocket (45/ZWS): an HTTP upgrade (request or response), or a routing id; names stay as on the wire.
    parts.push(String(ev.protocol || (Array.isArray(ev.protocols) ? ev.protocols.join(',') : 'ZWS')));
    if (typeof ev.identity === 'string') parts.push(`Identity=${ev.identity.length ? hexText(ev.identity) : '""'}`);
    else if (typeof ev.target === 'string') parts.push(`GET ${ev.target}`);
    else if (ev.status !== undefined && ev.status !== null) parts.push(`HTTP ${ev.status}`);
    return parts.join(' ');
  }
  if (ev.version) parts.push(String(ev.version));
  if (ev.mechanism) parts.push(String(ev.mechanism));
  if (ev.as_server) parts.push('as-server');
  if (ev.socket_type) parts.push(String(ev.socket_type));
  if (typeof ev.identity === 'string' && ev.identity.length) parts.push(`Identity=${hexText(ev.identity)}`);
  return parts.join(' ');
}

function frameLabel(i18n, ev) {
  const parts = [i18n.t('ui.kind.frame')];
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

/** A message's frames: "[2 frames] "a" "b"" (head: the id of the count's words). */
function messageLabel(i18n, ev, head = 'ui.label.message') {
  const frames = Array.isArray(ev.frames) ? ev.frames : [];
  const n = frames.length;
  const shown = frames.slice(0, 4).map((f) => hexText(f, n === 1 ? 40 : 20));
  if (n > 4) shown.push(i18n.t('ui.label.moreFrames', { n: n - 4 }));
  return [i18n.tn(head, n), ...shown].join(' ');
}

/** Wireshark-style Info column text for any event; what a CURVE box held (opened with the session's keys) says so. */
export function infoLabel(i18n, ev) {
  if (!ev || typeof ev !== 'object') return '';
  const label = kindLabel(i18n, ev);
  return ev.decrypted ? i18n.t('ui.label.decrypted', { label }) : label;
}

function kindLabel(i18n, ev) {
  switch (ev.kind) {
    case 'greeting':
      return greetingLabel(i18n, ev);
    case 'command':
      return commandLabel(ev);
    case 'frame':
      return frameLabel(i18n, ev);
    case 'message':
      return messageLabel(i18n, ev);
    case 'expert':
      return `[${severityName(i18n, ev.severity)}] ${ev.text || ''}`;
    case 'gap':
      return i18n.t('ui.label.gap', { octets: octets(i18n, ev.length || 0) });
    case 'socket':
      // A socket's decision (a topology session): the server's plain-language sentence.
      return `${ev.node || '?'}: ${ev.text || ev.what || 'socket'}`;
    case 'peer':
      return ev.what === 'recv' ? i18n.t('ui.label.received', { peer: ev.peer || '?', message: messageLabel(i18n, ev, 'ui.label.frames') }) : `${ev.peer || '?'}: ${ev.what || 'peer'}`;
    default:
      return String(ev.kind || i18n.t('ui.kind.element'));
  }
}

// The element kinds' names (an unknown kind shows as it is).
const KIND_IDS = { greeting: 'ui.kind.greeting', command: 'ui.kind.command', frame: 'ui.kind.frame', message: 'ui.kind.message', expert: 'ui.kind.expert', gap: 'ui.kind.gap', socket: 'ui.kind.socket', peer: 'ui.kind.peer' };

/**
 * A field's name as the page shows it: the engine's (an ABNF rule's name, a wire name, which stays as it is in
 * every language), but a message's "frame N", which is ours and is said in the page's language.
 */
export function fieldName(i18n, field) {
  const name = field && field.name ? String(field.name) : '';
  const frame = /^frame (\d+)$/.exec(name);
  return frame ? i18n.t('ui.field.frame', { n: Number(frame[1]) }) : name;
}

/**
 * A field's name in the octet table: as fieldName says, but the ten octets of a greeting's signature are all the
 * signature, as the ABNF has it (signature = %xFF padding %x7F): "signature: %xFF", "signature: padding",
 * "signature: %x7F" (the engine names octet 0 `signature` and octet 9 `signature-end`).
 */
export function tableName(i18n, event, field) {
  if (event && event.kind === 'greeting' && field) {
    const rel = typeof field.offset === 'number' && typeof event.offset === 'number' ? field.offset - event.offset : -1;
    if (field.name === 'signature' && rel === 0) return i18n.t('ui.octets.signature', { part: '%xFF' });
    if (field.name === 'signature-end' && rel === 9) return i18n.t('ui.octets.signature', { part: '%x7F' });
    if (field.name === 'padding' && rel === 1 && field.length === 8) return i18n.t('ui.octets.signature', { part: i18n.t('ui.octets.signaturePadding') });
  }
  return fieldName(i18n, field);
}
const SEVERITY_IDS = { note: 'ui.severity.note', warn: 'ui.severity.warn', error: 'ui.severity.error' };

/** An element kind's name ("Greeting"). */
export function kindName(i18n, kind) {
  if (KIND_IDS[kind]) return i18n.t(KIND_IDS[kind]);
  return kind ? kind[0].toUpperCase() + kind.slice(1) : i18n.t('ui.kind.element');
}

/** A severity's name (note, warn, error; in Chinese 提示, 警告, 错误). */
export function severityName(i18n, severity) {
  return i18n.t(SEVERITY_IDS[severity] || SEVERITY_IDS.note);
}

/** A direction's name: "client → server" (c2s), "server → client" (s2c). */
export function dirName(i18n, dir) {
  return i18n.t(dir === 's2c' ? 'ui.dir.s2c' : 'ui.dir.c2s');
}

/** A short title for headers: "READY (c2s, 43 octets at 64)". */
export function elementTitle(i18n, ev) {
  if (!ev) return '';
  const what = ev.kind === 'command' ? ev.name || kindName(i18n, 'command') : kindName(i18n, ev.kind);
  // A topology's socket decision or application receive: no octets, a node.
  if (ev.kind === 'socket' || ev.kind === 'peer') return `${what} (${ev.node || ev.peer || '?'})`;
  if (ev.kind === 'message' || ev.kind === 'expert') return i18n.t('ui.title.at', { what, dir: ev.dir, offset: ev.offset });
  return i18n.t('ui.title.octetsAt', { what, dir: ev.dir, octets: octets(i18n, ev.length || 0), offset: ev.offset });
}

/**
 * A field's value as plain text for trees and the explanation (value is
 * string/number/bool); long values (a 1 MiB body) are cut at `max` characters.
 */
export function fieldValueText(i18n, field, max = 200) {
  const v = field ? field.value : undefined;
  if (v === null || v === undefined) return '';
  const s = String(v);
  return s.length > max ? `${s.slice(0, max)}${i18n.tn('ui.label.moreChars', s.length - max, { n: formatCount(s.length - max) })}` : s;
}
