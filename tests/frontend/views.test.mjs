// Views render payload bytes as text: a body of `<img src=x onerror=alert(1)>`
// must show as those characters. Checked two ways: a static scan of every
// frontend file, and the views rendered into a fake DOM that throws on any
// HTML parsing. Also: the pages are CSP-clean and fetch nothing from outside.
import { en, pageI18n } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDocument, walk, byClass } from './fake-dom.mjs';
import { createSelection } from '../../frontend/js/core/store.js';
import { ArraySource } from '../../frontend/js/core/source.js';
import { buildChunks } from '../../frontend/js/core/hexdump.js';
import { SequenceView } from '../../frontend/js/views/sequence.js';
import { OctetView } from '../../frontend/js/views/octets.js';
import { TreeView } from '../../frontend/js/views/tree.js';
import { ExplainView } from '../../frontend/js/views/explain.js';
import { HexView } from '../../frontend/js/views/hexview.js';
import { ExpertView } from '../../frontend/js/views/expert.js';
import { ConnectionsView, PacketsView } from '../../frontend/js/views/capture.js';
import { Composer } from '../../frontend/js/views/controls.js';

const FRONTEND = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../frontend');
const EVIL = '<img src=x onerror=alert(1)>';
const EVIL_HEX = Buffer.from(EVIL).toString('hex');

function files(dir, exts) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return files(p, exts);
    return exts.some((e) => d.name.endsWith(e)) ? [p] : [];
  });
}

test('no frontend code can parse a string as HTML or code', () => {
  const js = files(FRONTEND, ['.js']);
  assert.ok(js.length > 20);
  const banned = /\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|eval\s*\(|new\s+Function\s*\(|srcdoc)\b/;
  for (const f of js) {
    const text = fs.readFileSync(f, 'utf8');
    const lines = text.split('\n');
    lines.forEach((line, i) => assert.doesNotMatch(line, banned, `${path.relative(FRONTEND, f)}:${i + 1}`));
    // Only the entry modules touch browser globals; views and core get them injected.
    if (!/main-(playground|capture)\.js$/.test(f)) {
      assert.doesNotMatch(text, /(^|[^.\w])(window|document|navigator|localStorage)\./m, `${path.relative(FRONTEND, f)} reaches for a browser global`);
    }
  }
});

test('pages are CSP-clean and work offline', () => {
  for (const f of files(FRONTEND, ['.html'])) {
    const html = fs.readFileSync(f, 'utf8');
    const name = path.basename(f);
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, `${name}: inline script`);
    assert.doesNotMatch(html, /\son[a-z]+\s*=/i, `${name}: inline event handler`);
    assert.doesNotMatch(html, /\sstyle\s*=/i, `${name}: style attribute`);
    assert.doesNotMatch(html, /<style/i, `${name}: style element`);
    assert.doesNotMatch(html, /(src|href)\s*=\s*["']?(https?:)?\/\//i, `${name}: loads something from another host`);
    for (const m of html.matchAll(/(?:src|href)="([^"#?]+)"/g)) {
      assert.ok(fs.existsSync(path.join(FRONTEND, m[1])), `${name}: ${m[1]} exists`);
    }
    assert.match(html, /<script type="module" src="js\/main-(playground|capture|lessons|corpus|glossary)\.js"><\/script>/);
  }
  for (const f of files(FRONTEND, ['.js', '.css'])) {
    const text = fs.readFileSync(f, 'utf8');
    // The only absolute URLs are links to the specs, which the user opens (and SVG's namespace name, fetched by nobody).
    for (const m of text.matchAll(/https?:\/\/[^\s'"`)]+/g)) assert.match(m[0], /^(https:\/\/rfc\.zeromq\.org\/spec\/|http:\/\/www\.w3\.org\/2000\/svg$)/, `${path.basename(f)}: ${m[0]}`);
    assert.doesNotMatch(text, /@import|url\(\s*["']?https?:/, `${path.basename(f)}: remote CSS`);
  }
  // Every relative import resolves to a file.
  for (const f of files(FRONTEND, ['.js'])) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
      assert.ok(fs.existsSync(path.resolve(path.dirname(f), m[1])), `${path.basename(f)} imports ${m[1]}`);
    }
  }
});

function hostileEvents() {
  const frame = {
    conn: '0',
    dir: 's2c',
    kind: 'frame',
    offset: 64,
    length: 2 + EVIL.length,
    more: false,
    long: false,
    size: EVIL.length,
    body: EVIL_HEX,
    hex: '00' + EVIL.length.toString(16) + EVIL_HEX,
    packets: [12],
    fields: [
      { name: 'flags', offset: 64, length: 1, value: '0x00 (none)', rule: 'flags', note: EVIL },
      { name: 'size', offset: 65, length: 1, value: EVIL.length, rule: 'short-size', note: 'Body size' },
      { name: EVIL, offset: 66, length: EVIL.length, value: EVIL, rule: EVIL, note: EVIL },
    ],
  };
  return [
    { conn: '0', dir: 'c2s', kind: 'command', name: EVIL, offset: 64, length: 10, hex: '0408' + EVIL_HEX.slice(0, 16), properties: { [EVIL]: EVIL }, fields: [] },
    frame,
    { conn: '0', dir: 's2c', kind: 'message', offset: 64, length: frame.length, frames: [EVIL_HEX] },
    { conn: '0', dir: 's2c', kind: 'expert', offset: 66, length: 0, severity: EVIL, text: EVIL },
  ];
}

function assertInert(doc, root) {
  const tags = new Set(doc.created.map((el) => el.tagName));
  for (const bad of ['IMG', 'SCRIPT', 'IFRAME', 'OBJECT', 'EMBED']) assert.ok(!tags.has(bad), `a ${bad} element was created`);
  for (const el of walk(root)) {
    for (const name of el.attributes.keys()) assert.doesNotMatch(name, /^on/i);
    if (el.tagName === 'A') assert.match(el.href, /^https:\/\/rfc\.zeromq\.org\//);
  }
  // Long values wrap (octet boxes, 16-octet dump lines), so look for the payload's start.
  assert.ok(root.textContent.includes('<img src=x'), 'the payload is shown as characters');
}

test('the sequence view renders a hostile payload as text, virtually', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const events = hostileEvents();
  const many = Array.from({ length: 250_000 }, (_, i) => events[i % events.length]);
  const picked = [];
  const view = new SequenceView(container, { i18n: en, source: new ArraySource(many), onSelect: (i) => picked.push(i) });
  doc.flush();
  const rows = byClass(container, 'seq-row');
  assert.ok(rows.length > 0 && rows.length < 60, `only the visible rows exist (${rows.length})`);
  assertInert(doc, container);
  rows[1].dispatch('click');
  assert.deepEqual(picked, [1]);
  view.viewport.dispatch('keydown', { key: 'ArrowDown' });
  view.viewport.dispatch('keydown', { key: 'End' });
  assert.deepEqual(picked, [1, 2, 249_999]);
  doc.flush();
  assert.ok(byClass(container, 'seq-row').some((r) => r.dataset.index === '249999' && r.classList.contains('selected')));
});

test('sequence: a scroll after our own is read, whether or not ours made an event', () => {
  const doc = createDocument();
  const container = doc.createElement('div');
  const events = hostileEvents();
  const view = new SequenceView(container, { i18n: en, source: new ArraySource(Array.from({ length: 10_000 }, (_, i) => events[i % events.length])) });
  doc.flush();
  view.setSelected(5_000); // (revealed: our own scroll)
  doc.flush();
  assert.ok(view.viewport.scrollTop > 0);
  // The browser coalesced our scroll's event with nothing, or made none; the next frame has run. A script (or an
  // assistive tool: no wheel, key or pointer) now scrolls to the end: its rows are drawn.
  view.viewport.scrollTop = 10_000 * view.rowHeight;
  view.viewport.dispatch('scroll');
  doc.flush();
  assert.ok(byClass(container, 'seq-row').some((r) => r.dataset.index === '9999'));
});

test('octet table, tree, explanation and hex dump: one selection, payload as text', () => {
  const doc = createDocument();
  const selection = createSelection();
  const slot = () => doc.createElement('div');
  const [octC, treeC, explC, hexC] = [slot(), slot(), slot(), slot()];
  new OctetView(octC, { i18n: en, selection });
  new TreeView(treeC, { i18n: en, selection });
  new ExplainView(explC, { i18n: en, selection, context: () => ({ version: '3.1' }) });
  const picks = [];
  const hex = new HexView(hexC, { i18n: en, selection, onPick: (...a) => picks.push(a) });
  const events = hostileEvents();
  hex.setChunks(buildChunks(events.map((event, index) => ({ index, event }))));
  selection.selectElement(1, events[1]);
  doc.flush();
  for (const c of [octC, treeC, hexC]) assertInert(doc, c);
  // Select the body field from the octet table: every view highlights it.
  const bodyBox = byClass(octC, 'oct-box').find((b) => b.dataset.field === '2');
  bodyBox.dispatch('click');
  doc.flush();
  assert.equal(selection.get().field, 2);
  assert.ok(byClass(octC, 'oct-box').filter((b) => b.dataset.field === '2').every((b) => b.classList.contains('selected')));
  assert.ok(byClass(treeC, 'tree-field').find((r) => r.dataset.field === '2').classList.contains('selected'));
  assertInert(doc, explC);
  assert.ok(explC.textContent.includes(`value ${EVIL}`));
  const fieldBytes = byClass(hexC, 'sel-field');
  assert.equal(fieldBytes.length, 2 * EVIL.length, 'hex and ASCII cells of the field');
  // Selecting from the tree moves the highlight everywhere.
  byClass(treeC, 'tree-field').find((r) => r.dataset.field === '1').dispatch('click');
  doc.flush();
  assert.equal(selection.get().field, 1);
  assert.equal(byClass(hexC, 'sel-field').length, 2);
  // A click on a byte in the dump reports (element index, direction, stream offset).
  byClass(hexC, 'sel-field')[0].dispatch('click');
  assert.deepEqual(picks, [[1, 's2c', 65]]);
  // The message and the expert event are drawn without fields.
  selection.selectElement(2, events[2]);
  doc.flush();
  assertInert(doc, octC);
  selection.selectElement(3, events[3]);
  doc.flush();
  assertInert(doc, explC);
});

test('expert list, connections, packets and composer keep data as text', () => {
  const doc = createDocument();
  const events = hostileEvents();
  const jumps = [];
  const expertC = doc.createElement('div');
  const expert = new ExpertView(expertC, { i18n: en, onJump: (i) => jumps.push(i) });
  expert.setItems([
    { index: 3, event: events[3] },
    { index: 9, event: { kind: 'expert', severity: 'warn', text: 'reserved bits', dir: 'c2s', offset: 0 } },
  ]);
  assertInert(doc, expertC);
  byClass(expertC, 'expert-item')[1].dispatch('click');
  assert.deepEqual(jumps, [9]);
  // Severity filters hide what is unchecked.
  expert.toggle('warn', false);
  assert.equal(byClass(expertC, 'expert-item').length, 1);

  const connC = doc.createElement('div');
  const opened = [];
  new ConnectionsView(connC, { i18n: en, onSelect: (c) => opened.push(c) }).setConnections(
    [{ conn: '0', client: EVIL, server: '127.0.0.1:5555', versions: { c2s: '3.1', s2c: '3.1' }, mechanism: 'NULL', socket_types: { c2s: EVIL, s2c: 'ROUTER' }, messages: { c2s: 1, s2c: 2 }, bytes: { c2s: 100, s2c: 2048 }, expert: { error: 1 } }],
    '0',
  );
  assertInert(doc, connC);
  walk(connC).find((el) => el.tagName === 'TR' && el.classList.contains('selected')).dispatch('click');
  assert.deepEqual(opened, ['0']);

  const pktC = doc.createElement('div');
  const packets = new PacketsView(pktC, { i18n: en, onPacket() {} });
  packets.setPackets([12, 13], 12);
  packets.setLayers({ layers: [{ name: 'tcp', fields: [{ name: 'Payload', value: EVIL }] }] }, 12);
  assertInert(doc, pktC);

  const compC = doc.createElement('div');
  const sent = [];
  const composer = new Composer(compC, { i18n: en, onSend: (c) => sent.push(c) });
  composer.frames = [{ text: EVIL, mode: 'text' }, { text: 'a'.repeat(300), mode: 'text' }];
  composer.renderFrames();
  assert.match(compC.textContent, /28 octets · short \(1-octet size\) · MORE/);
  assert.match(compC.textContent, /300 octets · LONG \(8-octet size\) · last/);
  composer.doSend();
  assert.deepEqual(sent, [{ type: 'send', from: 'server', frames: [EVIL, 'a'.repeat(300)], hex: false }]);
});

test('the octet table names the whole signature, and what is ours is said in the page language (issue 32.6)', async () => {
  const i18n = pageI18n('en'); // (its own: this test switches it)
  const doc = createDocument();
  const selection = createSelection();
  const octC = doc.createElement('div');
  const treeC = doc.createElement('div');
  const explC = doc.createElement('div');
  new OctetView(octC, { i18n, selection });
  new TreeView(treeC, { i18n, selection });
  new ExplainView(explC, { i18n, selection, context: () => ({ version: '3.1' }) });
  const field = (name, rule, offset, length, value = '') => ({ name, rule, offset, length, value, note: '' });
  const greeting = {
    kind: 'greeting', conn: '0', dir: 'c2s', offset: 0, length: 64, version: '3.1', mechanism: 'NULL',
    hex: 'ff00000000000000017f03014e554c4c' + '00'.repeat(48),
    fields: [field('signature', 'signature', 0, 1, 255), field('padding', 'padding', 1, 8, '0000000000000001'),
      field('signature-end', 'signature', 9, 1, 127), field('version-major', 'version-major', 10, 1, 3),
      field('version-minor', 'version-minor', 11, 1, 1), field('mechanism', 'mechanism', 12, 20, 'NULL'),
      field('as-server', 'as-server', 32, 1, 0), field('filler', 'filler', 33, 31, '')],
  };
  const names = () => byClass(octC, 'oct-name').map((n) => n.textContent);
  try {
    selection.selectElement(0, greeting);
    doc.flush();
    assert.deepEqual(names().slice(0, 3), ['signature: %xFF', 'signature: padding', 'signature: %x7F']);
    const big = { kind: 'message', conn: '0', dir: 's2c', offset: 64, length: 259, frames: ['61'.repeat(256)], hex: '61'.repeat(256),
      fields: [field('frame 1', 'message', 67, 256, 'a'.repeat(256))] };
    i18n.setLanguage('zh-CN');
    selection.selectElement(1, big);
    doc.flush();
    assert.deepEqual(names(), ['第 1 帧']);
    assert.ok(byClass(octC, 'oct-box').some((b) => b.textContent === '……还有 192 字节'), 'the rest of a long body, in Chinese');
    selection.selectField(0);
    doc.flush();
    assert.match(byClass(explC, 'explain-name')[0].textContent, /第 1 帧/);
    selection.selectElement(0, greeting);
    doc.flush();
    assert.deepEqual(names().slice(0, 3), ['签名：%xFF', '签名：填充', '签名：%x7F']);
    const decision = { kind: 'socket', node: 'vent', what: 'route', rule: 'round-robin', peer: 'w1', msg: 1, depth: 1, hwm: 1000, text: 'PUSH chose the pipe to w1' };
    selection.selectElement(2, decision);
    doc.flush();
    assert.equal(byClass(octC, 'octets-title')[0].textContent, '套接字决策 (vent)');
    const tree = treeC.textContent;
    for (const key of ['节点', '对端节点', '消息 ID', '队列深度']) assert.ok(tree.includes(key), `${key} in ${tree}`);
  } finally {
    i18n.setLanguage('en');
  }
});
