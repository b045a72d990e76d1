// The octet-table layout against 23/ZMTP's worked example.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { layoutOctets, rangeLabel, literalText, fieldAt } from '../../frontend/js/core/octets.js';

// The DEALER client's READY from the worked example, as fields (offsets absolute:
// the command sits at stream offset 64, after the 64-octet greeting).
const BASE = 64;
const READY_HEX =
  '0429' + '05' + '5245414459' + '0b' + '536f636b65742d54797065' + '00000006' + '4445414c4552' + '08' + '4964656e74697479' + '00000000';
const F = (name, rule, off, length, value) => ({ name, rule, offset: BASE + off, length, value, note: '' });
const READY = {
  conn: '0',
  dir: 'c2s',
  kind: 'command',
  name: 'READY',
  offset: BASE,
  length: 43,
  hex: READY_HEX,
  fields: [
    F('flags', 'flags', 0, 1, '0x04 (COMMAND)'),
    F('size', 'short-size', 1, 1, 41),
    F('name-size', 'command-name', 2, 1, 5),
    F('command-name', 'command-name', 3, 5, 'READY'),
    F('name-size', 'name', 8, 1, 11),
    F('property-name', 'name', 9, 11, 'Socket-Type'),
    F('value-size', 'value', 20, 4, 6),
    F('property-value', 'value', 24, 6, 'DEALER'),
    F('name-size', 'name', 30, 1, 8),
    F('property-name', 'name', 31, 8, 'Identity'),
    F('value-size', 'value', 39, 4, 0),
    F('property-value', 'value', 43, 0, ''),
  ],
};

const rows = (layout) => layout.rows.map((r) => r.boxes.map((b) => [b.text, b.label]));

test('the READY command: the spec worked example, octet by octet', () => {
  const layout = layoutOctets(en, READY, { expand: true });
  // Exactly the spec's boxes and offset labels, row by row
  // (the spec writes the name-size octet as %x05 there and as 11 and 8 below: we write all three as numbers).
  const chars = (s, from) => [...s].map((c, i) => [c, String(from + i)]);
  assert.deepEqual(rows(layout), [
    [['%x04', '0'], ['41', '1']],
    [['5', '2'], ...chars('READY', 3)],
    [['11', '8'], ...chars('Socket-Type', 9)],
    [['%x00', '20'], ['%x00', '21'], ['%x00', '22'], ['%x06', '23'], ...chars('DEALER', 24)],
    [['8', '30'], ...chars('Identity', 31)],
    [['%x00', '39'], ['%x00', '40'], ['%x00', '41'], ['%x00', '42'], ['""', '']],
  ]);
  // The empty value is one dashed box with no offset, as the spec's caption: Property value "".
  const last = layout.rows[5].boxes[4];
  assert.equal(last.empty, true);
  assert.equal(last.length, 0);
  // Captions: one per field, spanning its octets (the spec's 'Command name "READY"').
  assert.deepEqual(
    layout.rows[1].groups.map((g) => [g.name, g.count]),
    [['name-size', 1], ['command-name', 5]],
  );
});

test('the READY command: one box per field, ranges as the spec writes them', () => {
  const layout = layoutOctets(en, READY);
  assert.deepEqual(rows(layout), [
    [['%x04', '0'], ['41', '1']],
    [['5', '2'], ['"READY"', '3 - 7']],
    [['11', '8'], ['"Socket-Type"', '9 - 19']],
    [['6', '20 - 23'], ['"DEALER"', '24 - 29']],
    [['8', '30'], ['"Identity"', '31 - 38']],
    [['0', '39 - 42'], ['""', '']],
  ]);
  const flags = layout.rows[0].boxes[0];
  assert.equal(flags.bytesText, 'COMMAND', 'the meaning the backend spells out goes under the literal');
  assert.equal(layout.rows[3].boxes[0].bytesText, '00 00 00 06', 'a multi-octet number shows its octets');
  assert.deepEqual(
    layout.rows.flatMap((r) => r.boxes.map((b) => b.field)),
    READY.fields.map((_, i) => i),
  );
});

test('the greeting: the spec drawing of signature, padding, version, mechanism, filler', () => {
  const hex = 'ff' + '00'.repeat(8) + '7f' + '03' + '00' + '4e554c4c' + '00'.repeat(16) + '00' + '00'.repeat(31);
  const g = (name, rule, offset, length, value) => ({ name, rule, offset, length, value, note: '' });
  const ev = {
    dir: 'c2s',
    kind: 'greeting',
    offset: 0,
    length: 64,
    hex,
    fields: [
      g('signature', 'signature', 0, 1, '0xff'),
      g('padding', 'padding', 1, 8, '0000000000000000'),
      g('signature-end', 'signature', 9, 1, '0x7f'),
      g('version-major', 'version-major', 10, 1, 3),
      g('version-minor', 'version-minor', 11, 1, 0),
      g('mechanism', 'mechanism', 12, 20, 'NULL'),
      g('as-server', 'as-server', 32, 1, 0),
      g('filler', 'filler', 33, 31, '00'.repeat(31)),
    ],
  };
  const boxes = layoutOctets(en, ev, { maxRowChars: 200 }).rows.flatMap((r) => r.boxes.map((b) => [b.text, b.label]));
  assert.deepEqual(boxes, [
    ['%xFF', '0'],
    ['%x00...%x00', '1 - 8'],
    ['%x7F', '9'],
    ['%x03', '10'],
    ['%x00', '11'],
    ['"NULL"', '12 - 31'],
    ['%x00', '32'],
    ['%x00...%x00', '33 - 63'],
  ]);
});

test('a 1 MiB body: the first octets, then "… N more octets"', () => {
  const size = 1024 * 1024;
  const bodyHex = Array.from({ length: 300 }, (_, i) => (i % 256).toString(16).padStart(2, '0')).join('');
  const ev = {
    dir: 's2c',
    kind: 'frame',
    offset: 100,
    length: 9 + size,
    hex: '02' + '0000000000100000' + bodyHex, // the backend cut the body (truncated)
    truncated: true,
    fields: [
      { name: 'flags', rule: 'flags', offset: 100, length: 1, value: '0x02 (LONG)' },
      { name: 'size', rule: 'long-size', offset: 101, length: 8, value: size },
      { name: 'body', rule: 'message-body', offset: 109, length: size, value: bodyHex },
    ],
  };
  const layout = layoutOctets(en, ev, { maxShownOctets: 64, maxBoxChars: 24 });
  const body = layout.rows.flatMap((r) => r.boxes).filter((b) => b.field === 2);
  // 8 octets per hex box (24 characters), 64 octets shown, then the rest in one box.
  assert.equal(body.length, 9);
  assert.equal(body[0].text, '00 01 02 03 04 05 06 07');
  assert.equal(body[0].label, '9 - 16');
  assert.equal(body[7].label, '65 - 72');
  const more = body[8];
  assert.equal(more.more, true);
  assert.equal(more.text, `… ${(size - 64).toLocaleString('en-US')} more octets`);
  assert.equal(more.label, `73 - ${9 + size - 1}`);
  assert.equal(layout.rows.flatMap((r) => r.boxes)[1].text, String(size));
  // Every row stays within the width asked for.
  for (const r of layout.rows) assert.ok(r.boxes.length <= 4, 'long values wrap onto further rows');
});

test('a text body longer than a box wraps as quoted text chunks', () => {
  const text = 'a'.repeat(256);
  const hex = '02' + '0000000000000100' + '61'.repeat(256);
  const ev = {
    dir: 's2c',
    kind: 'frame',
    offset: 0,
    length: 265,
    hex,
    fields: [
      { name: 'flags', rule: 'flags', offset: 0, length: 1, value: '0x02 (LONG)' },
      { name: 'size', rule: 'long-size', offset: 1, length: 8, value: 256 },
      { name: 'body', rule: 'message-body', offset: 9, length: 256, value: text },
    ],
  };
  const body = layoutOctets(en, ev, { maxShownOctets: 44, maxBoxChars: 24 })
    .rows.flatMap((r) => r.boxes)
    .filter((b) => b.field === 2);
  assert.deepEqual(
    body.map((b) => [b.text, b.label]),
    [
      [`"${'a'.repeat(22)}"`, '9 - 30'],
      [`"${'a'.repeat(22)}"`, '31 - 52'],
      ['… 212 more octets', '53 - 264'],
    ],
  );
});

test('a hostile body is laid out as characters, not markup', () => {
  const payload = '<img src=x onerror=alert(1)>';
  const hex = '00' + payload.length.toString(16).padStart(2, '0') + Buffer.from(payload).toString('hex');
  const ev = {
    dir: 's2c',
    kind: 'frame',
    offset: 0,
    length: 2 + payload.length,
    hex,
    fields: [
      { name: 'flags', rule: 'flags', offset: 0, length: 1, value: '0x00 (none)' },
      { name: 'size', rule: 'short-size', offset: 1, length: 1, value: payload.length },
      { name: 'body', rule: 'message-body', offset: 2, length: payload.length, value: payload },
    ],
  };
  const text = layoutOctets(en, ev, { maxBoxChars: 40 }).rows.flatMap((r) => r.boxes.map((b) => b.text)).join('');
  assert.ok(text.includes(payload));
});

test('bytes the backend did not send: the value is shown instead', () => {
  const ev = {
    dir: 'c2s',
    kind: 'frame',
    offset: 0,
    length: 12,
    fields: [{ name: 'body', rule: 'message-body', offset: 2, length: 10, value: 'My Message' }],
  };
  const [box] = layoutOctets(en, ev).rows[0].boxes;
  assert.equal(box.text, 'My Message');
  assert.equal(box.label, '2 - 11');
});

test('an element with raw octets and no fields gets one "octets" field', () => {
  const layout = layoutOctets(en, { dir: 'c2s', kind: 'frame', offset: 5, length: 3, hex: '000100' });
  assert.deepEqual(rows(layout), [[['00 01 00', '0 - 2']]]);
});

test('helpers: range labels, literals, the field under an offset', () => {
  assert.equal(rangeLabel(0, 1), '0');
  assert.equal(rangeLabel(1, 8), '1 - 8');
  assert.equal(rangeLabel(43, 0), '');
  assert.equal(literalText([0xff]), '%xFF');
  assert.equal(literalText([0, 0, 0, 6]), '%x00 %x00 %x00 %x06');
  assert.equal(literalText([0, 0, 0, 0, 0, 0, 0, 1]), '%x00...%x01');
  assert.equal(fieldAt(READY, BASE + 25), 7);
  assert.equal(fieldAt(READY, BASE), 0);
  assert.equal(fieldAt(READY, BASE + 99), -1);
});

test('a client\'s WebSocket frame (ZWS): the boxes show its octets unmasked, as its fields describe them', () => {
  // From captures/zws_dealer_router.pcapng: our DEALER's "request" frame, masked with the key da f1 23 b0.
  const F = (name, rule, offset, length, value) => ({ name, rule, offset, length, value, note: '' });
  const frame = {
    kind: 'frame', offset: 265, length: 14, transport: 'zws',
    hex: '8288daf123b0da8346c1af9450c4', unmasked: '8288daf123b00072657175657374', body: '72657175657374',
    fields: [
      F('fin-opcode', 'frame-opcode', 265, 1, '0x82 (FIN, binary)'),
      F('mask-length', 'frame-payload-length', 266, 1, '0x88 (MASK, 8)'),
      F('masking-key', 'frame-masking-key', 267, 4, 'daf123b0'),
      F('flags', 'flags', 271, 1, '0x00 (final)'),
      F('body', 'message-body', 272, 7, 'request'),
    ],
  };
  const texts = layoutOctets(en, frame).rows.flatMap((r) => r.boxes.map((b) => b.text));
  assert.ok(texts.includes('"request"'), texts.join(' | '));
  assert.ok(texts.includes('%x00'), texts.join(' | '));
  // Without `unmasked` (a server's frame, never masked) the octets are `hex` itself.
  const { unmasked, ...wire } = frame;
  assert.ok(unmasked);
  assert.ok(!layoutOctets(en, wire).rows.flatMap((r) => r.boxes.map((b) => b.text)).includes('"request"'));
});
