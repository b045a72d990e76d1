// The replay box's changes, as `zmtplab replay --set` takes them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { changeText, REPLAY_OPTIONS, ReplayPanel } from '../../frontend/js/app/playground/replay-panel.js';
import { createDocument, byClass } from './fake-dom.mjs';
import { en } from './i18n-setup.mjs';

test('a change is NODE.OPTION=VALUE, its value trimmed', () => {
  assert.equal(changeText('sub2', 'connect_at', ' 0 '), 'sub2.connect_at=0');
  assert.equal(changeText('dealer', 'heartbeat_ttl', '60'), 'dealer.heartbeat_ttl=60');
});

test('an empty value is no change, except an empty subscription (every message)', () => {
  assert.equal(changeText('sub1', 'sndhwm', ''), null);
  assert.equal(changeText('sub1', 'subscribe', ''), 'sub1.subscribe=');
  assert.equal(changeText('', 'sndhwm', '4'), null);
  assert.equal(changeText('sub1', 'colour', 'red'), null);
});

test("the options are the CLI's", () => {
  for (const o of ['connect_at', 'subscribe_at', 'sndhwm', 'rcvhwm', 'heartbeat_ivl', 'heartbeat_timeout', 'heartbeat_ttl', 'version']) {
    assert.ok(REPLAY_OPTIONS.includes(o), o);
  }
});

test("a re-run's result shows once its session has started, so Play plays the session it speaks of", async () => {
  const doc = createDocument();
  const root = doc.createElement('div');
  const result = (summary) => ({ fidelity: { same: true, same_directions: 2, total: 2, directions: 2, connections: [] },
    notes: [], topology_notes: [], playground: [], nodes: [{ name: 'rep2', type: 'REP' }], topology: { nodes: [] },
    diff: summary ? { changes: ['rep2.connect_at=5'], nodes: [], summary: [summary] } : null });
  const starts = [];
  const panel = new ReplayPanel(doc, root, 'cap', {
    i18n: en,
    api: { captureReplay: async (_, changes) => result(changes.length ? 'rep1 receives 6 of 6' : null) },
    start: () => new Promise((resolve) => starts.push(resolve)),
    saveTopology() {}, lessonUrl: () => null,
  });
  const shown = () => [byClass(root, 'replay-summary').length, byClass(root, 'replay-busy').length];
  const until = async (n) => { while (starts.length < n) await new Promise((r) => setImmediate(r)); };
  const first = panel.load();
  await until(1);
  starts[0]();
  await first;
  assert.deepEqual(shown(), [0, 0]);
  panel.changes = ['rep2.connect_at=5'];
  const rerun = panel.load();
  await until(2);
  assert.deepEqual(shown(), [0, 1], 'while its session starts: busy, no summary yet');
  starts[1]();
  await rerun;
  assert.deepEqual(shown(), [1, 0], 'then its summary');
});
