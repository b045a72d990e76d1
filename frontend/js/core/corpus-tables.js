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

// A run's states and the pipeline's phases (pipeline/job.py PHASES; web/corpus.py STARTING), by name.
const STATE_IDS = { running: 'ui.run.state.running', done: 'ui.run.state.done', error: 'ui.run.state.error', cancelled: 'ui.run.state.cancelled' };
const PHASE_IDS = { 'starting Spark': 'ui.run.phase.starting', start: 'ui.run.phase.start', plan: 'ui.run.phase.plan', connections: 'ui.run.phase.connections', events: 'ui.run.phase.events', tables: 'ui.run.phase.tables', report: 'ui.run.phase.report' };

/** A run state's name in the page's language (an unknown one as it is). */
export function stateText(i18n, state) {
  return STATE_IDS[state] ? i18n.t(STATE_IDS[state]) : String(state ?? '');
}

/** A pipeline phase's name in the page's language (an unknown one as it is). */
export function phaseText(i18n, phase) {
  return PHASE_IDS[phase] ? i18n.t(PHASE_IDS[phase]) : String(phase ?? '');
}

/** Any cell value as text: '–' for none, yes/no, lists joined, objects as JSON. */
export function cellText(i18n, value) {
  if (value === null || value === undefined || value === '') return '–';
  if (typeof value === 'boolean') return i18n.t(value ? 'ui.yes' : 'ui.no');
  if (typeof value === 'number') return Number.isInteger(value) ? formatCount(value) : String(value);
  if (Array.isArray(value)) return value.map((v) => cellText(i18n, v)).join(', ');
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

/**
 * The columns of a table: [{ key, label, cls, text(row, ctx) }]; ctx.names maps
 * capture ids to the run's capture names.
 */
export function columns(i18n, table) {
  const captureName = (row, ctx) => (ctx && ctx.names && ctx.names.get(row.capture)) || cellText(i18n, row.capture);
  switch (table) {
    case 'events':
      return [
        { key: 'capture', label: i18n.t('ui.col.capture'), cls: 'c-capture', text: captureName },
        { key: 'conn', label: i18n.t('ui.col.conn'), cls: 'num', text: (r) => cellText(i18n, r.conn) },
        { key: 'seq', label: '#', cls: 'num', text: (r) => cellText(i18n, r.seq) },
        { key: 'dir', label: i18n.t('ui.col.dir'), text: (r) => DIRS[r.dir] || cellText(i18n, r.dir) },
        { key: 'kind', label: i18n.t('ui.col.kind'), text: (r) => cellText(i18n, r.kind) },
        { key: 'offset', label: i18n.t('ui.col.offset'), cls: 'num', text: (r) => cellText(i18n, r.offset) },
        { key: 'length', label: i18n.t('ui.col.length'), cls: 'num', text: (r) => cellText(i18n, r.length) },
        { key: 'ts', label: i18n.t('ui.col.time'), cls: 'mono', text: (r) => timeText(r.ts) },
        { key: 'packets', label: i18n.t('ui.col.packets'), cls: 'num', text: (r) => (Array.isArray(r.packets) ? r.packets.join(',') : '–') },
        { key: 'info', label: i18n.t('ui.col.info'), cls: 'c-info mono', text: (r) => infoLabel(i18n, r) },
      ];
    case 'connections':
      return [
        { key: 'capture', label: i18n.t('ui.col.capture'), cls: 'c-capture', text: captureName },
        { key: 'conn', label: i18n.t('ui.col.conn'), cls: 'num', text: (r) => cellText(i18n, r.conn) },
        { key: 'client', label: i18n.t('ui.col.client'), cls: 'mono', text: (r) => endpoint(r.client_ip, r.client_port) },
        { key: 'server', label: i18n.t('ui.col.server'), cls: 'mono', text: (r) => endpoint(r.server_ip, r.server_port) },
        { key: 'zmtp', label: 'ZMTP', text: (r) => (r.zmtp ? pair(r.version_c2s, r.version_s2c) : i18n.t('ui.no')) },
        { key: 'mechanism', label: i18n.t('ui.col.mechanism'), text: (r) => cellText(i18n, r.mechanism) },
        { key: 'sockets', label: i18n.t('ui.col.sockets'), text: (r) => pair(r.socket_type_client, r.socket_type_server, ' → ') },
        { key: 'packets', label: i18n.t('ui.col.packets'), cls: 'num', text: (r) => cellText(i18n, r.packets) },
        { key: 'messages', label: i18n.t('ui.col.messages'), cls: 'num', text: (r) => cellText(i18n, r.messages) },
        { key: 'message_bytes', label: i18n.t('ui.col.messageOctets'), cls: 'num', text: (r) => cellText(i18n, r.message_bytes) },
        { key: 'events', label: i18n.t('ui.col.events'), cls: 'num', text: (r) => cellText(i18n, r.events) },
        { key: 'experts', label: i18n.t('ui.col.experts'), cls: 'num', text: (r) => `${cellText(i18n, r.experts)} (${cellText(i18n, r.expert_errors)})` },
        { key: 'close_reason', label: i18n.t('ui.col.endedBy'), text: (r) => cellText(i18n, r.close_reason) },
      ];
    case 'errors':
      return [
        { key: 'capture', label: i18n.t('ui.col.capture'), cls: 'c-capture', text: captureName },
        { key: 'kind', label: i18n.t('ui.col.kind'), text: (r) => cellText(i18n, r.kind) },
        { key: 'message', label: i18n.t('ui.col.message'), cls: 'c-info', text: (r) => cellText(i18n, r.message) },
        { key: 'offset', label: i18n.t('ui.col.offset'), cls: 'num', text: (r) => cellText(i18n, r.offset) },
        { key: 'frame', label: i18n.t('ui.col.afterFrame'), cls: 'num', text: (r) => cellText(i18n, r.frame) },
      ];
    default:
      throw new Error(`no table ${table}`);
  }
}

/** "51–100 of 1,234", or "no rows". */
export function pageText(i18n, offset, count, total) {
  if (!total || !count) return total ? i18n.t('ui.page.noneHere', { total: formatCount(total) }) : i18n.t('ui.page.noRows');
  return i18n.t('ui.page.range', { from: formatCount(offset + 1), to: formatCount(offset + count), total: formatCount(total) });
}

/** The progress line of a run: "events · 45% · 12/24 tasks · 8.2 s". */
export function progressText(i18n, msg) {
  if (!msg) return '';
  const pct = Math.round(100 * Math.max(0, Math.min(1, Number(msg.fraction) || 0)));
  const parts = [msg.state === 'running' ? (msg.phase ? phaseText(i18n, msg.phase) : stateText(i18n, 'running')) : stateText(i18n, msg.state), `${pct}%`];
  if (msg.state === 'running' && msg.tasks_total) parts.push(i18n.t('ui.run.tasks', { done: msg.tasks_done, total: msg.tasks_total }));
  if (typeof msg.elapsed === 'number') parts.push(i18n.t('ui.tree.seconds', { s: msg.elapsed.toFixed(1) }));
  if (msg.detail) parts.push(msg.detail);
  return parts.join(' · ');
}

/** One line about a run for the run list: "3 captures · 31 events · 1 error". */
export function runFacts(i18n, run) {
  const n = Array.isArray(run.captures) ? run.captures.length : 0;
  const parts = [i18n.tn('ui.run.captures', n)];
  const s = run.summary;
  if (s) {
    parts.push(i18n.t('ui.run.events', { n: formatCount(s.events) }), i18n.t('ui.run.connections', { n: formatCount(s.connections) }));
    if (s.errors) parts.push(i18n.t('ui.run.damaged', { n: formatCount(s.errors) }));
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
