// The Corpus page's DOM-free modules (its routes, the table columns, the
// progress line) and its views rendered into the fake DOM with hostile table
// values: `<img src=x onerror=alert(1)>` must stay characters.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument, walk } from './fake-dom.mjs';
import { createCorpusApi } from '../../frontend/js/core/corpus-api.js';
import { columns, cellText, timeText, pageText, progressText, runFacts, TABLES } from '../../frontend/js/core/corpus-tables.js';
import { CapturePicker, RunList, RunHead, TableView } from '../../frontend/js/views/corpus.js';
import { fakeFetch, fakeEventSource } from './fakes.mjs';

const EVIL = '<img src=x onerror=alert(1)>';
const EVIL_HEX = Buffer.from(EVIL).toString('hex');

test('corpus routes, their errors and the progress stream', async () => {
  const { fetch, calls } = fakeFetch((url, init) => {
    if (url === '/api/corpus/runs' && init.method === 'POST') return [409, { detail: 'another corpus run is in progress' }];
    if (url === '/api/corpus/runs') return [200, { runs: [] }];
    if (url.startsWith('/api/corpus/runs/r%201/tables/events?')) return [200, { rows: [], total: 0, offset: 0, limit: 50 }];
    if (url === '/api/corpus/runs/r%201/cancel') return [202, { id: 'r 1', state: 'running' }];
    if (url === '/api/corpus/runs/r%201' && init.method === 'DELETE') return [204, undefined];
    return [404, { detail: 'no corpus run' }];
  });
  const { EventSource, sources } = fakeEventSource();
  const api = createCorpusApi({ i18n: en, fetch, EventSource });
  await assert.rejects(api.startRun(['a', 'b']), (e) => e.status === 409 && /in progress/.test(e.message));
  assert.deepEqual(calls[0], { url: '/api/corpus/runs', method: 'POST', body: { captures: ['a', 'b'] } });
  assert.deepEqual(await api.runs(), { runs: [] });
  await api.table('r 1', 'events', { offset: 50, limit: 50, capture: 'c&d', kind: '', conn: '0' });
  assert.equal(calls[2].url, '/api/corpus/runs/r%201/tables/events?offset=50&limit=50&capture=c%26d&conn=0');
  assert.equal((await api.cancelRun('r 1')).state, 'running');
  assert.equal(await api.deleteRun('r 1'), null);
  await assert.rejects(api.run('gone'), (e) => e.status === 404);
  assert.equal(api.reportUrl('r 1'), '/api/corpus/runs/r%201/report?lang=en');

  const seen = [];
  let failed = 0;
  api.followProgress('r 1', (m) => seen.push(m.phase), () => failed++);
  const es = sources[0];
  assert.equal(es.url, '/api/corpus/runs/r%201/progress');
  es.onmessage({ data: JSON.stringify({ state: 'running', phase: 'events', fraction: 0.5 }) });
  es.onmessage({ data: 'not json' });
  es.onmessage({ data: JSON.stringify({ state: 'cancelled', phase: 'events', fraction: 0.5 }) });
  assert.deepEqual(seen, ['events', 'events']);
  assert.ok(es.closed);
  es.onerror();
  assert.equal(failed, 0, 'an ended stream is not a failure');
});

test('table columns, cells and progress as text', () => {
  const names = new Map([['c1', 'dealer_router.pcapng']]);
  const ready = { capture: 'c1', conn: '0', seq: 3, dir: 'c2s', kind: 'command', offset: 64, length: 51, ts: 1795327759.1670804, packets: [13], name: 'READY', properties: { 'Socket-Type': 'DEALER', Identity: 'client-1' }, topic: null, reason: null };
  const text = Object.fromEntries(columns(en, 'events').map((c) => [c.key, c.text(ready, { names })]));
  assert.deepEqual(text, {
    capture: 'dealer_router.pcapng', conn: '0', seq: '3', dir: 'C→S', kind: 'command', offset: '64', length: '51',
    ts: '06:09:19.167080', packets: '13', info: 'READY Socket-Type=DEALER Identity=client-1',
  });
  const conn = { capture: 'c9', conn: '2', client_ip: '::1', client_port: 4000, server_ip: '127.0.0.1', server_port: 5555, zmtp: true, version_c2s: '3.1', version_s2c: '3.0', mechanism: 'NULL', socket_type_client: 'DEALER', socket_type_server: null, packets: 12, messages: 1500, message_bytes: 2048, events: 9, experts: 1, expert_errors: 0, close_reason: 'fin' };
  const ctext = Object.fromEntries(columns(en, 'connections').map((c) => [c.key, c.text(conn, { names })]));
  assert.equal(ctext.capture, 'c9'); // a capture the run does not name shows its id
  assert.equal(ctext.client, '[::1]:4000');
  assert.equal(ctext.zmtp, '3.1 / 3.0');
  assert.equal(ctext.sockets, 'DEALER → ?');
  assert.equal(ctext.messages, '1,500');
  assert.equal(ctext.experts, '1 (0)');
  assert.deepEqual(columns(en, 'errors').map((c) => c.key), ['capture', 'kind', 'message', 'offset', 'frame']);
  assert.deepEqual(TABLES, ['events', 'connections', 'errors']);
  assert.throws(() => columns(en, 'secrets'));

  assert.equal(cellText(en, null), '–');
  assert.equal(cellText(en, false), 'no');
  assert.equal(cellText(en, [1, 2]), '1, 2');
  assert.equal(cellText(en, { a: EVIL }), JSON.stringify({ a: EVIL }));
  assert.equal(timeText(undefined), '–');
  assert.equal(pageText(en, 50, 50, 1234), '51–100 of 1,234');
  assert.equal(pageText(en, 0, 0, 0), 'no rows');
  assert.equal(progressText(en, { state: 'running', phase: 'events', fraction: 0.456, tasks_done: 12, tasks_total: 24, elapsed: 8.24, detail: '' }), 'events · 46% · 12/24 tasks · 8.2 s');
  assert.equal(progressText(en, { state: 'error', phase: 'plan', fraction: 0.1, tasks_total: 3, elapsed: 1, detail: 'boom' }), 'error · 10% · 1.0 s · boom');
  assert.equal(runFacts(en, { captures: [{}, {}], summary: { events: 31, connections: 3, errors: 1 } }), '2 captures · 31 events · 3 connections · 1 damaged');
});

function assertInert(doc, root) {
  const tags = new Set(doc.created.map((el) => el.tagName));
  for (const bad of ['IMG', 'SCRIPT', 'OBJECT', 'EMBED']) assert.ok(!tags.has(bad), `a ${bad} element was created`);
  for (const el of walk(root)) for (const name of el.attributes.keys()) assert.doesNotMatch(name, /^on/i);
  assert.ok(root.textContent.includes(EVIL), 'the payload is shown as characters');
}

test('picker, run list, run head and table keep hostile values as text', () => {
  const doc = createDocument();
  const slot = () => doc.createElement('div');
  const [pickC, runsC, headC, tableC] = [slot(), slot(), slot(), slot()];

  const started = [];
  const picker = new CapturePicker(pickC, { i18n: en, onUpload: () => {}, onStart: (ids) => started.push(ids) });
  picker.setCaptures([{ id: 'c1', name: EVIL, size: 3100 }, { id: 'c2', name: 'b.pcapng', size: 10 }], new Set(['c2']));
  assert.deepEqual(picker.selected(), ['c2']);
  picker.checkAll(true);
  picker.start.click();
  assert.deepEqual(started, [['c1', 'c2']]);
  picker.setBusy(true);
  assert.ok(picker.start.disabled);
  assertInert(doc, pickC);

  const opened = [];
  const runs = new RunList(runsC, { i18n: en, onOpen: (id) => opened.push(id) });
  const run = { id: 'r1', state: 'done', created: 0, captures: [{ id: 'c1', name: EVIL, size: 1 }], summary: { events: 1, connections: 1, errors: 0 } };
  runs.setRuns([run], 'r1');
  walk(runsC).find((el) => el.tagName === 'LI').click();
  assert.deepEqual(opened, ['r1']);
  assertInert(doc, runsC);

  const head = new RunHead(headC, { i18n: en, onCancel: () => {}, onDelete: () => {} });
  head.setRun({ ...run, state: 'running', phase: 'events', fraction: 0.5, tasks_done: 1, tasks_total: 2, elapsed: 3, detail: '' });
  assert.equal(head.bar.value, 50);
  assert.ok(!head.cancel.hidden);
  head.setProgress({ state: 'error', phase: 'events', fraction: 0.5, elapsed: 4, detail: EVIL });
  assert.ok(head.cancel.hidden && !head.error.hidden);
  assertInert(doc, headC);

  const queries = [];
  const table = new TableView(tableC, { i18n: en, onQuery: (q) => queries.push(q) });
  table.configure('events', run.captures, { capture: '', kind: 'command' });
  const row = { capture: 'c1', conn: '0', seq: 0, dir: 'c2s', kind: 'command', offset: 64, length: 51, name: 'READY', properties: { Identity: EVIL } };
  const message = { capture: 'c1', conn: '0', seq: 1, dir: 'c2s', kind: 'message', offset: 115, length: 40, frames: [EVIL_HEX] };
  table.setPage('events', { rows: [row, message], total: 120, offset: 50 }, { names: new Map([['c1', EVIL]]) });
  assert.equal(table.range.textContent, '51–52 of 120');
  assert.ok(!table.prev.disabled && !table.next.disabled);
  table.next.click();
  assert.deepEqual(queries, [{ offset: 100 }]);
  const cells = walk(tableC).filter((el) => el.tagName === 'TD').map((td) => td.textContent);
  assert.ok(cells.some((t) => t.includes(`Identity="${EVIL}"`)), cells);
  assert.ok(cells.some((t) => t.includes(EVIL)), 'the message body previews as text');
  walk(tableC).filter((el) => el.tagName === 'TR')[1].click();
  assert.ok(!table.detail.hidden && table.detail.textContent.includes(EVIL));
  assertInert(doc, tableC);
});
