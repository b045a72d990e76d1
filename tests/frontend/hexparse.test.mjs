// Pasted hex: plain hex and Wireshark's Follow TCP Stream hex dump.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { parseHexInput, parsePlainHex, isFollowStream, interleaveBySegments } from '../../frontend/js/core/hexparse.js';
import { buildChunks, toFollowText } from '../../frontend/js/core/hexdump.js';
import { bytesToHex } from '../../frontend/js/core/bytes.js';

test('plain hex with spaces, newlines, colons, commas and 0x prefixes', () => {
  for (const text of ['ff 00 00 7f', 'ff:00:00:7f', 'FF00\n007F', '0xff, 0x00, 0x00, 0x7f', '  ff00 007f  \n']) {
    const r = parseHexInput(en, text);
    assert.equal(r.format, 'plain', text);
    assert.equal(r.directions.length, 1);
    assert.equal(r.directions[0].dir, 'c2s');
    assert.equal(r.directions[0].hex, 'ff00007f', text);
  }
});

test('plain hex errors name the problem', () => {
  assert.throws(() => parsePlainHex(en, 'ff 0'), /odd number of hex digits/);
  assert.throws(() => parsePlainHex(en, 'ff\nzz'), /line 2, column 1: "z" is not a hex digit/);
  assert.throws(() => parseHexInput(en, '   '), /nothing to decode/);
});

// As Wireshark's Follow TCP Stream "Hex Dump" shows a 3.1 NULL greeting from each side,
// the server's lines indented. The ASCII column holds characters that look like hex.
const WIRESHARK = `00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ........ ....NULL
00000010  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
00000030  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
    00000000  ff 00 00 00 00 00 00 00  01 7f 03 01 4e 55 4c 4c   ........ ....NULL
    00000010  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
    00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
    00000030  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   ........ ........
00000040  04 1a 05 52 45 41 44 59  0b 53 6f 63 6b 65 74 2d   ...READY .Socket-
00000050  54 79 70 65 00 00 00 04  50 55 4c 4c               Type.... PULL
    00000040  00 02 ab cd                                        ..ab cd
`;

test('a Follow TCP Stream hex dump gives both directions and their order', () => {
  assert.ok(isFollowStream(WIRESHARK));
  const r = parseHexInput(en, WIRESHARK);
  assert.equal(r.format, 'follow');
  const [c2s, s2c] = r.directions;
  assert.equal(c2s.dir, 'c2s');
  assert.equal(c2s.bytes.length, 64 + 28);
  assert.equal(c2s.hex.slice(0, 24), 'ff00000000000000017f0301');
  assert.equal(c2s.hex.slice(128), '041a0552454144590b536f636b65742d547970650000000450554c4c');
  assert.equal(s2c.dir, 's2c');
  // The ASCII column "..ab cd" is not read as two more octets.
  assert.equal(s2c.bytes.length, 64 + 4);
  assert.equal(s2c.hex.slice(128), '0002abcd');
  assert.deepEqual(r.segments, [
    { dir: 'c2s', start: 0, end: 64 },
    { dir: 's2c', start: 0, end: 64 },
    { dir: 'c2s', start: 64, end: 92 },
    { dir: 's2c', start: 64, end: 68 },
  ]);
  assert.deepEqual(r.warnings, []);
});

test("tshark's follow output: header lines skipped, tab-indented second direction", () => {
  const text = [
    '===================================================================',
    'Follow: tcp,hex',
    'Filter: tcp.stream eq 0',
    'Node 0: 127.0.0.1:44764',
    'Node 1: 127.0.0.1:15558',
    '00000000  ff 00 00 00 00 00 00 00  09 7f                    ..........',
    '\t00000000  ff 00 00 00 00 00 00 00  01 7f                    ..........',
    '0000000A  03                                                .',
    '===================================================================',
  ].join('\n');
  const r = parseHexInput(en, text);
  assert.equal(r.format, 'follow');
  assert.equal(r.directions[0].hex, 'ff000000000000000' + '97f03');
  assert.equal(r.directions[1].hex, 'ff00000000000000017f');
  assert.deepEqual(r.warnings, []);
});

test('offsets that do not follow on are reported; repeated lines are dropped', () => {
  const text = '00000000  01 02\n00000000  01 02\n00000004  03\n';
  const r = parseHexInput(en, text);
  assert.equal(r.directions[0].hex, '010203');
  assert.equal(r.warnings.length, 2);
  assert.match(r.warnings[0], /offset 00000000 but 2 c2s octets so far/);
});

test('a dump written by the hex view parses back to the same bytes', () => {
  const greeting = 'ff00000000000000017f03014e554c4c' + '00'.repeat(48);
  const events = [
    { dir: 'c2s', kind: 'greeting', offset: 0, length: 64, hex: greeting },
    { dir: 's2c', kind: 'greeting', offset: 0, length: 64, hex: greeting },
    { dir: 's2c', kind: 'frame', offset: 64, length: 12, hex: '000a4d79204d657373616765' },
    { dir: 'c2s', kind: 'frame', offset: 64, length: 3, hex: '000141' },
  ];
  const chunks = buildChunks(events.map((event, index) => ({ index, event })));
  const r = parseHexInput(en, toFollowText(chunks));
  assert.equal(r.format, 'follow');
  assert.equal(bytesToHex(r.directions[0].bytes), greeting + '000141');
  assert.equal(bytesToHex(r.directions[1].bytes), greeting + '000a4d79204d657373616765');
});

test('decoded events of two directions are interleaved as the paste spoke', () => {
  const r = parseHexInput(en, WIRESHARK);
  const ev = (dir, offset, kind) => ({ dir, offset, kind });
  const ordered = interleaveBySegments(
    {
      c2s: [ev('c2s', 0, 'greeting'), ev('c2s', 64, 'command')],
      s2c: [ev('s2c', 0, 'greeting'), ev('s2c', 64, 'frame'), ev('s2c', 66, 'expert')],
    },
    r.segments,
  );
  assert.deepEqual(
    ordered.map((e) => `${e.dir}@${e.offset}`),
    ['c2s@0', 's2c@0', 'c2s@64', 's2c@64', 's2c@66'],
  );
});

// ---- dumps made by the real tools (tests/frontend/data/dumps/README.md) ----------------------------------
import { readFileSync } from 'node:fs';
import { dumpKind, tcpSegment } from '../../frontend/js/core/hexparse.js';

const DUMPS = new URL('./data/dumps/', import.meta.url);
const dump = (name) => readFileSync(new URL(name, DUMPS), 'utf8');
const wire = (name) => dump(name).replace(/\s+/g, '');

test('xxd output: offsets, 2-octet groups and the ASCII column left out', () => {
  const text = dump('dealer_router.c2s.xxd');
  assert.equal(dumpKind(text), 'xxd');
  const r = parseHexInput(en, text);
  assert.equal(r.format, 'dump');
  assert.equal(r.label, 'xxd dump');
  assert.equal(r.directions[0].hex, wire('dealer_router.c2s.hex'));
  assert.deepEqual(r.warnings, []);
});

test('hexdump -C output: `*` lines stand for the repeated line, the last offset is the length', () => {
  const text = dump('dealer_router.c2s.hexdump');
  assert.ok(text.split('\n').includes('*'));
  const r = parseHexInput(en, text);
  assert.equal(r.format, 'dump');
  assert.equal(r.label, 'hexdump -C dump');
  assert.equal(r.directions[0].hex, wire('dealer_router.c2s.hex'));
  assert.deepEqual(r.warnings, []);
});

test("tshark -x (Wireshark's Copy as Hex Dump): each packet's TCP payload, both directions in order", () => {
  const text = dump('dealer_router.tshark-x.txt');
  assert.equal(dumpKind(text), 'packets');
  const r = parseHexInput(en, text);
  assert.equal(r.format, 'packets');
  const byDir = Object.fromEntries(r.directions.map((d) => [d.dir, d.hex]));
  assert.equal(byDir.c2s, wire('dealer_router.c2s.hex'));
  assert.equal(byDir.s2c, wire('dealer_router.s2c.hex'));
  // The ROUTER (server) speaks first: its signature's 10 octets, then the DEALER's.
  assert.deepEqual(r.segments.slice(0, 2), [{ dir: 's2c', start: 0, end: 10 }, { dir: 'c2s', start: 0, end: 10 }]);
  assert.deepEqual(r.warnings, []);
});

test('packet dumps: a retransmission is taken once, padding and labelled reassembly blocks left out', () => {
  const blocks = dump('dealer_router.tshark-x.txt').trim().split(/\n\s*\n/);
  // Packet 4 again (a retransmission), with Wireshark's "Frame (n bytes):" labels and a reassembly block.
  const labelled = [...blocks.slice(0, 5), blocks[3], ...blocks.slice(5)].map((b) => `Frame (1 bytes):\n${b}`);
  labelled.splice(2, 0, 'Reassembled TCP (2 bytes):\n0000  ff 00                                             ..');
  const r = parseHexInput(en, labelled.join('\n\n'));
  const byDir = Object.fromEntries(r.directions.map((d) => [d.dir, d.hex]));
  assert.equal(byDir.c2s, wire('dealer_router.c2s.hex'));
  assert.equal(byDir.s2c, wire('dealer_router.s2c.hex'));
  assert.equal(r.warnings.length, 2, r.warnings.join('; '));
  assert.match(r.warnings[0], /left out 1 "Reassembled TCP" block/);
  assert.match(r.warnings[1], /packet 6: a retransmission, left out/);
});

test('tcpSegment reads Ethernet and raw IPv4 packets, and refuses what is not TCP', () => {
  const first = dump('dealer_router.tshark-x.txt').trim().split(/\n\s*\n/)[0];
  const bytes = parseOffsetDumpBytes(first);
  const seg = tcpSegment(bytes);
  assert.equal(seg.src.split(':')[0], '127.0.0.1');
  assert.ok(seg.syn && !seg.ack);
  assert.equal(seg.payload.length, 0);
  assert.deepEqual(tcpSegment(bytes.slice(14)), { ...seg }); // the same packet without its Ethernet header
  assert.equal(tcpSegment(Uint8Array.from([0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f])), null);
  const udp = bytes.slice(14);
  udp[9] = 17;
  assert.equal(tcpSegment(udp), null);
});

/** The octets of one tshark -x block, read without the module under test. */
function parseOffsetDumpBytes(text) {
  const hex = text.split('\n').map((l) => (/^[0-9a-f]{4}  ((?:[0-9a-f]{2} )+)/.exec(l) || ['', ''])[1]).join('');
  return Uint8Array.from(Buffer.from(hex.replace(/\s/g, ''), 'hex'));
}

test('a dump that is not a packet, with the ASCII column looking like hex, keeps its own octets', () => {
  // xxd of 64 greeting octets and "cafecafecafecafe": the ASCII column of the last line is hex digits.
  const text = [
    '00000000: ff00 0000 0000 0000 017f 0301 4e55 4c4c  ............NULL',
    '00000010: 0000 0000 0000 0000 0000 0000 0000 0000  ................',
    '00000020: 0000 0000 0000 0000 0000 0000 0000 0000  ................',
    '00000030: 0000 0000 0000 0000 0000 0000 0000 0000  ................',
    '00000040: 6361 6665 6361 6665 6361 6665 6361 6665  cafecafecafecafe',
  ].join('\n');
  const r = parseHexInput(en, text);
  assert.equal(r.directions[0].bytes.length, 80);
  assert.equal(r.directions[0].hex.slice(128), '63616665'.repeat(4));
});
