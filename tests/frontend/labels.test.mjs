// Info-column labels, rule colours and spec links.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { infoLabel, elementTitle } from '../../frontend/js/core/labels.js';
import { ruleColor, ruleHue, specFor, sectionSlug } from '../../frontend/js/core/rules.js';

const hex = (s) => Buffer.from(s).toString('hex');

test('info labels read like Wireshark’s Info column', () => {
  assert.equal(infoLabel(en, { kind: 'greeting', version: '3.1', mechanism: 'NULL', as_server: false }), 'Greeting 3.1 NULL');
  assert.equal(infoLabel(en, { kind: 'greeting', version: '3.0', mechanism: 'PLAIN', as_server: true }), 'Greeting 3.0 PLAIN as-server');
  assert.equal(infoLabel(en, { kind: 'greeting', version: '2.0', socket_type: 'DEALER', identity: hex('me') }), 'Greeting 2.0 DEALER Identity="me"');
  // ZMTP over WebSocket (45/ZWS): the HTTP upgrade both ways, a routing id, WebSocket control frames.
  const zws = { kind: 'greeting', version: '3.0', mechanism: 'NULL', as_server: false, transport: 'zws' };
  assert.equal(infoLabel(en, { ...zws, protocol: 'ZWS2.0/NULL', protocols: ['ZWS2.0/NULL', 'ZWS2.0'], target: '/zmq' }), 'Greeting ZWS2.0/NULL GET /zmq');
  assert.equal(infoLabel(en, { ...zws, protocol: null, protocols: ['ZWS2.0/NULL', 'ZWS2.0'], target: '/' }), 'Greeting ZWS2.0/NULL,ZWS2.0 GET /');
  assert.equal(infoLabel(en, { ...zws, protocol: 'ZWS2.0/NULL', status: 101 }), 'Greeting ZWS2.0/NULL HTTP 101');
  assert.equal(infoLabel(en, { kind: 'greeting', version: '2.0', transport: 'zws', protocol: 'ZWS2.0', identity: hex('me') }), 'Greeting ZWS2.0 Identity="me"');
  assert.equal(infoLabel(en, { kind: 'greeting', version: '2.0', transport: 'zws', protocol: 'ZWS2.0', identity: '' }), 'Greeting ZWS2.0 Identity=""');
  assert.equal(infoLabel(en, { kind: 'command', name: 'WS-CLOSE', transport: 'zws', code: 1000, reason: 'bye' }), 'WS-CLOSE code=1000 reason="bye"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'WS-PING', transport: 'zws', data: hex('hb') }), 'WS-PING data="hb"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'WS-PONG', transport: 'zws', data: '' }), 'WS-PONG');
  assert.equal(
    infoLabel(en, { kind: 'command', name: 'READY', properties: { 'Socket-Type': 'DEALER', Identity: 'client-1' } }),
    'READY Socket-Type=DEALER Identity=client-1',
  );
  assert.equal(infoLabel(en, { kind: 'command', name: 'READY', properties: { 'Socket-Type': 'ROUTER', Identity: '' } }), 'READY Socket-Type=ROUTER Identity=""');
  assert.equal(infoLabel(en, { kind: 'command', name: 'PING', ttl: 0, context: '' }), 'PING ttl=0.0s');
  assert.equal(infoLabel(en, { kind: 'command', name: 'PING', ttl: 300, context: hex('ab') }), 'PING ttl=30.0s context="ab"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'PONG', context: hex('ab') }), 'PONG context="ab"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'SUBSCRIBE', topic: hex('weather') }), 'SUBSCRIBE "weather"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'CANCEL', topic: '' }), 'CANCEL ""');
  assert.equal(infoLabel(en, { kind: 'command', name: 'ERROR', reason: 'bad socket type' }), 'ERROR reason="bad socket type"');
  assert.equal(infoLabel(en, { kind: 'command', name: 'HELLO', username: 'admin', password: 'secret' }), 'HELLO username="admin" password="secret"');
  assert.equal(infoLabel(en, { kind: 'frame', more: true, long: true, size: 256, body: '61'.repeat(256) }), `Frame MORE LONG size=256 "${'a'.repeat(24)}"…`);
  assert.equal(infoLabel(en, { kind: 'frame', more: false, long: false, size: 10, body: hex('My Message') }), 'Frame size=10 "My Message"');
  assert.equal(infoLabel(en, { kind: 'frame', size: 1000, body: '00ff', truncated: true }), 'Frame size=1000 "\\x00\\xff"…');
  assert.equal(infoLabel(en, { kind: 'message', frames: [hex('My Message')] }), 'Message [1 frame] "My Message"');
  assert.equal(infoLabel(en, { kind: 'message', frames: ['', hex('request 1')] }), 'Message [2 frames] "" "request 1"');
  assert.equal(infoLabel(en, { kind: 'expert', severity: 'warn', text: 'reserved flag bits set' }), '[warn] reserved flag bits set');
  assert.equal(infoLabel(en, { kind: 'gap', offset: 10, length: 120 }), 'Gap: 120 octets missing');
  assert.equal(elementTitle(en, { kind: 'command', name: 'READY', dir: 'c2s', offset: 64, length: 43 }), 'READY (c2s, 43 octets at 64)');
});

test('payload text in labels is escaped data, never markup', () => {
  const label = infoLabel(en, { kind: 'frame', size: 28, body: hex('<img src=x onerror=alert(1)>') });
  assert.equal(label, 'Frame size=28 "<img src=x onerror=alert"…');
  assert.equal(infoLabel(en, { kind: 'message', frames: [hex('a"b\\c\x01')] }), 'Message [1 frame] "a\\"b\\\\c\\x01"');
});

test('rule colours are stable, and every rule gets one', () => {
  assert.deepEqual(ruleColor('flags'), ruleColor('flags'));
  assert.equal(ruleColor('FLAGS').fill, ruleColor('flags').fill);
  assert.notEqual(ruleColor('flags').fill, ruleColor('mechanism').fill);
  const unknown = ruleHue('some-new-rule');
  assert.equal(unknown, ruleHue('some-new-rule'));
  assert.ok(unknown >= 0 && unknown < 360);
  assert.match(ruleColor('').fill, /^#[0-9a-f]{6}$/); // (one of the palette's, tests/frontend/palette.test.mjs)
});

test('rules link to the spec that defines them, by version and mechanism', () => {
  const f = specFor('flags');
  assert.equal(f.spec, '23');
  assert.equal(f.url, 'https://rfc.zeromq.org/spec/23/#framing');
  assert.equal(specFor('flags', { version: '3.1' }).url, 'https://rfc.zeromq.org/spec/37/#framing');
  const m = specFor('mechanism', { version: '3.0' });
  assert.equal(m.definition, 'mechanism = 20mechanism-char');
  assert.equal(m.url, 'https://rfc.zeromq.org/spec/23/#formal-grammar');
  const ping = specFor('ping-ttl');
  assert.equal(ping.spec, '37');
  assert.equal(ping.section, 'Connection Heartbeating');
  assert.equal(specFor('username', { mechanism: 'PLAIN' }).spec, '24');
  assert.equal(specFor('hello-nonce', { mechanism: 'CURVE' }).spec, '26');
  assert.equal(specFor('signature', { version: '2.0' }).spec, '15');
  assert.equal(specFor('idflags', { version: '1.0' }).spec, '13');
  assert.equal(specFor('socket-type').section, 'The Socket-Type Property');
  const unknown = specFor('not-a-rule');
  assert.deepEqual([unknown.spec, unknown.definition, unknown.url], ['23', null, 'https://rfc.zeromq.org/spec/23/']);
  assert.equal(sectionSlug('The Socket-Type Property'), 'the-socket-type-property');
});

test('what a CURVE box held says it was decrypted', () => {
  assert.equal(infoLabel(en, { kind: 'message', frames: ['6869'], decrypted: true }), 'Message [1 frame] "hi" (decrypted)');
  assert.equal(infoLabel(en, { kind: 'message', frames: ['6869'] }), 'Message [1 frame] "hi"');
});
