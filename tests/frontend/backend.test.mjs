// The pages' side of the backend contract: HTTP routes, the session websocket,
// deep links — over fake fetch / WebSocket / XMLHttpRequest / EventSource.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createApi, ApiError, detailText } from '../../frontend/js/core/api.js';
import { openSession } from '../../frontend/js/core/session.js';
import { parseLink, buildLink, sessionRequest } from '../../frontend/js/core/links.js';
import { fakeFetch, fakeWebSocket, fakeEventSource } from './fakes.mjs';

test('HTTP routes and their errors', async () => {
  const { fetch, calls } = fakeFetch((url) => {
    if (url === '/api/sessions') return [201, { id: 's1' }];
    if (url === '/api/decode') return [200, { events: [{ kind: 'greeting' }] }];
    if (url.startsWith('/api/captures/c%201/events?')) return [200, { events: [], total: 0 }];
    if (url === '/api/captures/c%201/events/42?conn=0') return [200, { kind: 'frame', fields: [] }];
    if (url === '/api/captures/c%201/packets/7') return [200, { layers: [] }];
    if (url === '/api/captures/missing') return [404, { detail: 'no such capture' }];
    if (url === '/api/captures/bad') return [422, { detail: [{ loc: ['query', 'conn'], msg: 'field required' }] }];
    return [500, undefined];
  });
  const api = createApi({ i18n: en, fetch });
  const req = sessionRequest('simulated', { type: 'PUSH', version: '3.1', mechanism: 'NULL' }, { type: 'PULL', version: '3.0', mechanism: 'PLAIN', username: 'u', password: 'p', libzmq: true });
  assert.deepEqual(await api.createSession(req), { id: 's1' });
  assert.deepEqual(calls[0], {
    url: '/api/sessions',
    method: 'POST',
    body: {
      mode: 'simulated',
      // A real libzmq socket only plays in tcp sessions: a simulated one asks for none. New sessions wait at t = 0.
      server: { type: 'PUSH', version: '3.1', mechanism: 'NULL', identity: '', username: '', password: '', libzmq: false, greeting: 'libzmq' },
      client: { type: 'PULL', version: '3.0', mechanism: 'PLAIN', identity: '', username: 'u', password: 'p', libzmq: false, greeting: 'libzmq' },
      autoplay: false,
    },
  });
  await api.decode('ff00');
  assert.deepEqual(calls[1], { url: '/api/decode', method: 'POST', body: { hex: 'ff00' } });
  await api.captureEvents('c 1', { conn: '0', offset: 200, limit: 200, kind: 'frame', q: 'a&b', fields: 0 });
  assert.equal(calls[2].url, '/api/captures/c%201/events?conn=0&offset=200&limit=200&kind=frame&q=a%26b&fields=0');
  await api.captureEvents('c 1', { conn: '1' });
  assert.equal(calls[3].url, '/api/captures/c%201/events?conn=1&offset=0&limit=200&fields=0');
  assert.deepEqual(await api.captureEvent('c 1', 42, '0'), { kind: 'frame', fields: [] });
  assert.deepEqual(await api.capturePacket('c 1', 7), { layers: [] });
  await assert.rejects(api.capture('missing'), (e) => e instanceof ApiError && e.status === 404 && e.message === 'no such capture');
  await assert.rejects(api.capture('bad'), /query.conn: field required/);
  await assert.rejects(api.capture('other'), /HTTP 500/);
  assert.equal(api.sessionExportUrl('s1', 'pcapng'), '/api/sessions/s1/export.pcapng');
  assert.equal(api.sessionExportUrl('s1', 'json'), '/api/sessions/s1/export.json');
  assert.equal(api.sessionSocketUrl({ protocol: 'https:', host: 'lab:8000' }, 's1'), 'wss://lab:8000/ws/sessions/s1?batch=1&log=0&marks=1&fields=0&lang=en');
  assert.equal(api.sessionSocketUrl({ protocol: 'http:', host: '127.0.0.1:8000' }, 's1'), 'ws://127.0.0.1:8000/ws/sessions/s1?batch=1&log=0&marks=1&fields=0&lang=en');
  // (a student following a presented session: no command taken, a class's connections only counted)
  assert.equal(api.sessionSocketUrl({ protocol: 'http:', host: 'lab' }, 's1', { watch: true }), 'ws://lab/ws/sessions/s1?batch=1&log=0&marks=1&fields=0&watch=1&external=summary&lang=en');
  assert.equal(detailText(en, null, 413), 'the file is too large');
});

test('capture upload reports progress and the server’s refusal', async () => {
  const sent = [];
  class FakeXHR {
    constructor() {
      this.upload = {};
      this.headers = {};
    }
    open(method, url) {
      this.method = method;
      this.url = url;
    }
    setRequestHeader(k, v) {
      this.headers[k] = v;
    }
    send(form) {
      sent.push(this);
      this.form = form;
      this.upload.onprogress({ loaded: 50, total: 100, lengthComputable: true });
      this.upload.onprogress({ loaded: 100, total: 100, lengthComputable: true });
      this.status = FakeXHR.status;
      this.responseText = JSON.stringify(FakeXHR.body);
      this.onload();
    }
  }
  class FakeForm {
    constructor() {
      this.parts = [];
    }
    append(...a) {
      this.parts.push(a);
    }
  }
  const api = createApi({ i18n: en, XMLHttpRequest: FakeXHR, FormData: FakeForm });
  const file = { name: 'x.pcapng', size: 100 };
  const progress = [];
  FakeXHR.status = 201;
  FakeXHR.body = { id: 'c1' };
  assert.deepEqual(await api.uploadCapture(file, (l, t) => progress.push([l, t])).promise, { id: 'c1' });
  assert.deepEqual(progress, [
    [50, 100],
    [100, 100],
  ]);
  assert.equal(sent[0].method, 'POST');
  assert.equal(sent[0].url, '/api/captures');
  assert.deepEqual(sent[0].form.parts, [['file', file, 'x.pcapng']]);
  FakeXHR.status = 415;
  FakeXHR.body = { detail: 'not a capture' };
  await assert.rejects(api.uploadCapture(file).promise, (e) => e.status === 415 && e.message === 'not a capture');
  FakeXHR.status = 413;
  FakeXHR.body = null;
  await assert.rejects(api.uploadCapture(file).promise, /too large/);
});

test('dissection progress over server-sent events closes itself when done', () => {
  const { EventSource, sources: made } = fakeEventSource();
  const api = createApi({ i18n: en, EventSource });
  const seen = [];
  api.captureProgress('c1', (m) => seen.push(m));
  const es = made[0];
  assert.equal(es.url, '/api/captures/c1/progress');
  es.onmessage({ data: '{"state":"dissecting","percent":40}' });
  es.onmessage({ data: 'not json' });
  es.onmessage({ data: '{"state":"done","percent":100}' });
  assert.deepEqual(seen.map((m) => m.state), ['dissecting', 'done']);
  assert.equal(es.closed, true);
});

test('the session websocket: messages in, commands out (queued until open)', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const got = { events: [], states: [], errors: [], resets: 0 };
  const s = openSession({
    i18n: en,
    WebSocket,
    url: 'ws://h/ws/sessions/s1',
    onEvent: (e) => got.events.push(e),
    onState: (m) => got.states.push(m),
    onError: (e) => got.errors.push(e),
    onReset: () => got.resets++,
  });
  const ws = sockets[0];
  s.play();
  assert.deepEqual(ws.sent, [], 'queued before open');
  ws.onopen();
  s.pause();
  s.step();
  s.stepBack();
  s.speed('2');
  s.reset();
  s.fault('delay', { peer: 'server', seconds: 2 });
  s.send({ type: 'send', from: 'server', frames: ['My Message'], hex: false });
  assert.deepEqual(ws.sent, [
    { type: 'play' },
    { type: 'pause' },
    { type: 'step' },
    { type: 'step_back' },
    { type: 'speed', value: 2 },
    { type: 'reset' },
    { type: 'fault', fault: 'delay', args: { peer: 'server', seconds: 2 } },
    { type: 'send', from: 'server', frames: ['My Message'], hex: false },
  ]);
  ws.onmessage({ data: JSON.stringify({ type: 'event', event: { kind: 'greeting', seq: 0 } }) });
  ws.onmessage({ data: JSON.stringify({ type: 'state', playing: true, speed: 1, position: 1, total: 9, closed: false }) });
  ws.onmessage({ data: JSON.stringify({ type: 'error', detail: 'bad frame' }) });
  ws.onmessage({ data: JSON.stringify({ type: 'reset' }) });
  ws.onmessage({ data: '{' });
  // ?batch=1: several messages in one websocket message, in order.
  ws.onmessage({ data: JSON.stringify([
    { type: 'event', event: { kind: 'frame', seq: 1 } },
    { type: 'state', playing: false, speed: 1, position: 2, total: 9, closed: true },
    { type: 'error', detail: 'rate limit: slow down' },
  ]) });
  assert.equal(got.events[0].kind, 'greeting');
  assert.equal(got.states[0].total, 9);
  assert.deepEqual(got.events.map((e) => e.seq), [0, 1]);
  assert.equal(got.states[1].closed, true);
  assert.deepEqual(got.errors, ['bad frame', 'unreadable message from the server', 'rate limit: slow down']);
  assert.equal(got.resets, 1);
});

test('deep links', () => {
  assert.deepEqual(parseLink('?id=abc&conn=0&el=42&field=3&q=hello+world'), { id: 'abc', conn: '0', el: 42, field: 3, q: 'hello world' });
  assert.deepEqual(parseLink('?el=-1&field=x'), {});
  assert.deepEqual(parseLink(''), {});
  // A malformed escape is kept as typed, never an exception that leaves the page half-built.
  assert.deepEqual(parseLink('?q=100%&id=a%zzb&conn=%E0%A4%A&el=1'), { q: '100%', id: 'a%zzb', conn: '%E0%A4%A', el: 1 });
  assert.deepEqual(parseLink('?q=caf%C3%A9%2'), { q: 'café%2' });
  assert.equal(buildLink({ el: 42, id: 'abc', conn: '0', field: null, q: 'a b&c' }), '?id=abc&conn=0&el=42&q=a%20b%26c');
  assert.deepEqual(parseLink(buildLink({ id: 'x y', el: 0 })), { id: 'x y', el: 0 });
});

test('session requests: tcp keeps libzmq, a SUB sends its topic, the greeting strategy and autoplay', () => {
  const req = sessionRequest('tcp', { type: 'PUB', greeting: 'full' }, { type: 'SUB', subscribe: 'weather', libzmq: true }, { autoplay: true });
  assert.equal(req.server.greeting, 'full');
  assert.equal(req.server.subscribe, undefined);
  assert.equal(req.client.subscribe, 'weather');
  assert.equal(req.client.libzmq, true);
  assert.equal(req.autoplay, true);
  // The empty prefix is every message; null is no subscription at all (the SUB receives nothing, as in libzmq).
  assert.equal(sessionRequest('simulated', { type: 'PUB' }, { type: 'SUB', subscribe: '' }).client.subscribe, '');
  assert.equal(sessionRequest('simulated', { type: 'PUB' }, { type: 'SUB', subscribe: null }).client.subscribe, null);
});
