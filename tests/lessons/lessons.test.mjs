// The lesson page's DOM-free modules and views under node: narration trees become
// text nodes (links only to rfc.zeromq.org), a student follows or wanders, a
// teacher's states are coalesced, and the views keep lesson data as text.
import { en } from '../frontend/i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument, walk, byClass } from '../frontend/fake-dom.mjs';
import { fakeFetch, fakeWebSocket } from '../frontend/fakes.mjs';
import { renderNarration, allowedLink } from '../../frontend/js/lessons/narration.js';
import { createFollower, createBroadcaster, teacherState, normalizeCode, openClassSocket, authMessage } from '../../frontend/js/lessons/classroom.js';
import { rangesOf, inRanges } from '../../frontend/js/lessons/highlights.js';
import { LessonPanel, ClassBar, LessonList } from '../../frontend/js/lessons/views.js';
import { createLessonsApi } from '../../frontend/js/lessons/api.js';

const EVIL = '<img src=x onerror=alert(1)>';

test('narration trees are built from text nodes; only spec links become links', () => {
  const doc = createDocument();
  const tree = [
    { type: 'p', children: [{ t: 'text', v: EVIL }, { t: 'strong', children: [{ t: 'code', v: '%xFF' }] }, { t: 'link', href: 'https://rfc.zeromq.org/spec/23/', children: [{ t: 'text', v: '23/ZMTP' }] }] },
    { type: 'ul', items: [[{ t: 'link', href: 'javascript:alert(1)', children: [{ t: 'text', v: 'bad' }] }], [{ t: 'em', children: [{ t: 'text', v: 'x' }] }]] },
    { type: 'pre', text: 'greeting = signature version' },
    { type: 'script', text: 'alert(1)' },
  ];
  const root = doc.createElement('div');
  for (const n of renderNarration(doc, tree)) root.appendChild(n);
  const tags = walk(root).map((e) => e.tagName);
  assert.deepEqual(tags, ['DIV', 'P', 'STRONG', 'CODE', 'A', 'UL', 'LI', 'LI', 'EM', 'PRE']);
  const links = walk(root).filter((e) => e.tagName === 'A');
  assert.equal(links.length, 1);
  assert.equal(links[0].href, 'https://rfc.zeromq.org/spec/23/');
  assert.ok(root.textContent.includes(EVIL));
  assert.ok(root.textContent.includes('bad'));
  assert.ok(allowedLink('https://rfc.zeromq.org/spec/37/'));
  assert.ok(!allowedLink('https://rfc.zeromq.org.evil.example/'));
  assert.ok(!allowedLink('javascript:alert(1)'));
});

test('a student follows the teacher, wanders, and follows again', () => {
  const applied = [];
  const changes = [];
  const f = createFollower({ apply: (s) => applied.push(s.step), changed: (on) => changes.push(on) });
  f.receive({ step: 1, seq: 1 });
  f.receive({ step: 2, seq: 2 });
  assert.deepEqual(applied, [1, 2]);
  assert.equal(f.wander(), true);
  assert.equal(f.wander(), false);
  f.receive({ step: 3, seq: 3 });
  f.receive({ step: 1, seq: 1 }); // a stale state is ignored
  assert.deepEqual(applied, [1, 2]);
  f.follow();
  assert.deepEqual(applied, [1, 2, 3]);
  assert.deepEqual(changes, [false, true]);
  assert.equal(f.following, true);
});

test('the teacher sends each distinct state once per tick', () => {
  const sent = [];
  const ticks = [];
  const b = createBroadcaster((s) => sent.push(s), (fn) => ticks.push(fn));
  const s1 = teacherState({ lesson: 'greeting', step: 1, element: 0, field: 2, highlights: [0, 2, 'x'] });
  b.push(s1);
  b.push(teacherState({ lesson: 'greeting', step: 2, element: 0, field: null, highlights: [] }));
  b.push(s1);
  assert.equal(ticks.length, 1);
  ticks.shift()();
  assert.deepEqual(sent, [{ type: 'state', lesson: 'greeting', step: 1, selection: { element: 0, field: 2 }, highlights: [0, 2] }]);
  b.push(s1);
  ticks.shift()();
  assert.equal(sent.length, 1); // unchanged: not sent again
  b.reset();
  b.push(s1);
  ticks.shift()();
  assert.equal(sent.length, 2); // a new connection gets it again
  assert.equal(normalizeCode(' ab-c2 3d '), 'ABC23D');
});

test('the class socket queues until open and reports close codes', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const got = [];
  const closes = [];
  const s = openClassSocket({ WebSocket, url: 'ws://x/ws/classes/ABC?role=student', onMessage: (m) => got.push(m), onClose: (...a) => closes.push(a) });
  s.send({ type: 'status', following: false });
  assert.equal(sockets[0].sent.length, 0);
  sockets[0].onopen();
  assert.deepEqual(sockets[0].sent, [{ type: 'status', following: false }]);
  sockets[0].onmessage({ data: '{"type":"state","step":2}' });
  sockets[0].onmessage({ data: 'not json' });
  assert.deepEqual(got, [{ type: 'state', step: 2 }]);
  sockets[0].onclose({ code: 4404, reason: 'no class' });
  assert.deepEqual(closes, [[4404, 'no class', false]]);
});

test("a teacher's socket sends its auth message first, before anything queued, on every open", () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const s = openClassSocket({ WebSocket, url: 'ws://x/ws/classes/ABC?role=teacher', first: authMessage('tok-1') });
  s.send({ type: 'state', lesson: 'greeting', step: 1 });
  assert.equal(sockets[0].sent.length, 0);
  sockets[0].onopen();
  assert.deepEqual(sockets[0].sent, [{ type: 'auth', token: 'tok-1' }, { type: 'state', lesson: 'greeting', step: 1 }]);
  assert.ok(!sockets[0].url.includes('tok-1'));
  s.send({ type: 'end' });
  assert.deepEqual(sockets[0].sent[2], { type: 'end' });
});

test('highlight ranges per direction', () => {
  const r = rangesOf([{ offset: 1, length: 8, dir: 'c2s' }, { offset: 70, length: 2 }], 's2c');
  assert.deepEqual(r, { c2s: [[1, 9]], s2c: [[70, 72]] });
  assert.ok(inRanges(r.c2s, 8) && !inRanges(r.c2s, 9) && inRanges(r.s2c, 71));
});

test('lesson views keep lesson data and payloads as text', () => {
  const doc = createDocument();
  const calls = [];
  const handlers = new Proxy({}, { get: (_, name) => (name === 'i18n' ? en : (...args) => calls.push([name, ...args])) });
  const panelEl = doc.createElement('div');
  const panel = new LessonPanel(panelEl, handlers);
  panel.setLesson({
    id: 'x', title: EVIL, steps: [
      { number: 1, title: EVIL, narration_tree: [{ type: 'p', children: [{ t: 'text', v: EVIL }] }] },
      { number: 2, title: 'two', narration_tree: [] },
    ],
    references: [{ title: EVIL, url: 'https://evil.example/', href: 'https://evil.example/' }, { title: 'spec', url: 'https://rfc.zeromq.org/spec/23/', href: 'https://rfc.zeromq.org/spec/23/' }],
  });
  panel.setStep(1, {
    source: { type: 'capture', file: EVIL },
    highlights: [{ field: 0, name: EVIL, label: EVIL, value: EVIL }],
    question: { prompt: EVIL, kind: 'choice', choices: [EVIL, 'b'] },
    writes: [{ dir: 'c2s', offset: 0, length: 10, t: 0.001 }],
    received: [{ peer: 'client', frames: [EVIL] }],
    log: [{ t: 0, peer: 'server', text: EVIL, error: true }],
  });
  panel.setResult({ correct: true, message: EVIL, explain: [{ type: 'p', children: [{ t: 'text', v: EVIL }] }] });
  const tags = new Set(doc.created.map((e) => e.tagName));
  for (const bad of ['IMG', 'SCRIPT', 'IFRAME']) assert.ok(!tags.has(bad));
  panel.setExportUrl('/api/lessons/x/illustrated', '/api/lessons/x/script.py');
  // Links go to the specs, or to the lesson's own illustrated page and script: never where a lesson's text points.
  for (const a of walk(panelEl).filter((e) => e.tagName === 'A')) assert.match(a.href, /^(https:\/\/rfc\.zeromq\.org\/|\/api\/lessons\/x\/(illustrated|script\.py)$)/);
  assert.ok(panelEl.textContent.includes(EVIL));
  byClass(panelEl, 'choice')[0].click();
  byClass(panelEl, 'chip')[0].click();
  panel.nextBtn.click();
  assert.deepEqual(calls, [['onChoice', EVIL], ['onChip', 0], ['onStep', 2]]);
  assert.equal(panel.prevBtn.disabled, true);

  const barEl = doc.createElement('div');
  const bar = new ClassBar(barEl, handlers);
  bar.teacher({ code: 'ABC234', joinUrl: 'http://h/lessons.html?join=ABC234', count: 3, following: 2, connected: true });
  assert.ok(barEl.textContent.includes('3 students · 2 following'));
  bar.student({ code: 'ABC234', following: false, connected: true });
  assert.ok(barEl.textContent.includes('Exploring on your own'));
  const listEl = doc.createElement('div');
  const list = new LessonList(listEl, handlers);
  list.setLessons([{ id: 'a', title: EVIL, summary: EVIL, step_count: 3, level: 'beginner' }]);
  list.setCurrent('a');
  assert.ok(byClass(listEl, 'lesson-item')[0].classList.contains('current'));
});

test("a topology step's panel lists its socket decisions and names the nodes of each write", () => {
  const doc = createDocument();
  const calls = [];
  const handlers = new Proxy({}, { get: (_, name) => (name === 'i18n' ? en : (...args) => calls.push([name, ...args])) });
  const panelEl = doc.createElement('div');
  const panel = new LessonPanel(panelEl, handlers);
  panel.setLesson({ id: 'x', title: 't', steps: [{ number: 1, title: 'one', narration_tree: [] }], references: [] });
  const events = [
    { kind: 'message', conn: '2', dir: 's2c', frames: [] },
    { kind: 'socket', node: 'vent', what: 'route', rule: 'round-robin', peer: 'w2', text: EVIL },
    { kind: 'socket', node: 'vent', what: 'route', rule: 'round-robin', peer: 'w3', text: 'PUSH chose the pipe to w3' },
  ];
  panel.setStep(1, {
    source: { type: 'topology', nodes: [{ name: 'vent', type: 'PUSH' }, { name: 'w2', type: 'PULL' }] },
    events,
    decisions: [2, 1, 7], // an index that is not an event is left out
    topology: { conns: [{ conn: '2', link: 1, client: 'w2', server: 'vent' }] },
    writes: [{ conn: '2', dir: 's2c', offset: 0, length: 10, t: 0.001 }, { conn: '2', dir: 'c2s', offset: 0, length: 10, t: 0.001 }],
  });
  assert.ok(panelEl.textContent.includes('Simulated topology · vent PUSH · w2 PULL'));
  const buttons = byClass(panelEl, 'decision');
  assert.deepEqual(buttons.map((b) => b.textContent), ['vent: PUSH chose the pipe to w3 (round-robin)', `vent: ${EVIL} (round-robin)`]);
  assert.ok(!new Set(doc.created.map((e) => e.tagName)).has('IMG'));
  buttons[1].click();
  assert.deepEqual(calls, [['onDecision', 1]]);
  panel.setSelectedDecision(1);
  assert.deepEqual(buttons.map((b) => b.classList.contains('selected')), [false, true]);
  assert.deepEqual(byClass(panelEl, 'wire-dir').map((e) => e.textContent), ['vent → w2', 'w2 → vent']);
  // A step without decisions hides the box.
  panel.setStep(1, { source: { type: 'session' }, events: [] });
  assert.equal(byClass(panelEl, 'decision').length, 0);
  assert.equal(byClass(panelEl, 'decision-box')[0].hidden, true);
});

test('the lessons API client caches GETs and reports errors', async () => {
  const { fetch, calls } = fakeFetch((url) => (url.split('?')[0].endsWith('/nope') ? [404, { detail: "no lesson 'nope'" }] : [200, { lessons: [] }]));
  const api = createLessonsApi({ i18n: en, fetch });
  await api.lessons();
  await api.lessons();
  await assert.rejects(api.lesson('nope'), /no lesson 'nope'/);
  await api.answer('a', 2, { choice: 'x' });
  // (in the page's language: English here)
  assert.deepEqual(calls.map((c) => `${c.method} ${c.url}`), ['GET /api/lessons?lang=en', 'GET /api/lessons/nope?lang=en', 'POST /api/lessons/a/steps/2/answer?lang=en']);
  // The teacher's token is never part of the URL (it goes in the socket's first message).
  assert.equal(api.classSocketUrl({ protocol: 'https:', host: 'h:1' }, 'ABC', 'teacher', 'secret'), 'wss://h:1/ws/classes/ABC?role=teacher');
  assert.equal(api.classSocketUrl({ protocol: 'http:', host: 'h' }, 'ABC', 'student'), 'ws://h/ws/classes/ABC?role=student');
});
