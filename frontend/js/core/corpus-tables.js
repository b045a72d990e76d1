// What the Corpus page shows of a run: the columns of its three tables, the
// progress line, page ranges. DOM-free: every function returns plain text (the
// views put it in text nodes; table values are data, never markup).

import { infoLabel } from './labels.js';
import { formatCount, humanSize } from './bytes.js';

export const TABLES = ['events', 'connections', 'errors'];
export const EVENT_KINDS = ['greeting', 'command', 'frame', 'message', 'expert', 'gap'];
export const PAGE_SIZE = 50;

/** The filters each table's bar offers (the backend refuses the others). */
export const TABLE_FILTERS = {
  events: ['capture', 'kind', 'dir', 'conn'],
  connections: ['capture'],
  errors: ['capture'],
};

const DIRS = { c2s: 'C→S', s2c: 'S→C' };

/** Any cell value as text: '–' for none, yes/no, lists joined, objects as JSON. */
export function cellText(value) {
  if (value === null || value === undefined || value === '') return '–';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') return Number.isInteger(value) ? formatCount(value) : String(value);
  if (Array.isArray(value)) return value.map(cellText).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A capture time (seconds since the epoch) as UTC time of day with microseconds. */
export function timeText(ts) {
  if (typeof ts !== 'number' || !Number.isFinite(ts)) return '–';
  const whole = Math.floor(ts);
  const micros = String(Math.round((ts - whole) * 1e6)).padStart(6, '0').slice(0, 6);
  return `${new Date(whole * 1000).toISOString().slice(11, 19)}.${micros}`;
}

function endpoint(ip, port) {
  if (!ip) return '–';
  return String(ip).includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function pair(a, b, sep = ' / ') {
  if (!a && !b) return '–';
  if (a === b) return String(a);
  return `${a || '?'}${sep}${b || '?'}`;
}

const captureName = (row, ctx) => (ctx && ctx.names && ctx.names.get(row.capture)) || cellText(row.capture);

/**
 * The columns of a table: [{ key, label, cls, text(row, ctx) }]; ctx.names maps
 * capture ids to the run's capture names.
 */
export function columns(table) {
  switch (table) {
    case 'events':
      return [
        { key: 'capture', label: 'Capture', cls: 'c-capture', text: captureName },
        { key: 'conn', label: 'Conn', cls: 'num', text: (r) => cellText(r.conn) },
        { key: 'seq', label: '#', cls: 'num', text: (r) => cellText(r.seq) },
        { key: 'dir', label: 'Dir', text: (r) => DIRS[r.dir] || cellText(r.dir) },
        { key: 'kind', label: 'Kind', text: (r) => cellText(r.kind) },
        { key: 'offset', label: 'Offset', cls: 'num', text: (r) => cellText(r.offset) },
        { key: 'length', label: 'Length', cls: 'num', text: (r) => cellText(r.length) },
        { key: 'ts', label: 'Time (UTC)', cls: 'mono', text: (r) => timeText(r.ts) },
        { key: 'packets', label: 'Packets', cls: 'num', text: (r) => (Array.isArray(r.packets) ? r.packets.join(',') : '–') },
        { key: 'info', label: 'Info', cls: 'c-info mono', text: (r) => infoLabel(r) },
      ];
    case 'connections':
      return [
        { key: 'capture', label: 'Capture', cls: 'c-capture', text: captureName },
        { key: 'conn', label: 'Conn', cls: 'num', text: (r) => cellText(r.conn) },
        { key: 'client', label: 'Client', cls: 'mono', text: (r) => endpoint(r.client_ip, r.client_port) },
        { key: 'server', label: 'Server', cls: 'mono', text: (r) => endpoint(r.server_ip, r.server_port) },
        { key: 'zmtp', label: 'ZMTP', text: (r) => (r.zmtp ? pair(r.version_c2s, r.version_s2c) : 'no') },
        { key: 'mechanism', label: 'Mechanism', text: (r) => cellText(r.mechanism) },
        { key: 'sockets', label: 'Sockets (client → server)', text: (r) => pair(r.socket_type_client, r.socket_type_server, ' → ') },
        { key: 'packets', label: 'Packets', cls: 'num', text: (r) => cellText(r.packets) },
        { key: 'messages', label: 'Messages', cls: 'num', text: (r) => cellText(r.messages) },
        { key: 'message_bytes', label: 'Message octets', cls: 'num', text: (r) => cellText(r.message_bytes) },
        { key: 'events', label: 'Events', cls: 'num', text: (r) => cellText(r.events) },
        { key: 'experts', label: 'Expert (errors)', cls: 'num', text: (r) => `${cellText(r.experts)} (${cellText(r.expert_errors)})` },
        { key: 'close_reason', label: 'Ended by', text: (r) => cellText(r.close_reason) },
      ];
    case 'errors':
      return [
        { key: 'capture', label: 'Capture', cls: 'c-capture', text: captureName },
        { key: 'kind', label: 'Kind', text: (r) => cellText(r.kind) },
        { key: 'message', label: 'Message', cls: 'c-info', text: (r) => cellText(r.message) },
        { key: 'offset', label: 'Offset', cls: 'num', text: (r) => cellText(r.offset) },
        { key: 'frame', label: 'After frame', cls: 'num', text: (r) => cellText(r.frame) },
      ];
    default:
      throw new Error(`no table ${table}`);
  }
}

/** "51–100 of 1,234", or "no rows". */
export function pageText(offset, count, total) {
  if (!total || !count) return total ? `none of ${formatCount(total)} here` : 'no rows';
  return `${formatCount(offset + 1)}–${formatCount(offset + count)} of ${formatCount(total)}`;
}

/** The progress line of a run: "events · 45% · 12/24 tasks · 8.2 s". */
export function progressText(msg) {
  if (!msg) return '';
  const pct = Math.round(100 * Math.max(0, Math.min(1, Number(msg.fraction) || 0)));
  const parts = [msg.state === 'running' ? msg.phase || 'running' : msg.state, `${pct}%`];
  if (msg.state === 'running' && msg.tasks_total) parts.push(`${msg.tasks_done}/${msg.tasks_total} tasks`);
  if (typeof msg.elapsed === 'number') parts.push(`${msg.elapsed.toFixed(1)} s`);
  if (msg.detail) parts.push(msg.detail);
  return parts.join(' · ');
}

/** One line about a run for the run list: "3 captures · 31 events · 1 error". */
export function runFacts(run) {
  const n = Array.isArray(run.captures) ? run.captures.length : 0;
  const parts = [`${n} capture${n === 1 ? '' : 's'}`];
  const s = run.summary;
  if (s) {
    parts.push(`${formatCount(s.events)} events`, `${formatCount(s.connections)} connections`);
    if (s.errors) parts.push(`${formatCount(s.errors)} damaged`);
  }
  return parts.join(' · ');
}

/** "dealer_router.pcapng (3.0 KiB, 15:41:12)" for the capture picker: the time tells two uploads of a file apart. */
export function captureText(capture) {
  const when = startedText(capture.created);
  return `${capture.name} (${humanSize(Number(capture.size) || 0)}${when ? `, ${when}` : ''})`;
}

/** A start or upload time as local "HH:MM:SS" (runs and uploads are kept a day). */
export function startedText(created) {
  if (typeof created !== 'number') return '';
  const d = new Date(created * 1000);
  const two = (n) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
