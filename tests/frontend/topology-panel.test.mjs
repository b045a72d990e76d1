// The playground's topology part (app/topology-panel.js) on the fake DOM: a picked message's path stays marked in
// the sequence when one of its elements is fetched with its fields (the log then holds a new copy of it).
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument, walk } from './fake-dom.mjs';
import { SequenceView } from '../../frontend/js/views/sequence.js';
import { TopologyPanel } from '../../frontend/js/app/shared/topology-panel.js';
import { EventLog } from '../../frontend/js/core/eventlog.js';
import { ArraySource } from '../../frontend/js/core/source.js';

const hex = (s) => Buffer.from(s).toString('hex');

const TOPOLOGY = {
  nodes: [{ name: 'vent', type: 'PUSH' }, { name: 'w1', type: 'PULL' }, { name: 'w2', type: 'PULL' }],
  links: [{ connect: 'w1', bind: 'vent' }, { connect: 'w2', bind: 'vent' }],
  conns: [{ conn: '0', link: 0, client: 'w1', server: 'vent' }, { conn: '1', link: 1, client: 'w2', server: 'vent' }],
};

function events() {
  let seq = 0;
  const ev = (e) => ({ t: seq / 10, seq: seq++, ...e });
  const out = [];
  for (const [k, w] of ['w1', 'w2'].entries()) {
    const conn = String(k);
    const msg = k + 1;
    out.push(ev({ kind: 'socket', node: 'vent', what: 'route', text: `PUSH chose the pipe to ${w}`, rule: 'round-robin', peer: w, conn, msg, depth: 1, hwm: 2 }));
    out.push(ev({ kind: 'frame', conn, dir: 's2c', offset: 64, length: 8, hex: `0006${hex(`task-${msg}`)}` }));
    out.push(ev({ kind: 'message', conn, dir: 's2c', offset: 64, length: 8, frames: [hex(`task-${msg}`)], msg }));
    out.push(ev({ kind: 'peer', what: 'recv', peer: w, frames: [hex(`task-${msg}`)], msg }));
  }
  return out;
}

test("a message's path stays marked when its wire element is fetched again with its fields", () => {
  const doc = createDocument();
  const log = new EventLog();
  log.addAll(events());
  const source = new ArraySource(log.events);
  const sequence = new SequenceView(doc.createElement('div'), { i18n: en, source, rowHeight: 30 });
  sequence.viewport.clientHeight = 600;
  const picked = [];
  const panel = new TopologyPanel(doc.createElement('div'), { i18n: en, sequence, onPick: (i) => picked.push(i) });
  panel.setTopology(TOPOLOGY);
  panel.sync(log.events);
  panel.pickMessage(2);
  assert.deepEqual(picked, [6], "the message's wire element is opened");
  const marked = () => {
    doc.flush();
    return walk(sequence.rows).filter((r) => r.classList.contains('seq-row') && r.classList.contains('on-path')).map((r) => Number(r.dataset.index));
  };
  assert.deepEqual(marked(), [4, 5, 6, 7]);
  // Opened, the message is fetched with its fields: the log holds the new copy in its place.
  log.add({ ...log.events[6], fields: [{ name: 'flags', offset: 64, length: 1 }] });
  source.set(log.events);
  panel.sync(log.events);
  assert.deepEqual(marked(), [4, 5, 6, 7], 'the fetched copy is still on the path');
});

/** The diagram of TOPOLOGY fed by `send(n)`: n messages, each the events `eventsOf(msg)` makes. */
async function fedDiagram(eventsOf) {
  const { TopologyView } = await import('../../frontend/js/views/topology.js');
  const { TopologyState } = await import('../../frontend/js/core/topology-state.js');
  const box = createDocument().createElement('div');
  const view = new TopologyView(box, { i18n: en });
  const state = new TopologyState();
  state.setTopology(TOPOLOGY);
  view.setTopology(TOPOLOGY, state);
  const log = [];
  let seq = 0;
  const send = (n) => {
    for (let i = 0; i < n; i++) {
      const msg = seq;
      for (const ev of eventsOf(msg)) log.push({ seq: seq++, ...ev });
    }
    state.sync(log);
    view.update();
  };
  return { box, view, send };
}

test('the diagram under a flood: a link starts a dot at most every 50 ms, every message still counted', async () => {
  const { box, view, send } = await fedDiagram((msg) => [
    { kind: 'frame', conn: '0', dir: 's2c', offset: 64, length: 8, hex: `0006${hex(`job-${msg}`)}` },
    { kind: 'message', conn: '0', dir: 's2c', offset: 64, length: 8, frames: [hex(`job-${msg}`)], msg },
  ]);
  const dots = () => walk(box).filter((el) => el.classList.contains('topo-dot')).length;
  send(1);
  assert.equal(dots(), 1, 'a quiet link: a dot per message');
  send(1);
  assert.equal(dots(), 2);
  await new Promise((r) => setTimeout(r, 60));
  send(40); // (busy: more than 32 events since the figures were drawn)
  send(40);
  send(40);
  assert.equal(dots(), 3, 'busy: one more dot for the link within 50 ms, not one per frame');
  view.update({ now: true }); // (busy, the figures wait up to 100 ms: drawn now)
  assert.match(walk(box).find((el) => el.getAttribute && el.getAttribute('data-node') === 'vent').textContent, /sent 122/);
  await new Promise((r) => setTimeout(r, 60));
  send(40);
  assert.equal(dots(), 4, '50 ms later the link starts another');
});

test('quiet, messages that came on one link in one frame (a slow frame) each get their dot, one after another', async () => {
  const { box, send } = await fedDiagram((msg) => [
    { kind: 'message', conn: '0', dir: 's2c', offset: 64, length: 8, frames: [hex(`job-${msg}`)], msg },
  ]);
  send(3);
  const dots = walk(box).filter((el) => el.classList.contains('topo-dot'));
  assert.deepEqual(dots.map((el) => el.getAttribute('data-msg')), ['0', '1', '2']);
});

test('busy, the diagram draws its figures a third at a time (nodes, received lists, queues), never all in one frame', async () => {
  const { box, view, send } = await fedDiagram((msg) => [
    { kind: 'message', conn: '0', dir: 's2c', offset: 64, length: 8, frames: [hex(`job-${msg}`)], msg },
    { kind: 'peer', what: 'recv', peer: 'w1', frames: [hex(`job-${msg}`)], msg },
  ]);
  const sent = () => /sent (\d+)/.exec(walk(box).find((el) => el.getAttribute && el.getAttribute('data-node') === 'vent').textContent)[1];
  const got = () => walk(box).find((el) => el.classList.contains('topo-got-row') && el.getAttribute('data-node') === 'w1').dataset.count;
  const pause = () => new Promise((r) => setTimeout(r, 40));
  send(1);
  assert.deepEqual([sent(), got()], ['1', '1'], 'quiet: everything at once');
  await pause();
  send(40);
  assert.deepEqual([sent(), got()], ['41', '1'], 'busy: the nodes first');
  await pause();
  send(40);
  assert.deepEqual([sent(), got()], ['41', '81'], 'then the received lists');
  view.update({ now: true });
  assert.deepEqual([sent(), got()], ['81', '81'], 'all of it when asked');
});
