// The Live tab's pieces: the request from the form, the websocket, the per-connection
// model (what the connection list shows), the routes, and the panel in a fake DOM.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument, walk } from './fake-dom.mjs';
import { createApi } from '../../frontend/js/core/api.js';
import { LiveModel, openLive, liveRequest, parsePort, statusText, describeSource } from '../../frontend/js/core/live.js';
import { LivePanel } from '../../frontend/js/views/live.js';
import { fakeFetch, fakeWebSocket } from './fakes.mjs';

const EVIL = '<img src=x onerror=alert(1)>';

test('the request comes from the form, or an error saying what is wrong', () => {
  assert.deepEqual(liveRequest(en, { source: 'capture', interface: 'lo', port: ' 5555 ' }), { source: 'capture', interface: 'lo', port: 5555 });
  assert.match(liveRequest(en, { source: 'capture', interface: '', port: '5555' }).error, /interface/);
  for (const port of ['0', '65536', '55a', '-1', '', '5555.0', '1e3']) assert.match(liveRequest(en, { source: 'capture', interface: 'lo', port }).error, /Port/, port);
  assert.deepEqual(liveRequest(en, { source: 'tap', target: '127.0.0.1:5555', listenPort: '' }), { source: 'tap', target: '127.0.0.1:5555', listen_port: 0 });
  assert.deepEqual(liveRequest(en, { source: 'tap', target: ' localhost:6000 ', listenPort: '7000' }), { source: 'tap', target: 'localhost:6000', listen_port: 7000 });
  assert.match(liveRequest(en, { source: 'tap', target: '127.0.0.1', listenPort: '' }).error, /Target/);
  assert.match(liveRequest(en, { source: 'tap', target: 'a b:5555', listenPort: '' }).error, /Target/);
  assert.match(liveRequest(en, { source: 'tap', target: 'h:70000', listenPort: '' }).error, /Target/);
  assert.match(liveRequest(en, { source: 'tap', target: 'h:5555', listenPort: '99999' }).error, /Listen/);
  assert.equal(parsePort('0', { allowZero: true }), 0);
  assert.equal(parsePort('0'), null);
});

test('status line and source description', () => {
  assert.equal(statusText(en, { state: 'capturing', packets: 1, events: 12, connections: 1, dropped: 0 }), 'capturing · 1 packet · 12 events · 1 connection · 0 dropped');
  assert.equal(statusText(en, { state: 'stopped', packets: null, events: 0, connections: 2, dropped: 3 }), 'stopped · 0 events · 2 connections · 3 dropped');
  assert.equal(describeSource(en, { kind: 'capture', interface: 'lo', port: 5555 }), 'live capture of tcp port 5555 on lo');
  assert.equal(describeSource(en, { kind: 'tap', listen: '127.0.0.1:6000', target: '127.0.0.1:5555' }), 'tap proxy 127.0.0.1:6000 → 127.0.0.1:5555');
});

test('live routes', async () => {
  const { fetch, calls } = fakeFetch((url, init) => {
    if (url === '/api/live/interfaces') return [200, { interfaces: ['any', 'lo'] }];
    if (url === '/api/live' && init.method === 'POST') return [422, { detail: "no such interface: 'x'" }];
    return [204, undefined];
  });
  const api = createApi({ i18n: en, fetch });
  assert.deepEqual(await api.liveInterfaces(), { interfaces: ['any', 'lo'] });
  await assert.rejects(api.createLive({ source: 'capture', interface: 'x', port: 1 }), (e) => e.status === 422 && /no such interface/.test(e.message));
  assert.equal(await api.stopLive('a b'), null);
  assert.deepEqual(calls.map((c) => `${c.method} ${c.url}`), ['GET /api/live/interfaces', 'POST /api/live', 'DELETE /api/live/a%20b']);
  assert.equal(api.liveSocketUrl({ protocol: 'https:', host: 'lab' }, 's1'), 'wss://lab/ws/live/s1?batch=1&lang=en');
});

test('the websocket hands over connections, events and status', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const got = [];
  const socket = openLive({
    i18n: en,
    WebSocket,
    url: 'ws://x/ws/live/1',
    onEvent: (ev) => got.push(['event', ev.kind]),
    onConnection: (m) => got.push(['connection', m.client]),
    onStatus: (s) => got.push(['status', s.state]),
    onError: (t) => got.push(['error', t]),
    onClose: (code) => got.push(['close', code]),
  });
  const ws = sockets[0];
  ws.onopen();
  assert.ok(socket.isOpen);
  for (const m of [{ type: 'connection', conn: '0', client: 'c', server: 's' }, { type: 'event', event: { kind: 'greeting' } }, { type: 'status', state: 'capturing' }, { type: 'other' }]) ws.onmessage({ data: JSON.stringify(m) });
  // (?batch=1: an array of messages, in order)
  ws.onmessage({ data: JSON.stringify([{ type: 'event', event: { kind: 'frame' } }, { type: 'status', state: 'stopped' }]) });
  ws.onmessage({ data: '{broken' });
  ws.onclose({ code: 1000 });
  assert.deepEqual(got, [['connection', 'c'], ['event', 'greeting'], ['status', 'capturing'], ['event', 'frame'], ['status', 'stopped'], ['error', 'unreadable message from the server'], ['close', 1000]]);
});

test('the model keeps each connection’s events and a capture-style summary', () => {
  const m = new LiveModel();
  m.addConnection({ conn: '0', client: '127.0.0.1:4000', server: '127.0.0.1:5555' });
  const events = [
    { conn: '0', dir: 'c2s', kind: 'greeting', version: '3.1', mechanism: 'NULL', offset: 0, length: 64, seq: 0, ts: 10 },
    { conn: '0', dir: 's2c', kind: 'greeting', version: '3.1', mechanism: 'NULL', offset: 0, length: 64, seq: 1, ts: 10.1 },
    { conn: '0', dir: 'c2s', kind: 'command', name: 'READY', properties: { 'Socket-Type': 'PUSH' }, offset: 64, length: 28, seq: 2, ts: 10.2 },
    { conn: '1', dir: 'c2s', kind: 'expert', severity: 'warn', text: EVIL, offset: 0, length: 0, seq: 3, ts: 11 },
    { conn: '0', dir: 'c2s', kind: 'frame', body: '6869', offset: 92, length: 4, seq: 4, ts: 12 },
    { conn: '0', dir: 'c2s', kind: 'message', frames: ['6869'], offset: 92, length: 4, seq: 5, ts: 12 },
  ];
  for (const ev of events) m.add(ev);
  m.add(events[4]); // seen again (a reconnect replays the history): not counted twice
  assert.equal(m.size, 2);
  const s = m.summary('0');
  assert.deepEqual(
    { client: s.client, server: s.server, versions: s.versions, mechanism: s.mechanism, socket_types: s.socket_types, messages: s.messages, bytes: s.bytes, events: s.events, first_ts: s.first_ts, last_ts: s.last_ts },
    { client: '127.0.0.1:4000', server: '127.0.0.1:5555', versions: { c2s: '3.1', s2c: '3.1' }, mechanism: 'NULL', socket_types: { c2s: 'PUSH', s2c: null }, messages: { c2s: 1, s2c: 0 }, bytes: { c2s: 96, s2c: 64 }, events: 5, first_ts: 10, last_ts: 12 },
  );
  assert.deepEqual(m.summary('1').expert, { note: 0, warn: 1, error: 0 });
  assert.deepEqual(m.log('1').experts, [0]);
  assert.deepEqual(m.summaries().map((x) => x.conn), ['0', '1']);
  assert.equal(m.add({ kind: 'frame' }), -1, 'an event without a direction is ignored');
});

test('the panel offers only the given interfaces and shows server text as text', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const started = [];
  let stopped = 0;
  const panel = new LivePanel(container, { i18n: en, onStart: (f) => started.push(f), onStop: () => stopped++ });
  panel.setInterfaces(['any', 'eth0', 'lo', EVIL]);
  const options = walk(container).filter((el) => el.tagName === 'OPTION');
  assert.deepEqual(options.map((o) => o.value), ['any', 'eth0', 'lo', EVIL]);
  assert.equal(panel.iface.value, 'lo');
  panel.kind.tap.checked = true;
  panel.kind.capture.checked = false;
  panel.kind.tap.dispatch('change');
  assert.ok(panel.captureFields.hidden && !panel.tapFields.hidden);
  const form = walk(container).find((el) => el.tagName === 'FORM');
  const ev = form.dispatch('submit');
  assert.ok(ev.defaultPrevented);
  assert.equal(started[0].source, 'tap');
  panel.setRunning(true);
  assert.equal(panel.stop.disabled, false);
  panel.stop.dispatch('click');
  assert.equal(stopped, 1);
  panel.setListen('127.0.0.1:6000');
  assert.equal(panel.listen.textContent, 'Point your clients at tcp://127.0.0.1:6000');
  panel.setStatus({ state: 'error', detail: EVIL }, 'error · 0 events');
  panel.setError(EVIL);
  assert.ok(container.textContent.includes(`— ${EVIL}`));
  assert.ok(!doc.created.some((el) => ['IMG', 'SCRIPT'].includes(el.tagName)));
  assert.equal(panel.state.className, 'live-state state-error');
});
