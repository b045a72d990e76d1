// Issue 19's protocol-free cores: a topology session's layout, its state from the event stream (who
// received which message, pipe depth against HWM, drops and blocks, a message's path through every
// hop, step back), the lifelines of the sequence view, and the topology file and link.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { layoutSession, linkFlow, messageWays } from '../../frontend/js/core/topology.js';
import { TopologyState, lifelines, pipeKey } from '../../frontend/js/core/topology-state.js';
import { EventLog } from '../../frontend/js/core/eventlog.js';
import {
  addNode, addLink, removeNode, setNode, checkTopology, parseTopologyFile, topologyFile,
  topologyFragment, parseTopologyFragment, freshName, emptyTopology,
} from '../../frontend/js/core/topology-edit.js';

const hex = (s) => Buffer.from(s).toString('hex');

// PUSH -> 3 PULL as the contract describes it (conns filled in as links open).
const LOAD = {
  mode: 'simulated',
  nodes: [{ name: 'vent', type: 'PUSH' }, { name: 'w1', type: 'PULL' }, { name: 'w2', type: 'PULL' }, { name: 'w3', type: 'PULL' }],
  links: [{ connect: 'w1', bind: 'vent' }, { connect: 'w2', bind: 'vent' }, { connect: 'w3', bind: 'vent' }],
  conns: [{ conn: '0', link: 0, client: 'w1', server: 'vent' }, { conn: '1', link: 1, client: 'w2', server: 'vent' }, { conn: '2', link: 2, client: 'w3', server: 'vent' }],
};

// The extended request-reply: 3 REQ -> ROUTER front, proxy to DEALER back -> 2 REP.
const BROKER = {
  nodes: [
    { name: 'c1', type: 'REQ' }, { name: 'c2', type: 'REQ' }, { name: 'c3', type: 'REQ' },
    { name: 'front', type: 'ROUTER' }, { name: 'back', type: 'DEALER' },
    { name: 'r1', type: 'REP' }, { name: 'r2', type: 'REP' },
  ],
  links: [
    { connect: 'c1', bind: 'front' }, { connect: 'c2', bind: 'front' }, { connect: 'c3', bind: 'front' },
    { connect: 'r1', bind: 'back' }, { connect: 'r2', bind: 'back' },
  ],
  proxies: [{ frontend: 'front', backend: 'back' }],
};

function loadEvents() {
  let seq = 0;
  const ev = (e) => ({ t: seq / 10, seq: seq++, ...e });
  const out = [];
  for (const [k, w] of ['w1', 'w2', 'w3'].entries()) {
    const conn = String(k);
    out.push(ev({ kind: 'socket', node: 'vent', what: 'route', text: `PUSH chose the pipe to ${w} (round robin: next in turn)`, rule: 'round-robin', peer: w, conn, msg: k + 1, depth: 1, hwm: 2 }));
    out.push(ev({ kind: 'frame', conn, dir: 's2c', offset: 64 + k, length: 8, hex: '00' + '06' + hex(`task-${k + 1}`) }));
    out.push(ev({ kind: 'message', conn, dir: 's2c', offset: 64, frames: [hex(`task-${k + 1}`)], msg: k + 1 }));
    out.push(ev({ kind: 'socket', node: w, what: 'deliver', text: `PULL took the next message from vent (fair queue)`, rule: 'fair-queue', peer: 'vent', conn, msg: k + 1, depth: 0, hwm: 1000 }));
    out.push(ev({ kind: 'peer', what: 'recv', peer: w, frames: [hex(`task-${k + 1}`)], msg: k + 1 }));
  }
  out.push(ev({ kind: 'socket', node: 'vent', what: 'queue', text: 'queued behind others', peer: 'w1', conn: '0', msg: 4, depth: 2, hwm: 2 }));
  out.push(ev({ kind: 'socket', node: 'vent', what: 'block', text: 'send blocked: every pipe full', rule: 'sndhwm', msg: 5 }));
  out.push(ev({ kind: 'socket', node: 'vent', what: 'drop', text: 'PUB dropped for w2: its pipe is at SNDHWM 2', rule: 'sndhwm', peer: 'w2', msg: 6, depth: 2, hwm: 2 }));
  return out;
}

test('a session layout reads left to right: senders, then the broker front and back, then workers', () => {
  const typeOf = (n) => ({ a: 'PUSH', b: 'PULL', r: 'ROUTER', d: 'DEALER' })[n];
  assert.deepEqual(linkFlow({ connect: 'b', bind: 'a' }, typeOf), ['a', 'b'], 'a PULL that connects still sits downstream');
  assert.deepEqual(linkFlow({ connect: 'd', bind: 'r' }, typeOf), ['d', 'r'], 'between DEALER and ROUTER the connecter comes first');
  const layout = layoutSession(BROKER, { width: 1000 });
  const col = Object.fromEntries(layout.nodes.map((n) => [n.id, n.column]));
  assert.deepEqual(col, { c1: 0, c2: 0, c3: 0, front: 1, back: 2, r1: 3, r2: 3 });
  const xs = [0, 1, 2, 3].map((c) => layout.nodes.find((n) => n.column === c).x);
  assert.ok(xs[0] < xs[1] && xs[1] < xs[2] && xs[2] < xs[3]);
  assert.equal(layout.edges.length, 6);
  assert.equal(layout.edges.filter((e) => e.proxy).length, 1);
  const e = layout.edges.find((x) => x.link === 0);
  assert.deepEqual([e.from, e.to], ['c1', 'front'], 'an edge runs from the connecting node to the binding one');
  // Twelve nodes fit without two at the same place.
  const big = { nodes: [{ name: 'pub', type: 'PUB' }], links: [] };
  for (let i = 1; i <= 11; i++) {
    big.nodes.push({ name: `s${i}`, type: 'SUB' });
    big.links.push({ connect: `s${i}`, bind: 'pub' });
  }
  const l12 = layoutSession(big, { width: 900 });
  assert.equal(new Set(l12.nodes.map((n) => `${Math.round(n.x)},${Math.round(n.y)}`)).size, 12);
  assert.ok(l12.height >= 11 * 60, 'eleven rows get room');
  // Staggered: the eleven SUBs in two halves, half as tall, no two boxes overlapping.
  const zz = layoutSession(big, { width: 900, rowHeight: 70, zigzag: 4 });
  assert.equal(zz.units, 3);
  assert.ok(zz.height < 7 * 70 + 41, `height ${zz.height}`);
  const subs = zz.nodes.filter((n) => n.id !== 'pub');
  assert.equal(new Set(subs.map((n) => n.x)).size, 2, 'two staggered halves');
  for (const a of zz.nodes) {
    for (const b of zz.nodes) assert.ok(a === b || Math.abs(a.x - b.x) >= 140 || Math.abs(a.y - b.y) >= 58, `${a.id} and ${b.id} overlap`);
  }
});

test('x/y hints place a node; conns give edges their connection ids', () => {
  const t = { ...LOAD, nodes: LOAD.nodes.map((n, i) => (i === 0 ? { ...n, x: 0, y: 1 } : n)) };
  const layout = layoutSession(t, { width: 500, margin: 50 });
  const vent = layout.nodes.find((n) => n.id === 'vent');
  assert.equal(vent.x, 50);
  assert.equal(vent.y, layout.height - 30);
  assert.deepEqual(layout.edges.map((e) => e.conn), ['0', '1', '2']);
  // Hints that would stack two boxes (the broker's front and back at x 0.42 and 0.58) give way to the columns.
  const hinted = { ...BROKER, nodes: BROKER.nodes.map((n) => ({ ...n, x: { front: 0.42, back: 0.58 }[n.name] ?? (n.type === 'REQ' ? 0.1 : 0.9) })) };
  const tight = layoutSession(hinted, { width: 640, margin: 70, nodeWidth: 124, nodeHeight: 50 });
  const at = Object.fromEntries(tight.nodes.map((n) => [n.id, n.x]));
  assert.ok(at.back - at.front >= 124 + 8, `front ${at.front}, back ${at.back}`);
  const loose = layoutSession(hinted, { width: 1400, margin: 70, nodeWidth: 124, nodeHeight: 50 });
  assert.equal(loose.nodes.find((n) => n.id === 'front').x, 70 + 0.42 * 1260, 'room enough: the hint wins');
});

test('the state says who got which message, the pipes\' depth against HWM, drops and blocks', () => {
  const state = new TopologyState();
  state.setTopology(LOAD);
  const events = loadEvents();
  state.sync(events);
  assert.deepEqual(['w1', 'w2', 'w3'].map((w) => state.node(w).received.map((r) => r.msg)), [[1], [2], [3]]);
  assert.equal(Buffer.from(state.node('w2').received[0].frames[0], 'hex').toString(), 'task-2');
  // Each message the application sent, once: three on the wire, one queued, one dropped (the blocked one waits).
  assert.equal(state.node('vent').sent, 5);
  const pipe = state.pipes.get(pipeKey('vent', 'w1'));
  assert.deepEqual([pipe.depth, pipe.hwm, pipe.conn], [2, 2, '0']);
  assert.equal(state.pipes.get(pipeKey('vent', 'w2')).depth, 2, 'a drop reports the full pipe');
  assert.equal(state.pipes.get(pipeKey('vent', 'w3')).depth, 0, 'the route put it in the pipe (1), the wire took it out');
  const inbound = state.pipes.get(pipeKey('w3', 'vent', true));
  assert.deepEqual([inbound.depth, inbound.hwm, inbound.inbound], [0, 1000, true], 'reading reports the inbound queue against RCVHWM');
  assert.deepEqual([state.node('vent').drops, state.node('vent').blocks, state.node('vent').blocked], [1, 1, true]);
  assert.deepEqual(state.marks.map((m) => [m.what, m.peer]), [['block', null], ['drop', 'w2']]);
  // The wire messages, once each, for the diagram's dots.
  assert.deepEqual(state.takeMoves().map((m) => [m.from, m.to, m.msg]), [['vent', 'w1', 1], ['vent', 'w2', 2], ['vent', 'w3', 3]]);
  assert.deepEqual(state.takeMoves(), []);
});

test('counts are honest: a PUB fan-out is one send, a reader at RCVHWM is not a blocked send, a proxy reads its ends', () => {
  const PUBSUB = {
    nodes: [{ name: 'pub', type: 'PUB' }, { name: 's1', type: 'SUB' }, { name: 's2', type: 'SUB' }],
    links: [{ connect: 's1', bind: 'pub' }, { connect: 's2', bind: 'pub' }],
    conns: [{ conn: '0', link: 0, client: 's1', server: 'pub' }, { conn: '1', link: 1, client: 's2', server: 'pub' }],
  };
  const state = new TopologyState();
  state.setTopology(PUBSUB);
  let seq = 0;
  const ev = (e) => ({ t: 0, seq: seq++, ...e });
  const events = [];
  for (const m of [1, 2, 3]) {
    for (const [conn, sub] of [['0', 's1'], ['1', 's2']]) {
      events.push(ev({ kind: 'socket', node: 'pub', what: 'route', rule: 'prefix-match', peer: sub, conn, msg: m, depth: 1, hwm: 1000 }));
      events.push(ev({ kind: 'message', conn, dir: 's2c', frames: ['00'], msg: m }));
    }
  }
  events.push(ev({ kind: 'socket', node: 'pub', what: 'filter', rule: 'prefix-match', peer: 's1', conn: '0', msg: 4 }));
  events.push(ev({ kind: 'socket', node: 's2', what: 'block', rule: 'rcvhwm', peer: 'pub', conn: '1', depth: 2, hwm: 2 }));
  state.sync(events);
  assert.equal(state.node('pub').sent, 4, 'six copies on the wire, one filtered out: four sends');
  assert.deepEqual([state.node('s2').stalled, state.node('s2').blocked, state.node('s2').blocks], [true, false, 0]);
  state.sync([...events, ev({ kind: 'socket', node: 's2', what: 'unblock', rule: 'rcvhwm', peer: 'pub', conn: '1', depth: 1, hwm: 2 })]);
  assert.equal(state.node('s2').stalled, false);

  const broker = new TopologyState();
  broker.setTopology(BROKER);
  broker.sync([
    { kind: 'socket', node: 'front', what: 'envelope', rule: 'identity-routing', peer: 'c1', msg: 1 },
    { kind: 'socket', node: 'back', what: 'route', rule: 'round-robin', peer: 'r1', msg: 1 },
    { kind: 'socket', node: 'back', what: 'deliver', rule: 'fair-queue', peer: 'r1', msg: 2 },
  ]);
  assert.deepEqual([broker.node('front').proxied, broker.node('front').relayed, broker.node('back').relayed], [true, 1, 1]);
  assert.deepEqual([broker.node('c1').proxied, broker.node('c1').relayed], [false, 0]);
});

test('a link\'s messages go the way the socket types say, whichever end binds', () => {
  const typeOf = (n) => ({ push: 'PUSH', pull: 'PULL', pub: 'PUB', sub: 'SUB', req: 'REQ', rep: 'REP', d: 'DEALER', r: 'ROUTER', xpub: 'XPUB', xsub: 'XSUB' })[n];
  assert.deepEqual(messageWays({ connect: 'pull', bind: 'push' }, typeOf), { forward: false, back: true });
  assert.deepEqual(messageWays({ connect: 'push', bind: 'pull' }, typeOf), { forward: true, back: false });
  assert.deepEqual(messageWays({ connect: 'sub', bind: 'pub' }, typeOf), { forward: false, back: true });
  assert.deepEqual(messageWays({ connect: 'pub', bind: 'sub' }, typeOf), { forward: true, back: false });
  assert.deepEqual(messageWays({ connect: 'req', bind: 'rep' }, typeOf), { forward: true, back: true });
  assert.deepEqual(messageWays({ connect: 'd', bind: 'r' }, typeOf), { forward: true, back: true });
  assert.deepEqual(messageWays({ connect: 'xsub', bind: 'xpub' }, typeOf), { forward: false, back: true });
});

test('a message\'s path holds its decision, frames, wire message and receipt, and crosses its hop', () => {
  const state = new TopologyState();
  state.setTopology(LOAD);
  const events = loadEvents();
  state.sync(events);
  const p = state.path(2);
  assert.deepEqual(p.indexes, [5, 6, 7, 8, 9]);
  assert.deepEqual(p.indexes.map((i) => events[i].kind), ['socket', 'frame', 'message', 'socket', 'peer']);
  const places = state.pathPlaces(2, events);
  assert.deepEqual([...places.conns], ['1']);
  assert.deepEqual([...places.nodes].sort(), ['vent', 'w2']);
  assert.deepEqual(state.pipesOf('w2').map((x) => pipeKey(x.node, x.peer, x.inbound)), ['w2<vent']);
  // Across a proxy hop, and a reply's link to its request.
  const b = new TopologyState();
  b.setTopology({ ...BROKER, conns: [{ conn: '0', link: 0, client: 'c1', server: 'front' }, { conn: '3', link: 3, client: 'r1', server: 'back' }] });
  const evs = [
    { kind: 'message', conn: '0', dir: 'c2s', frames: ['', hex('hi')], msg: 1, seq: 0 },
    { kind: 'socket', node: 'front', what: 'envelope', text: 'ROUTER added identity', msg: 1, seq: 1 },
    { kind: 'socket', node: 'back', what: 'route', peer: 'r1', conn: '3', msg: 1, seq: 2, depth: 1, hwm: 1000 },
    { kind: 'message', conn: '3', dir: 's2c', frames: ['00aa', '', hex('hi')], msg: 1, seq: 3 },
    { kind: 'peer', what: 'recv', peer: 'r1', frames: [hex('hi')], msg: 1, seq: 4 },
    { kind: 'message', conn: '3', dir: 'c2s', frames: ['00aa', '', hex('re')], msg: 2, reply_to: 1, seq: 5 },
  ];
  b.sync(evs);
  const places1 = b.pathPlaces(1, evs);
  assert.deepEqual([...places1.conns].sort(), ['0', '3']);
  assert.deepEqual([...places1.nodes].sort(), ['back', 'c1', 'front', 'r1']);
  assert.equal(b.path(2).replyTo, 1);
  assert.deepEqual(b.takeMoves().map((m) => `${m.from}>${m.to}`), ['c1>front', 'back>r1', 'r1>back']);
});

test('a step back (a state with a lower position) takes the later events out of the state', () => {
  const log = new EventLog();
  const state = new TopologyState();
  state.setTopology(LOAD);
  log.addAll(loadEvents());
  state.sync(log.events);
  assert.equal(state.node('vent').drops, 1);
  log.truncate(8); // the session stepped back to position 8: events with seq >= 8 go
  state.sync(log.events);
  assert.deepEqual(['w1', 'w2', 'w3'].map((w) => state.node(w).received.length), [1, 0, 0]);
  assert.deepEqual([state.node('vent').drops, state.node('vent').blocks, state.node('vent').blocked], [0, 0, false]);
  assert.equal(state.pipes.get(pipeKey('vent', 'w2')).depth, 0, 'the routed message is on the wire (out of vent\'s pipe), not yet read');
  assert.deepEqual(state.path(2).indexes, [5, 6, 7]);
  // An event replaced at the end (same seq again) rebuilds too.
  const again = { ...log.events[7], msg: 9 };
  log.add(again);
  state.sync(log.events);
  assert.deepEqual(state.path(9).indexes, [6, 7]);
});

test('lifelines: one per node in the diagram\'s order, or one per connection end', () => {
  const state = new TopologyState();
  state.setTopology(LOAD);
  const events = loadEvents();
  const byNode = lifelines(state, ['vent', 'w1', 'w2', 'w3']);
  assert.deepEqual(byNode.lanes.map((l) => l.label), ['vent PUSH', 'w1 PULL', 'w2 PULL', 'w3 PULL']);
  assert.deepEqual(byNode.endsOf(events[7]), { from: 0, to: 2 }, 'task-2 goes from vent to w2');
  assert.deepEqual(byNode.endsOf(events[9]), { at: 2 }, 'w2 receives it on its lifeline');
  assert.deepEqual(byNode.endsOf(events[5]), { at: 0 }, 'vent\'s decision sits on vent');
  const byConn = lifelines(state, ['vent', 'w1', 'w2', 'w3'], 'conn');
  assert.deepEqual(byConn.lanes.map((l) => l.id), ['w1@0', 'vent@0', 'w2@1', 'vent@1', 'w3@2', 'vent@2']);
  assert.deepEqual(byConn.endsOf(events[7]), { from: 3, to: 2 });
  assert.deepEqual(byConn.endsOf(events[5]), { at: 3 }, 'a decision about w2 sits on vent\'s end of w2\'s connection');
  assert.deepEqual(byConn.endsOf(events[9]), { at: 2 });
});

test('the editor adds, renames and removes nodes and links', () => {
  let t = emptyTopology();
  t = addNode(t, 'PUSH');
  t = addNode(t, 'PULL');
  t = addNode(t, 'PULL');
  assert.deepEqual(t.nodes.map((n) => n.name), ['push-1', 'pull-1', 'pull-2']);
  assert.equal(t.nodes[0].sndhwm, 1000);
  assert.equal(freshName(t, 'PULL'), 'pull-3');
  t = addLink(t, 'pull-1', 'push-1');
  t = addLink(t, 'pull-2', 'push-1');
  t = addLink(t, 'pull-2', 'push-1');
  assert.equal(t.links.length, 2, 'the same link twice is kept once');
  t = setNode(t, 'push-1', { name: 'vent', sndhwm: 2 });
  assert.deepEqual(t.links, [{ connect: 'pull-1', bind: 'vent' }, { connect: 'pull-2', bind: 'vent' }]);
  t = removeNode(t, 'pull-1');
  assert.deepEqual(t.links, [{ connect: 'pull-2', bind: 'vent' }]);
  assert.equal(t.nodes.find((n) => n.name === 'vent').sndhwm, 2);
});

test('save and load a topology as a small JSON file, share it in a link', () => {
  const t = { ...BROKER, mode: 'simulated', nodes: BROKER.nodes.map((n) => ({ ...n, sndhwm: 5, subscribe: ['a', 'b'], recv: { every: 0.5 } })) };
  const file = topologyFile(en, t);
  assert.deepEqual(parseTopologyFile(en, file), checkTopology(en, t));
  assert.equal(parseTopologyFile(en, file).nodes[0].recv.every, 0.5);
  const frag = topologyFragment(en, t);
  assert.match(frag, /^#topology=[A-Za-z0-9_-]+$/);
  assert.deepEqual(parseTopologyFragment(en, frag), checkTopology(en, t));
  assert.equal(parseTopologyFragment(en, '#paste'), null);
  // Non-ASCII names are refused by the name rule, but a UTF-8 identity travels.
  const u = { nodes: [{ name: 'a', type: 'DEALER', identity: 'ünï' }, { name: 'b', type: 'ROUTER' }], links: [{ connect: 'a', bind: 'b' }] };
  assert.equal(parseTopologyFragment(en, topologyFragment(en, u)).nodes[0].identity, 'ünï');
});

test("a replayed capture's topology keeps its closes, later subscriptions and heartbeats when saved", () => {
  const t = { nodes: [{ name: 'pub', type: 'PUB' }, { name: 'sub', type: 'SUB', subscribe: ['a'], heartbeat_ivl: 0.1, heartbeat_ttl: 2 }],
    links: [{ connect: 'sub', bind: 'pub', at: 0.5, close_at: 1.5 }],
    subscriptions: [{ node: 'sub', topic: 'b', at: 0.7 }, { node: 'sub', topic: 'a', at: 1, cancel: true }, { node: 'nobody', topic: '', at: 1 }] };
  const back = parseTopologyFile(en, topologyFile(en, t));
  assert.deepEqual(back.links, [{ connect: 'sub', bind: 'pub', at: 0.5, close_at: 1.5 }]);
  assert.deepEqual(back.subscriptions, [{ node: 'sub', topic: 'b', at: 0.7 }, { node: 'sub', topic: 'a', at: 1, cancel: true }]);
  assert.equal(back.nodes[1].heartbeat_ttl, 2);
  const reply = { nodes: [{ name: 'req', type: 'REQ' }, { name: 'rep', type: 'REP' }], links: [{ connect: 'req', bind: 'rep' }],
    script: [{ from: 'req', frames: ['hi'], at: 0.1 }, { from: 'rep', frames: ['yo'], at: 0.2, after: { by: ['rep'], read: ['6869'], n: 1, think: 0.05 } }] };
  assert.deepEqual(parseTopologyFile(en, topologyFile(en, reply)).script[1].after, { by: ['rep'], read: ['6869'], n: 1, think: 0.05 });
});

test('a file or link that is not a topology gets a clear error', () => {
  assert.throws(() => parseTopologyFile(en, '{nope'), /not JSON/);
  assert.throws(() => parseTopologyFile(en, '{"nodes": 3}'), /not a topology/);
  assert.throws(() => parseTopologyFile(en, '{"nodes": [{"name": "a b", "type": "PUSH"}], "links": []}'), /node 1: a name/);
  assert.throws(() => parseTopologyFile(en, '{"nodes": [{"name": "a", "type": "SOCK"}], "links": []}'), /SOCK is not a socket type/);
  assert.throws(() => parseTopologyFile(en, '{"nodes": [{"name": "a", "type": "PUSH"}, {"name": "a", "type": "PULL"}], "links": []}'), /node a appears twice/);
  assert.throws(() => parseTopologyFile(en, '{"nodes": [{"name": "a", "type": "PUSH"}], "links": [{"connect": "a", "bind": "zz"}]}'), /link 1/);
  assert.throws(() => parseTopologyFragment(en, '#topology=%%%'), /no readable topology/);
  assert.throws(() => parseTopologyFragment(en, `#topology=${Buffer.from('[1]').toString('base64url')}`), /not a topology/);
  const many = { nodes: Array.from({ length: 25 }, (_, i) => ({ name: `n${i}`, type: 'PAIR' })), links: [] };
  assert.throws(() => checkTopology(en, many), /at most 24 nodes/);
});

// ---- the views, on the fake DOM ------------------------------------------------------------------
import { createDocument, walk } from './fake-dom.mjs';
import { TopologyView } from '../../frontend/js/views/topology.js';
import { SequenceView } from '../../frontend/js/views/sequence.js';
import { ArraySource } from '../../frontend/js/core/source.js';

const find = (root, pred) => walk(root).filter(pred);
const attr = (name, value) => (el) => el.getAttribute && el.getAttribute(name) === value;

test('the diagram draws nodes, arrows, queue bars, markers, dots and who got what; a pick highlights the path', () => {
  const doc = createDocument();
  const box = doc.createElement('div');
  const picked = [];
  const view = new TopologyView(box, { i18n: en, onPickMessage: (m) => picked.push(m) });
  const state = new TopologyState();
  state.setTopology(LOAD);
  const events = loadEvents();
  view.setTopology(LOAD, state);
  state.sync(events);
  view.update({ now: true });
  const nodes = find(box, (el) => el.classList.contains('topo-node'));
  assert.deepEqual(nodes.map((n) => n.getAttribute('data-node')), ['vent', 'w1', 'w2', 'w3']);
  const vent = nodes[0];
  assert.match(vent.textContent, /PUSH/);
  assert.match(vent.textContent, /sent 5/);
  assert.match(vent.textContent, /✕ 1 dropped/);
  assert.match(vent.textContent, /❚❚ send blocked/);
  assert.ok(vent.classList.contains('blocked'));
  assert.match(nodes[2].textContent, /got 1/);
  const edges = find(box, (el) => el.classList.contains('topo-edge'));
  assert.deepEqual(edges.map((e) => [e.getAttribute('data-from'), e.getAttribute('data-to'), e.getAttribute('data-conn'), e.getAttribute('data-ways')]),
    [['w1', 'vent', '0', 'back'], ['w2', 'vent', '1', 'back'], ['w3', 'vent', '2', 'back']],
    'each link runs from the connecting worker to the binding PUSH, its messages the other way');
  // The arrowhead at the worker's end (the line's start), a ring at the PUSH's (the binding) end.
  const line = find(edges[0], (el) => el.tagName === 'LINE')[0];
  assert.equal(line.getAttribute('marker-start'), 'url(#topo-arrow)');
  assert.equal(line.getAttribute('marker-end'), null);
  assert.equal(find(edges[0], (el) => el.tagName === 'CIRCLE' && el.classList.contains('topo-bind')).length, 1);
  const w1pipe = find(box, attr('data-pipe', 'vent>w1'))[0];
  assert.equal(w1pipe.getAttribute('data-depth'), '2');
  assert.equal(w1pipe.getAttribute('data-hwm'), '2');
  assert.ok(w1pipe.classList.contains('full'));
  assert.match(w1pipe.textContent, /^2\/2/);
  assert.equal(find(box, attr('data-pipe', 'w2<vent'))[0].getAttribute('data-hwm'), '1000');
  const dots = find(box, (el) => el.classList.contains('topo-dot'));
  assert.deepEqual(dots.map((d) => d.getAttribute('data-to')), ['w1', 'w2', 'w3'], 'one dot per wire message');
  const got = find(box, (el) => el.classList.contains('topo-got-row'));
  // (a text frame is shown as text, quoted or not as core/bytes.js has it)
  assert.deepEqual(got.map((r) => r.textContent.replace(/"/g, '')), ['ventnothing yet', 'w11task-1', 'w21task-2', 'w31task-3']);
  // Picking a received message: the callback; the path lights the link and both nodes.
  find(box, (el) => el.classList.contains('topo-msg'))[1].dispatch('click');
  assert.deepEqual(picked, [2]);
  const places = state.pathPlaces(2, events);
  view.setPath({ msg: 2, ...places });
  assert.deepEqual(find(box, (el) => el.classList.contains('on-path') && el.classList.contains('topo-edge')).map((e) => e.getAttribute('data-conn')), ['1']);
  assert.deepEqual(find(box, (el) => el.classList.contains('on-path') && el.classList.contains('topo-node')).map((e) => e.getAttribute('data-node')), ['vent', 'w2']);
  assert.deepEqual(find(box, (el) => el.classList.contains('on-path') && el.classList.contains('topo-msg')).map((e) => e.textContent.replace(/"/g, '')), ['task-2']);
  assert.deepEqual(find(box, (el) => el.classList.contains('on-path') && el.classList.contains('topo-msg')).map((e) => e.dataset.msg), ['2']);
  // A step back: fewer events, and the diagram says so.
  state.sync(events.slice(0, 8));
  view.update({ now: true });
  assert.doesNotMatch(vent.textContent, /dropped|blocked/);
  assert.equal(find(box, attr('data-pipe', 'vent>w1'))[0].getAttribute('data-depth'), '0'); // (its message went out on the wire)
});

test('the sequence draws N lifelines: arrows between two nodes, decisions and receipts on one, a path marked', () => {
  const doc = createDocument();
  const box = doc.createElement('div');
  const events = loadEvents();
  const seq = new SequenceView(box, { i18n: en, source: new ArraySource(events) });
  seq.viewport.clientHeight = 2000;
  const state = new TopologyState();
  state.setTopology(LOAD);
  state.sync(events);
  const { lanes, endsOf } = lifelines(state, ['vent', 'w1', 'w2', 'w3']);
  seq.setLanes(lanes, endsOf);
  const onPath = new Set(state.path(2).indexes.map((i) => events[i]));
  seq.setHighlight((ev) => onPath.has(ev));
  doc.flush();
  const heads = find(box, (el) => el.classList.contains('lane-head'));
  assert.deepEqual(heads.map((h) => h.textContent), ['vent PUSH', 'w1 PULL', 'w2 PULL', 'w3 PULL']);
  assert.deepEqual(heads.map((h) => h.style.left), ['12.5%', '37.5%', '62.5%', '87.5%']);
  const rows = find(box, (el) => el.classList.contains('seq-row'));
  const row = (i) => rows.find((r) => r.dataset.index === String(i));
  const msg2 = row(7);
  assert.ok(msg2.classList.contains('ltr'));
  const arrow = find(msg2, (el) => el.classList.contains('arrow'))[0];
  assert.deepEqual([arrow.style.left, arrow.style.right], ['12.5%', '37.5%'], 'task-2 goes from vent to w2');
  assert.ok(row(9).classList.contains('what-recv'));
  assert.match(row(9).textContent, /w2 received .*task-2/);
  assert.ok(row(17).classList.contains('what-drop'));
  assert.match(row(17).textContent, /vent: PUB dropped for w2/);
  assert.deepEqual(rows.filter((r) => r.classList.contains('on-path')).map((r) => Number(r.dataset.index)), [5, 6, 7, 8, 9]);
  // Back to two lifelines.
  seq.setLanes(null);
  doc.flush();
  assert.equal(find(box, (el) => el.classList.contains('lane-head')).length, 0);
});
