// Issue 16's DOM-free pieces: sequence marks (connection boundaries, faults), UTF-8 previews and the
// UTF-8 text dump, a ROUTER's routing id in the composer, the faults each session mode offers.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { Marker, MarkedSource } from '../../frontend/js/core/marks.js';
import { ArraySource } from '../../frontend/js/core/source.js';
import { previewHex, utf8Cells, utf8Text, bytesToHex, utf8Encode } from '../../frontend/js/core/bytes.js';
import { describeFrames, wireTotals, newFrame } from '../../frontend/js/core/composer.js';
import { faultsFor } from '../../frontend/js/core/session.js';
import { infoLabel } from '../../frontend/js/core/labels.js';

const link = (what, extra = {}) => ({ kind: 'link', what, ...extra });

test('marks say who closed a connection and why, where the next opens, and where a fault was injected', () => {
  const m = new Marker(en);
  assert.equal(m.take(link('open', { conn: '0' }), 0), null); // the first connection needs no mark
  assert.equal(m.take(link('bytes', { conn: '0' }), 1), null);
  m.take(link('half-closed', { conn: '0', side: 'client', reason: 'heartbeat timeout: no traffic within 1 s of a PING' }), 5);
  m.take(link('half-closed', { conn: '0', side: 'server', reason: 'peer closed the connection' }), 5); // the second closer is not the why
  assert.equal(m.take(link('closed', { conn: '0' }), 5).text, 'Connection 0 closed by the client: heartbeat timeout: no traffic within 1 s of a PING');
  assert.equal(m.take(link('open', { conn: '1' }), 5).text, 'Connection 1 opens');
  const fault = m.take(link('fault', { fault: 'corrupt', conn: '1', dir: 's2c', offset: 75 }), 7);
  assert.equal(fault.text, 'Fault: octet 75 of server → client corrupted');
  assert.equal(m.take(link('fault', { fault: 'wrong_mechanism', peer: 'client', mechanism: 'PLAIN' }), 7).text, 'Fault: the client now announces PLAIN; it reconnects');
  assert.equal(m.marks.length, 4);
  // Stepping back to 6 elements: what happened after the cut goes.
  assert.ok(m.truncate(6));
  assert.deepEqual(m.marks.map((x) => x.mark), ['closed', 'open']);
  assert.equal(m.truncate(6), false);
});

test('a connection that ends with ERROR says so', () => {
  const m = new Marker(en);
  const events = [
    { conn: '0', kind: 'command', name: 'HELLO' },
    { conn: '0', kind: 'command', name: 'ERROR', reason: 'Invalid username or password' },
    { conn: '0', kind: 'expert', text: "ERROR received: 'Invalid username or password'" },
  ];
  m.take(link('half-closed', { conn: '0', side: 'server', reason: 'Invalid username or password' }), 1, events.slice(0, 1));
  assert.equal(m.take(link('closed', { conn: '0' }), 3, events).text, 'Connection 0 closed by the server after ERROR "Invalid username or password"');
  m.take(link('half-closed', { conn: '1', side: 'client', reason: 'peer closed the connection' }), 3, events);
  assert.equal(m.take(link('closed', { conn: '1' }), 3, events).text, 'Connection 1 closed by the client: peer closed the connection');
});

test('a marked source interleaves marks with the elements and maps rows to elements and back', () => {
  const events = new ArraySource([0, 1, 2, 3, 4, 5, 6].map((seq) => ({ kind: 'frame', seq })));
  const m = new Marker(en);
  m.take(link('half-closed', { conn: '0', side: 'server', reason: 'ERROR "no"' }), 4);
  m.take(link('closed', { conn: '0' }), 4);
  m.take(link('open', { conn: '1' }), 4);
  m.take(link('fault', { fault: 'close', side: 'client' }), 6);
  m.take(link('fault', { fault: 'close', side: 'client' }), 9); // ahead of the elements shown: not yet a row
  const rows = new MarkedSource(events, m.marks);
  const shape = [...Array(rows.length).keys()].map((r) => (rows.get(r).kind === 'mark' ? rows.get(r).mark : rows.get(r).seq));
  assert.deepEqual(shape, [0, 1, 2, 3, 'closed', 'open', 4, 5, 'fault', 6]);
  assert.deepEqual([0, 3, 4, 5, 6].map((i) => rows.rowOf(i)), [0, 3, 6, 7, 9]);
  assert.deepEqual([0, 4, 5, 6, 8, 9].map((r) => rows.eventOf(r)), [0, null, null, 4, null, 6]);
  assert.ok(rows.isMark(8) && !rows.isMark(9));
  assert.equal(rows.elementCount, 7);
  let told = 0;
  rows.subscribe(() => told++);
  events.set([...events.items, { kind: 'frame', seq: 7 }, { kind: 'frame', seq: 8 }, { kind: 'frame', seq: 9 }]);
  assert.equal(told, 1);
  assert.equal(rows.length, 10 + 3 + 1); // the last mark sits before element 9 now
  assert.equal(rows.get(rows.rowOf(9) - 1).mark, 'fault');
});

test('UTF-8 bodies preview as text; other bytes keep their escapes', () => {
  const hello = bytesToHex(utf8Encode('你好，世界'));
  assert.equal(previewHex(hello), '"你好，世界"');
  assert.equal(previewHex(hello, 7), '"你好"…'); // cut at a character boundary
  assert.equal(previewHex(bytesToHex(utf8Encode('ünï "q" \\ ✓\n'))), '"ünï \\"q\\" \\\\ ✓\\n"');
  assert.equal(previewHex('ff00fe'), '"\\xff\\x00\\xfe"');
  assert.equal(previewHex('e4bd'), '"\\xe4\\xbd"'); // a character cut short is not text
  assert.equal(previewHex(bytesToHex(utf8Encode('plain ascii'))), '"plain ascii"');
  assert.equal(utf8Text(utf8Encode('abc')), null); // plain ASCII keeps the escaping preview
  assert.equal(infoLabel(en, { kind: 'frame', size: 15, body: hello }), 'Frame size=15 "你好，世界"');
  assert.equal(infoLabel(en, { kind: 'message', frames: [hello] }), 'Message [1 frame] "你好，世界"');
});

test('the UTF-8 text dump puts each character in its first octet and keeps one cell per octet', () => {
  assert.deepEqual(utf8Cells(utf8Encode('a你\n')), ['a', '你', '', '', '.']);
  assert.deepEqual(utf8Cells(new Uint8Array([0xe4, 0xbd, 0x41, 0xff])), ['.', '.', 'A', '.']);
  assert.deepEqual(utf8Cells(new Uint8Array([0xc2, 0x85])), ['.', '.']); // a C1 control is not printable
});

test('a ROUTER sends its routing id as frame 1: it is described, and counted off the wire', () => {
  const frames = [newFrame('client-1'), newFrame('hi')];
  const plain = describeFrames(en, frames);
  assert.deepEqual(wireTotals(plain), { frames: 2, octets: 14 });
  const routed = describeFrames(en, frames, { routing: true });
  assert.deepEqual(routed.map((f) => [f.routing, f.wire, f.size, f.more]), [[true, false, 8, false], [false, true, 2, false]]);
  assert.deepEqual(wireTotals(routed), { frames: 1, octets: 4 });
});

test('each session mode offers only the faults the server says it can inject, in the menu\'s order', () => {
  // GET /api/sessions/faults, as the server answers it (tests/web/test_faults.py holds the server to it).
  const table = [
    { fault: 'corrupt_byte', modes: ['simulated', 'tcp'] }, { fault: 'split_writes', modes: ['simulated', 'tcp'] },
    { fault: 'delay', modes: ['simulated', 'tcp'] }, { fault: 'close', modes: ['simulated', 'tcp'] },
    { fault: 'kill', modes: ['tcp'] }, { fault: 'wrong_mechanism', modes: ['simulated'] },
    { fault: 'stop_pong', modes: ['simulated'] }, { fault: 'teleport', modes: ['simulated'] },
  ];
  const names = (mode) => faultsFor(en, mode, table.slice(0, 7)).map((f) => f.fault);
  assert.deepEqual(names('simulated'), ['corrupt_byte', 'split_writes', 'delay', 'wrong_mechanism', 'stop_pong', 'close']);
  assert.deepEqual(names('tcp'), ['corrupt_byte', 'split_writes', 'delay', 'close', 'kill']);
  assert.deepEqual(faultsFor(en, 'simulated', null), []); // before the server answers
  const unknown = faultsFor(en, 'simulated', table).at(-1); // a fault the page has no words for: its name
  assert.deepEqual([unknown.fault, unknown.label], ['teleport', 'teleport']);
  assert.equal(faultsFor(en, 'tcp', table)[0].label, 'Corrupt a byte');
});
