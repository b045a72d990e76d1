// A class on the network (issue 34.3): a topology's external node is every student's page that connected to it.
// The state counts what the wire carried to each connection (the students' applications are not the lab's),
// names each by its routing id, and the diagram's "who got which message" lists them, folded when many.
import { en, pageI18n } from './i18n-setup.mjs';
import test from 'node:test';
import assert from 'node:assert/strict';
import { TopologyState } from '../../frontend/js/core/topology-state.js';
import { TopologyView } from '../../frontend/js/views/topology.js';
import { createDocument, walk } from './fake-dom.mjs';

const hex = (t) => Buffer.from(t).toString('hex');

/** A PUSH teacher and `n` students' connections to its external PULL node (the lab listens: a student is the client). */
function classroom(n) {
  const topology = {
    nodes: [{ name: 'teacher', type: 'PUSH' }, { name: 'class', type: 'PULL', external: true, zws: 'ws://h/zws-s-class' }],
    links: [{ connect: 'class', bind: 'teacher' }],
    conns: Array.from({ length: n }, (_, i) => ({ conn: i, link: 0, client: 'class', server: 'teacher' })),
  };
  const events = [];
  for (let i = 0; i < n; i++) {
    events.push({ kind: 'greeting', conn: i, dir: 'c2s', transport: 'zws', version: '2.0', identity: hex(`pupil-${i}`) });
    events.push({ kind: 'greeting', conn: i, dir: 's2c', transport: 'zws', version: '2.0', identity: '' });
  }
  for (let k = 0; k < 2 * n; k++) {
    const conn = k % n;
    events.push({ kind: 'socket', node: 'teacher', what: 'route', rule: 'round-robin', peer: 'class', conn, msg: k, depth: 0, hwm: 1000 });
    events.push({ kind: 'message', conn, dir: 's2c', frames: [hex(`task ${k + 1}`)], msg: k });
  }
  return { topology, events };
}

function draw(n, i18n = en) {
  const { topology, events } = classroom(n);
  return drawTopology(topology, events, i18n);
}

function drawTopology(topology, events, i18n) {
  const doc = createDocument();
  const box = doc.createElement('div');
  const view = new TopologyView(box, { i18n, onPickMessage: () => {} });
  const state = new TopologyState();
  state.setTopology(topology);
  view.setTopology(topology, state);
  state.sync(events);
  view.update({ now: true });
  return { box, state };
}

const find = (root, pred) => walk(root).filter(pred);
const cls = (name) => (el) => el.classList && el.classList.contains(name);

test('each connection of an external node is a student: its routing id and what the wire carried to it', () => {
  const { state } = draw(3);
  const students = state.studentsOf('class');
  assert.deepEqual(students.map((s) => [s.conn, Buffer.from(s.identity, 'hex').toString(), s.received.map((r) => r.msg)]),
    [['0', 'pupil-0', [0, 3]], ['1', 'pupil-1', [1, 4]], ['2', 'pupil-2', [2, 5]]]);
  assert.equal(state.node('class').received.length, 6, 'the node got what its students got');
  assert.equal(state.node('teacher').received.length, 0);
});

test('the diagram lists a few students one by one, with who got which message', () => {
  const { box } = draw(3);
  const list = find(box, cls('topo-student'));
  assert.deepEqual(list.map((li) => [li.getAttribute('data-conn'), li.getAttribute('data-count')]), [['0', '2'], ['1', '2'], ['2', '2']]);
  assert.match(list[1].textContent, /pupil-1/);
  assert.match(list[1].textContent, /task 2.*task 5/);
  assert.match(find(box, cls('topo-students-summary'))[0].textContent, /3 connected; each got 2 to 2/);
  assert.equal(find(box, (el) => el.tagName === 'DETAILS').length, 0);
  assert.match(find(box, (el) => el.classList && el.classList.contains('topo-node') && el.getAttribute('data-node') === 'class')[0].textContent, /got 6/);
});

test("a class of many is one line, folded, in the page's language", () => {
  const { box } = draw(40, pageI18n('zh-CN'));
  const details = find(box, (el) => el.tagName === 'DETAILS');
  assert.equal(details.length, 1);
  assert.match(find(details[0], cls('topo-students-summary'))[0].textContent, /40 个已连接；每个收到 2 到 2 条/);
  assert.equal(find(details[0], cls('topo-student')).length, 40);
});

test("a student's page following with ?external=summary: the class only counted, in the page's language", () => {
  // (the server leaves the class's connections and their elements out and says how many are open: `connected`)
  const topology = {
    nodes: [{ name: 'teacher', type: 'PUSH' }, { name: 'class', type: 'PULL', external: true, max_connections: 200, connected: 37 }],
    links: [{ connect: 'class', bind: 'teacher' }],
    conns: [],
  };
  for (const [i18n, text] of [[en, /^37 connected \(each one's messages are on the teacher's screen\)$/],
    [pageI18n('zh-CN'), /^37 个已连接（每人收到的消息见教师的画面）$/]]) {
    const { box } = drawTopology(topology, [], i18n);
    assert.match(find(box, cls('topo-students-summary'))[0].textContent, text);
    assert.equal(find(box, cls('topo-student')).length, 0);
    // The class's node says how many are connected, not "got 0" (its students' messages are not on this page).
    const stats = find(box, cls('topo-stats')).map((el) => el.textContent);
    assert.deepEqual(stats, i18n === en ? ['got 0', '37 connected'] : ['收到 0', '37 个已连接']);
  }
});
