// Virtual-scroll maths, the selection store, element sources, the event log,
// the hex-dump model and the composer.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { visibleRange, scrollToReveal, contentHeight, atBottom, pagesFor, MAX_SCROLL_PX } from '../../frontend/js/core/virtual.js';
import { createSelection, createStore } from '../../frontend/js/core/store.js';
import { ArraySource, PagedSource } from '../../frontend/js/core/source.js';
import { EventLog, peerLabel } from '../../frontend/js/core/eventlog.js';
import { buildChunks, layoutLines, formatDumpLine, fittingBytesPerLine } from '../../frontend/js/core/hexdump.js';
import { describeFrames, buildSendCommand, newFrame } from '../../frontend/js/core/composer.js';

test('visible window of a list that fits the browser', () => {
  const r = visibleRange({ scrollTop: 300, viewportHeight: 100, rowHeight: 30, total: 1000, overscan: 2 });
  assert.deepEqual(r, { start: 8, end: 17, top: 240 });
  assert.deepEqual(visibleRange({ scrollTop: 0, viewportHeight: 100, rowHeight: 30, total: 0 }), { start: 0, end: 0, top: 0 });
  assert.equal(contentHeight(1000, 30), 30000);
  assert.equal(scrollToReveal({ index: 5, scrollTop: 0, viewportHeight: 100, rowHeight: 30, total: 1000 }), 80);
  assert.equal(scrollToReveal({ index: 2, scrollTop: 300, viewportHeight: 100, rowHeight: 30, total: 1000 }), 60);
  assert.equal(scrollToReveal({ index: 11, scrollTop: 300, viewportHeight: 100, rowHeight: 30, total: 1000 }), 300);
  assert.ok(atBottom({ scrollTop: 29900, viewportHeight: 100, rowHeight: 30, total: 1000 }));
});

test('a 2,000,000-row list: compressed scrolling still reaches and reveals every row', () => {
  const total = 2_000_000;
  const rowHeight = 30;
  const viewportHeight = 545;
  assert.equal(contentHeight(total, rowHeight), MAX_SCROLL_PX);
  const fits = Math.floor(viewportHeight / rowHeight);
  for (const index of [0, 1, 17, 999_999, 1_234_567, total - fits, total - 2, total - 1]) {
    const scrollTop = scrollToReveal({ index, scrollTop: 0, viewportHeight, rowHeight, total });
    assert.ok(scrollTop >= 0 && scrollTop <= MAX_SCROLL_PX - viewportHeight, `scrollTop in range for ${index}`);
    const { start, end, top } = visibleRange({ scrollTop, viewportHeight, rowHeight, total, overscan: 0 });
    assert.ok(index >= start && index < end, `row ${index} rendered`);
    // Fully inside the viewport, not cut at its bottom.
    const y = top + (index - start) * rowHeight - scrollTop;
    assert.ok(y >= 0 && y + rowHeight <= viewportHeight, `row ${index} fully visible (y=${y})`);
  }
  // The rendered window stays small whatever the position.
  const r = visibleRange({ scrollTop: 4_000_000, viewportHeight, rowHeight, total });
  assert.ok(r.end - r.start < 40);
});

test('pages covering a window', () => {
  assert.deepEqual(pagesFor(0, 1, 200), [0]);
  assert.deepEqual(pagesFor(150, 450, 200), [0, 1, 2]);
  assert.deepEqual(pagesFor(5, 5, 200), []);
});

test('the selection store: element, then field; subscribers see each change once', () => {
  const sel = createSelection();
  const seen = [];
  const off = sel.subscribe((s) => seen.push([s.index, s.event && s.event.name, s.field]));
  const ev = { name: 'READY', fields: [{ name: 'a' }, { name: 'b' }] };
  sel.selectElement(3, null);
  sel.setEvent(3, ev);
  sel.setEvent(4, { name: 'stale' }); // a reply for another element is ignored
  sel.selectField(1);
  sel.selectField(1); // no change, no notification
  assert.equal(sel.fieldObject().name, 'b');
  sel.selectElement(3, ev); // same element: keeps the field
  sel.selectElement(5, null); // another element: the field goes
  off();
  sel.clear();
  assert.deepEqual(seen, [
    [3, null, null],
    [3, 'READY', null],
    [3, 'READY', 1],
    [5, null, null],
  ]);
  const store = createStore({ a: 1 });
  let n = 0;
  store.subscribe(() => n++);
  store.set({ a: 1 });
  store.set({ a: 2 });
  assert.equal(n, 1);
});

test('a paged source fetches each page once, knows the total, and forgets old pages', async () => {
  const calls = [];
  const src = new PagedSource({
    pageSize: 10,
    maxPages: 2,
    fetchPage: async (offset, limit) => {
      calls.push(offset);
      return { events: Array.from({ length: Math.min(limit, 35 - offset) }, (_, i) => ({ n: offset + i, index: offset + i })), total: 35 };
    },
  });
  let changes = 0;
  src.subscribe(() => changes++);
  await src.load();
  assert.equal(src.length, 35);
  assert.equal(src.get(3).n, 3);
  assert.equal(src.get(12), undefined);
  await Promise.all([src.ensure(5, 25), src.ensure(10, 20)]);
  assert.deepEqual(calls, [0, 10, 20]);
  assert.equal(src.get(21).n, 21);
  assert.equal(src.pages.size, 2, 'least recently used page dropped');
  assert.equal(src.findLoaded((e) => e.n === 21), 21);
  assert.deepEqual(src.slice(19, 22).map((x) => x.index), [19, 20, 21]);
  assert.deepEqual(src.slice(0, 3), [], 'page 0 was dropped');
  assert.ok(changes >= 3);
  const failing = new PagedSource({ fetchPage: async () => Promise.reject(new Error('boom')) });
  await assert.rejects(failing.load(), /boom/);
  assert.equal(failing.error.message, 'boom');
  const arr = new ArraySource([1, 2]);
  let notified = 0;
  arr.subscribe(() => notified++);
  arr.set([1, 2, 3]);
  assert.equal(arr.length, 3);
  assert.equal(notified, 1);
});

test('the session log: seq replaces, step_back trims, peers are read from greetings and READY', () => {
  const log = new EventLog();
  const greeting = (dir, seq) => ({ kind: 'greeting', dir, seq, version: '3.1', mechanism: 'NULL', offset: 0, length: 64 });
  log.add(greeting('c2s', 0));
  log.add(greeting('s2c', 1));
  log.add({ kind: 'command', name: 'READY', dir: 'c2s', seq: 2, properties: { 'Socket-Type': 'DEALER', Identity: 'client-1' } });
  log.add({ kind: 'expert', dir: 's2c', seq: 3, severity: 'warn', text: 'x' });
  assert.equal(log.length, 4);
  assert.deepEqual(log.experts, [3]);
  assert.equal(log.add({ kind: 'expert', dir: 's2c', seq: 3, severity: 'error', text: 'y' }), 3, 'same seq replaces');
  assert.equal(log.events[3].severity, 'error');
  log.add({ kind: 'frame', dir: 's2c', seq: 5 });
  log.add({ kind: 'frame', dir: 's2c', seq: 4 }); // late: goes before seq 5
  assert.deepEqual(log.events.map((e) => e.seq), [0, 1, 2, 3, 4, 5]);
  assert.equal(log.truncate(3), true);
  assert.deepEqual(log.events.map((e) => e.seq), [0, 1, 2]);
  assert.deepEqual(log.experts, []);
  assert.equal(log.truncate(3), false);
  assert.deepEqual(log.peer('c2s'), { version: '3.1', mechanism: 'NULL', socketType: 'DEALER', identity: 'client-1' });
  assert.deepEqual(log.context('s2c'), { version: '3.1', mechanism: 'NULL' });
  assert.equal(peerLabel(en, 'client', log.peer('c2s')), 'client DEALER "client-1" · 3.1 NULL');
  assert.equal(peerLabel(en, 'server', {}), 'server');
});

test('hex dump: element-aligned lines per direction, overlaps shown once, cuts and gaps marked', () => {
  const events = [
    { dir: 'c2s', kind: 'greeting', offset: 0, length: 20, hex: '00'.repeat(20) },
    { dir: 's2c', kind: 'frame', offset: 0, length: 3, hex: '000141' },
    { dir: 'c2s', kind: 'command', offset: 16, length: 8, hex: '11'.repeat(8) }, // overlaps 4 octets already shown
    { dir: 'c2s', kind: 'message', offset: 0, length: 20 }, // no bytes of its own
    { dir: 's2c', kind: 'frame', offset: 3, length: 1000, hex: '0203' + 'aa'.repeat(30), truncated: true },
    { dir: 's2c', kind: 'gap', offset: 1003, length: 50 },
  ];
  const chunks = buildChunks(events.map((event, index) => ({ index, event })));
  assert.deepEqual(
    chunks.map((c) => [c.dir, c.offset, c.bytes.length, c.index, c.missing, c.gap]),
    [
      ['c2s', 0, 20, 0, 0, 0],
      ['s2c', 0, 3, 1, 0, 0],
      ['c2s', 20, 4, 2, 0, 0],
      ['s2c', 3, 32, 4, 968, 0],
      ['s2c', 1003, 0, 5, 0, 50],
    ],
  );
  const lines = layoutLines(chunks, 16);
  assert.equal(lines.count, 2 + 1 + 1 + 2 + 1 + 1);
  assert.deepEqual(lines.line(1), { kind: 'bytes', dir: 'c2s', offset: 16, bytes: new Uint8Array(4), index: 0 });
  assert.equal(lines.line(6).kind, 'missing');
  assert.equal(lines.line(6).count, 968);
  assert.equal(lines.line(7).kind, 'gap');
  assert.equal(lines.findLine('c2s', 17), 1);
  assert.equal(lines.findLine('c2s', 21), 3);
  assert.equal(lines.findLine('s2c', 20), 5);
  assert.equal(lines.findLine('s2c', 500), 6);
  assert.equal(
    formatDumpLine(0x40, Uint8Array.from([0x04, 0x1a, 0x05, 0x52, 0x45, 0x41, 0x44, 0x59, 0x0b])),
    '00000040  04 1a 05 52 45 41 44 59  0b                        ...READY.',
  );
});

test('the composer: sizes, LONG above 255 octets, MORE on all but the last; text or hex on the wire', () => {
  const frames = [newFrame('', 'text'), newFrame('a'.repeat(256)), newFrame('de ad:be ef', 'hex')];
  assert.deepEqual(
    describeFrames(en, frames).map((f) => [f.size, f.long, f.more, f.error]),
    [
      [0, false, true, null],
      [256, true, true, null],
      [4, false, false, null],
    ],
  );
  assert.deepEqual(buildSendCommand(en, 'client', [newFrame('Hello'), newFrame('World')]), { type: 'send', from: 'client', frames: ['Hello', 'World'], hex: false });
  assert.deepEqual(buildSendCommand(en, 'server', [newFrame('é'), newFrame('0x01 02', 'hex')]), { type: 'send', from: 'server', frames: ['c3a9', '0102'], hex: true });
  assert.throws(() => buildSendCommand(en, 'server', [newFrame('zz', 'hex')]), /frame 1: .*not a hex digit/);
  assert.match(describeFrames(en, [newFrame('abc', 'hex')])[0].error, /odd number/);
});

test('a hex line holds what its pane shows: 16, 8 or 4 octets (64, 32, 16 characters of text)', () => {
  assert.equal(fittingBytesPerLine(0), 16); // width unknown: the widest
  assert.equal(fittingBytesPerLine(120), 16);
  assert.equal(fittingBytesPerLine(75.6), 16); // 18 + 16 x 3.6: the server side's indented line fits exactly
  assert.equal(fittingBytesPerLine(75.5), 8);
  assert.equal(fittingBytesPerLine(50), 8);
  assert.equal(fittingBytesPerLine(40), 4);
  assert.equal(fittingBytesPerLine(10), 4); // never fewer
  assert.equal(fittingBytesPerLine(81, 'ascii'), 64);
  assert.equal(fittingBytesPerLine(80, 'utf8'), 32);
  assert.equal(fittingBytesPerLine(20, 'ascii'), 16);
  const lines = layoutLines([{ dir: 'c2s', offset: 0, bytes: new Uint8Array(20), index: 0 }], fittingBytesPerLine(50));
  assert.equal(lines.count, 3); // 8 + 8 + 4
});
