// The capture Overview: the topology layout (protocol-free core) and its view, on what
// `zmtplab analyze --json` says of two recorded libzmq captures (tests/frontend/data; the Python
// suite checks those files still equal the analysis).
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDocument, walk, byClass } from './fake-dom.mjs';
import { layoutTopology, findingsByConn, flowConns, worse } from '../../frontend/js/core/topology.js';
import { OverviewView } from '../../frontend/js/views/overview.js';

const DATA = path.join(path.dirname(fileURLToPath(import.meta.url)), 'data');
const load = (name) => JSON.parse(fs.readFileSync(path.join(DATA, `${name}.analysis.json`), 'utf8'));
const text = (el) => walk(el).filter((n) => n.nodeType === 3 || n.textContent !== undefined).map((n) => n.textContent).join('');

test('a broker stands in the middle, its clients left and its workers right', () => {
  const layout = layoutTopology(en, load('broker'), { width: 900 });
  const byColumn = [0, 1, 2].map((c) => layout.nodes.filter((n) => n.column === c));
  assert.deepEqual(byColumn[1].map((n) => [n.label, n.broker]), [['127.0.0.1:15643+15644', true]]);
  assert.deepEqual(byColumn[0].map((n) => n.sockets.join()), ['REQ', 'REQ', 'REQ']);
  assert.deepEqual(byColumn[2].map((n) => n.sockets.join()), ['REP', 'REP']);
  assert.equal(layout.edges.length, 5);
  for (const e of layout.edges) {
    assert.ok(e.from && e.to, `edge ${e.conn} has both ends`);
    assert.ok(e.x1 !== e.x2, 'client and server are in different columns');
  }
  assert.match(layout.edges.find((e) => e.conn === '2').label, /^#2 REQ → ROUTER 2\/2$/);
});

test('findings colour their connections, the worst severity wins', () => {
  assert.equal(worse('warn', 'error'), 'error');
  assert.equal(worse('error', 'note'), 'error');
  const sev = findingsByConn([{ conns: ['0', '1'], severity: 'warn' }, { conns: ['1'], severity: 'error' }]);
  assert.deepEqual([...sev.entries()], [['0', 'warn'], ['1', 'error']]);
  const layout = layoutTopology(en, load('pub_late_sub'));
  assert.deepEqual(layout.edges.map((e) => e.severity), ['warn', 'warn']);
});

test('the view lists findings with their events and draws a picked flow', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const opened = [];
  const view = new OverviewView(container, { i18n: en, onOpenEvent: (conn, index) => opened.push([conn, index]) });
  view.setAnalysis(load('pub_late_sub'));
  const [finding] = byClass(container, 'finding');
  assert.match(text(finding), /late-subscriber/);
  assert.match(text(finding), /10 matching message\(s\) on connection 0/);
  const [link] = byClass(finding, 'event-link');
  link.click();
  assert.equal(opened.length, 1);
  assert.equal(opened[0][0], '1');

  const broker = load('broker');
  view.setAnalysis(broker);
  assert.equal(byClass(container, 'flow-row').length, 12);
  assert.equal(byClass(container, 'edge').filter((g) => g.getAttribute('class').includes(' on')).length, 0);
  byClass(container, "flow-row")[0].click();
  const lit = byClass(container, 'edge').filter((g) => g.getAttribute('class').split(' ').includes('on'));
  assert.deepEqual(lit.map((g) => g.getAttribute('data-conn')).sort(), flowConns(broker.flows[0]).sort());
  assert.ok(byClass(container, 'flow-row')[0].classList.contains('on'));
});

test('an empty analysis says so', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const view = new OverviewView(container, { i18n: en });
  view.setAnalysis({ nodes: [], connections: [], flows: [], flows_total: 0, findings: [], curve: {} });
  assert.match(text(container), /No TCP connection with payload/);
  assert.match(text(container), /No findings/);
  view.setMessage('Analysing…');
  assert.match(text(container), /Analysing…/);
});

test('refused connects are counted under the graph, and an ambiguous flow says why', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const view = new OverviewView(container, { i18n: en });
  const analysis = load('broker');
  const flows = [{ ...analysis.flows[0], ambiguous: true, why: 'routing id 00aa fits connection 2 and connection 3 alike' }];
  view.setAnalysis({ ...analysis, flows, flows_total: 1,
    refused: [{ server: '127.0.0.1:15708', count: 3, first_ts: 10, last_ts: 10.14, clients: ['127.0.0.1:17600'], conns: ['2', '3', '4'] }] });
  assert.match(text(container), /3 refused connect\(s\) to 127\.0\.0\.1:15708 \(SYN answered by RST\) over 0\.14 s, from 127\.0\.0\.1:17600/);
  const [row] = byClass(container, 'flow-row');
  assert.match(text(row), /routing id 00aa fits connection 2 and connection 3 alike/);
  const [badge] = byClass(row, 'sev-badge');
  assert.equal(badge.getAttribute('title'), 'routing id 00aa fits connection 2 and connection 3 alike');
});
