// The page's ZWS 2.0 peer (core/zws.js): its payloads byte for byte against 45/ZWS and 23/ZMTP and against
// the lab's Python engine, and whole conversations over a real WebSocket with the engine's own ws:// peer
// (`zmtplab peer ... ws://... --bind`): PULL, SUB with a topic, DEALER to a ROUTER, REQ to a REP, the
// ZMTP/2-like routing ids, and the peer's mistakes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import {
  ZwsSocket, readyFor, text as utf8Text, readFrame, subscription, zwsFrame, errorFrame, frameEvent, FLAG_MORE, offer,
} from '../../frontend/js/core/zws.js';
import { bytesToHex } from '../../frontend/js/core/bytes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON = `${ROOT}.venv/bin/python`;

// What the Python engine writes for the same things (its command encoders and the ZWS flag octet), made in
// one run of the engine.
const ENGINE = {
  dealer: "b'\\x02' + ready_body({'Socket-Type': b'DEALER', 'Identity': b'client-1'})",
  req: "b'\\x02' + ready_body({'Socket-Type': b'REQ', 'Identity': b''})",
  sub: "b'\\x02' + ready_body({'Socket-Type': b'SUB'})",
  router: "b'\\x02' + ready_body({'Socket-Type': b'ROUTER', 'Identity': b''})",
  rep: "b'\\x02' + ready_body({'Socket-Type': b'REP', 'Identity': b''})",
  error: "b'\\x02' + error_body('Invalid socket type')",
};
const engine = (() => {
  const code = ['import json', 'from zmtplab.engine.commands import ready_body, error_body',
    `print(json.dumps({${Object.entries(ENGINE).map(([k, v]) => `'${k}': (${v}).hex()`).join(', ')}}))`].join('\n');
  const out = spawnSync(PYTHON, ['-c', code], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout);
})();

test('READY, messages, subscriptions and ERROR are the octets of 45/ZWS and 23/ZMTP', () => {
  // %x02 COMMAND, name-size 5 "READY", property "Socket-Type" (11) = "PULL" (4): no Identity for a PULL.
  assert.equal(bytesToHex(readyFor('PULL')), '02' + '05' + '5245414459' + '0b' + bytesToHex(Buffer.from('Socket-Type')) + '00000004' + bytesToHex(Buffer.from('PULL')));
  assert.equal(bytesToHex(zwsFrame('hi', FLAG_MORE)), '016869');
  assert.equal(bytesToHex(zwsFrame('')), '00');
  assert.equal(bytesToHex(subscription('news')), '00016e657773');
  assert.equal(bytesToHex(subscription('news', false)), '00006e657773');
  assert.deepEqual(offer(), ['ZWS2.0'], 'what a browser can offer');
  assert.deepEqual(offer('NULL'), ['ZWS2.0/NULL', 'ZWS2.0'], "libzmq's own offer for NULL");
  assert.throws(() => new WebSocket('ws://127.0.0.1:9/', ['ZWS2.0/NULL']), SyntaxError,
    'a WebSocket API that keeps to RFC 6455 (as browsers do) refuses a subprotocol with a "/"');
});

test("the page's commands equal the Python engine's, byte for byte", () => {
  assert.equal(bytesToHex(readyFor('DEALER', 'client-1')),
    engine.dealer);
  assert.equal(bytesToHex(readyFor('REQ')), engine.req);
  assert.equal(bytesToHex(readyFor('SUB')), engine.sub);
  assert.equal(bytesToHex(errorFrame('Invalid socket type')), engine.error);
});

test("a READY as the lab's engine sent it in a capture reads to its properties and fields", () => {
  // The ROUTER's READY of captures/zws_dealer_router.pcapng, its WebSocket header taken off.
  const payload = Buffer.from('020552454144590b536f636b65742d5479706500000006524f55544552084964656e7469747900000000', 'hex');
  const read = readFrame(payload);
  assert.equal(read.command, true);
  assert.equal(read.name, 'READY');
  assert.deepEqual(read.properties, { 'Socket-Type': 'ROUTER', Identity: '' });
  const ev = frameEvent(payload, read, 's2c', 100);
  assert.equal(ev.kind, 'command');
  assert.deepEqual(ev.fields.map((f) => [f.name, f.offset, f.length]), [
    ['flags', 100, 1], ['name-size', 101, 1], ['command-name', 102, 5],
    ['name-size', 107, 1], ['property-name', 108, 11], ['value-size', 119, 4], ['property-value', 123, 6],
    ['name-size', 129, 1], ['property-name', 130, 8], ['value-size', 138, 4], ['property-value', 142, 0],
  ]);
  const frame = frameEvent(Buffer.from('0168656c6c6f', 'hex'), readFrame(Buffer.from('0168656c6c6f', 'hex')), 'c2s', 0);
  assert.deepEqual([frame.kind, frame.more, frame.size, frame.body, frame.fields[0].value], ['frame', true, 5, '68656c6c6f', '0x01 (MORE)']);
});

test('bad payloads are named, never read on', () => {
  assert.throws(() => readFrame(new Uint8Array(0)), (e) => e.rule === 'flags');
  assert.throws(() => readFrame(Uint8Array.of(0x04, 1)), (e) => e.rule === 'flags');
  assert.throws(() => readFrame(Uint8Array.of(0x02, 9, 0x52)), (e) => e.rule === 'command-name');
  // A property whose value size runs past the command (a 2^32-1 size).
  assert.throws(() => readFrame(Buffer.from('020552454144590141ffffffff', 'hex')), (e) => e.rule === 'metadata');
});

/** A binary WebSocket the page would have: `ws`'s, with the browser's arraybuffer messages. */
class PageWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.binaryType = 'arraybuffer';
  }
}

/** The engine's ws:// peer, bound on a free port; resolves its endpoint once it listens. */
function enginePeer(args) {
  const child = spawn(PYTHON, ['-m', 'zmtplab.cli', 'peer', ...args, '--jsonl', '--no-fields', '--timeout', '60'], { cwd: ROOT });
  const events = [];
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const listening = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const ev = JSON.parse(line);
      events.push(ev);
      if (ev.kind === 'peer' && ev.what === 'listening') resolve(ev.endpoint);
    });
    exited.then((code) => reject(new Error(`the peer exited ${code}: ${stderr}`)));
  });
  return { listening, exited, events, child, stderr: () => stderr };
}

/** Runs a page socket against the engine's peer until `until(got)` holds; resolves what the page saw. */
function converse(options, until = () => false) {
  return new Promise((resolve) => {
    const got = { events: [], messages: [], ready: null, closed: null };
    const socket = new ZwsSocket({
      WebSocket: PageWebSocket,
      ...options,
      onEvent: (ev) => got.events.push(ev),
      onReady: (peer) => { got.ready = peer; if (options.afterReady) options.afterReady(socket); },
      onMessage: (frames) => {
        got.messages.push(frames.map(utf8Text));
        if (options.onMessage) options.onMessage(socket, frames);
        if (until(got)) socket.close();
      },
      onClose: (c) => { got.closed = c; resolve(got); },
    });
    got.socket = socket;
  });
}

function wire(events, kind, dir) {
  return events.filter((e) => e.kind === kind && (!dir || e.dir === dir));
}

test('a PULL page takes the PUSH of the engine over a real WebSocket, its routing id read by the engine as sent', async () => {
  const peer = enginePeer(['PUSH', 'ws://127.0.0.1:0/zmq', '--bind', '--send', 'hello', '--send', 'two,frames']);
  const url = await peer.listening;
  const got = await converse({ url, type: 'PULL', identity: 'pupil' }, (g) => g.messages.length === 2);
  assert.equal(await peer.exited, 0, peer.stderr());
  assert.deepEqual(got.messages, [['hello'], ['two', 'frames']]);
  assert.deepEqual(got.ready, { protocol: 'ZWS2.0', socketType: null, identity: '' });
  const engineSaw = peer.events.filter((e) => e.kind === 'greeting' && e.identity !== undefined).map((e) => e.identity);
  assert.ok(engineSaw.includes(bytesToHex(Buffer.from('pupil'))), JSON.stringify(peer.events.filter((e) => e.kind === 'greeting')));
  // Each frame of the page's view is one payload: flags then body, offsets counted over the payloads.
  const frames = wire(got.events, 'frame', 's2c');
  assert.deepEqual(frames.map((f) => [f.more, f.body]), [[false, '68656c6c6f'], [true, '74776f'], [false, '6672616d6573']]);
  assert.equal(frames[1].offset, frames[0].offset + frames[0].length);
  assert.deepEqual(wire(got.events, 'message', 's2c').map((m) => m.frames.length), [1, 2]);
});

test('with NULL the page sends its READY and checks the READY that comes back (23/ZMTP socket pairs)', () => {
  class Server {
    constructor(url, protocols) { this.protocols = protocols; this.protocol = protocols[0]; this.sent = []; Server.last = this; }
    send(p) { this.sent.push(bytesToHex(p)); }
    close() {}
  }
  const ready = [];
  const s = new ZwsSocket({ WebSocket: Server, url: 'ws://x/', type: 'DEALER', identity: 'client-1', mechanism: 'NULL', onReady: (p) => ready.push(p) });
  s.send(['', 'early']);
  const server = Server.last;
  assert.deepEqual(server.protocols, ['ZWS2.0/NULL', 'ZWS2.0']);
  server.onopen();
  assert.deepEqual(server.sent, [engine.dealer]);
  server.onmessage({ data: Buffer.from(engine.router, 'hex') });
  assert.deepEqual(ready, [{ protocol: 'ZWS2.0/NULL', socketType: 'ROUTER', identity: '' }]);
  assert.deepEqual(server.sent.slice(1), ['01', '00' + bytesToHex(Buffer.from('early'))], 'what waited goes out after the handshake');
});

test('a SUB page subscribes to its topic and receives only that', async () => {
  const peer = enginePeer(['PUB', 'ws://127.0.0.1:0/zmq', '--bind', '--send', 'news.1', '--send', 'news.2']);
  const url = await peer.listening;
  const got = await converse({ url, type: 'SUB', subscribe: ['news'] }, (g) => g.messages.length === 2);
  assert.equal(await peer.exited, 0, peer.stderr());
  assert.deepEqual(got.messages, [['news.1'], ['news.2']]);
  const sent = wire(got.events, 'frame', 'c2s');
  assert.deepEqual(sent.map((f) => f.body), ['016e657773'], 'the subscription: %x01 then the topic');
  const engineSaw = peer.events.filter((e) => e.kind === 'message' && e.dir !== 's2c' && (e.frames || [])[0] === '016e657773');
  assert.ok(engineSaw.length || peer.events.some((e) => e.kind === 'peer' && JSON.stringify(e).includes('news')), JSON.stringify(peer.events));
});

test('a SUB page drops what does not match its topic, as a libzmq SUB filters on its side too', async () => {
  const events = [];
  const messages = [];
  class Server {
    constructor(url, protocols) { this.protocols = protocols; this.protocol = protocols[0]; Server.last = this; }
    send() {}
    close() {}
  }
  new ZwsSocket({ WebSocket: Server, url: 'ws://x/', type: 'SUB', subscribe: ['a'], mechanism: 'NULL', onEvent: (e) => events.push(e), onMessage: (f) => messages.push(f.map(utf8Text)) });
  const s = Server.last;
  s.onopen();
  s.onmessage({ data: readyFor('DEALER').buffer.slice(0) });
  s.onmessage({ data: Uint8Array.from(zwsFrame('PUB')).buffer }); // (not a READY: a frame before the handshake)
  assert.equal(events.at(-1).kind, 'expert', 'a DEALER is no peer of a SUB: the handshake fails');
  new ZwsSocket({ WebSocket: Server, url: 'ws://x/', type: 'SUB', subscribe: ['a'], mechanism: 'NULL', onEvent: (e) => events.push(e), onMessage: (f) => messages.push(f.map(utf8Text)) });
  Server.last.onopen();
  const pubReady = Buffer.from(bytesToHex(readyFor('SUB')).replace(bytesToHex(Buffer.from('SUB')), bytesToHex(Buffer.from('PUB'))), 'hex');
  Server.last.onmessage({ data: pubReady });
  Server.last.onmessage({ data: zwsFrame('b-topic') });
  Server.last.onmessage({ data: zwsFrame('a-topic') });
  assert.deepEqual(messages, [['a-topic']]);
  assert.equal(events.filter((e) => e.kind === 'message' && e.filtered).length, 1);
});

test('a DEALER page gets the ROUTER\'s routed reply; a REQ page its REP\'s, the delimiter taken off', async () => {
  const router = enginePeer(['ROUTER', 'ws://127.0.0.1:0/zmq', '--bind', '--recv', '1', '--send', 'student-7,,reply']);
  const dealer = await converse({
    url: await router.listening, type: 'DEALER', identity: 'student-7',
    afterReady: (s) => s.send(['', 'request']),
  }, (g) => g.messages.length === 1);
  assert.equal(await router.exited, 0, router.stderr());
  assert.deepEqual(dealer.messages, [['', 'reply']]);
  const routed = router.events.find((e) => e.kind === 'peer' && e.what === 'recv');
  assert.ok(JSON.stringify(routed).includes(bytesToHex(Buffer.from('student-7'))) || JSON.stringify(routed).includes('student-7'), JSON.stringify(routed));

  const rep = enginePeer(['REP', 'ws://127.0.0.1:0/zmq', '--bind', '--recv', '1', '--send', 'world']);
  const req = await converse({ url: await rep.listening, type: 'REQ', afterReady: (s) => s.send(['hello']) }, (g) => g.messages.length === 1);
  assert.equal(await rep.exited, 0, rep.stderr());
  assert.deepEqual(req.messages, [['world']]);
  assert.deepEqual(wire(req.events, 'message', 'c2s')[0].frames, ['', '68656c6c6f'], 'the delimiter went on the wire');
});

test('with ZWS2.0 alone each side sends its routing id first, then messages', async () => {
  const peer = enginePeer(['PUSH', 'ws://127.0.0.1:0/zmq', '--bind', '--zws-protocol', 'ZWS2.0', '--send', 'id-less']);
  const got = await converse({ url: await peer.listening, type: 'PULL', mechanism: 'none', identity: 'me' }, (g) => g.messages.length === 1);
  assert.equal(await peer.exited, 0, peer.stderr());
  assert.equal(got.ready.protocol, 'ZWS2.0');
  assert.deepEqual(got.messages, [['id-less']]);
  const greetings = wire(got.events, 'greeting');
  assert.deepEqual(greetings.map((g) => [g.dir, g.hex]), [['c2s', '006d65'], ['s2c', '00']]);
  assert.equal(wire(got.events, 'command').length, 0, 'no command crosses a connection without mechanism');
});

test('a peer of the wrong type gets an ERROR and the page closes; a REQ sends one request at a time', () => {
  class Server {
    constructor(url, protocols) { this.protocol = protocols[0]; this.sent = []; Server.last = this; }
    send(p) { this.sent.push(bytesToHex(p)); }
    close(code) { this.closedWith = code; }
  }
  const events = [];
  let closed = null;
  new ZwsSocket({ WebSocket: Server, url: 'ws://x/', type: 'PULL', mechanism: 'NULL', onEvent: (e) => events.push(e), onClose: (c) => { closed = c; } });
  Server.last.onopen();
  Server.last.onmessage({ data: Buffer.from(engine.rep, 'hex') });
  assert.equal(Server.last.sent[1], engine.error);
  assert.equal(events.at(-1).kind, 'expert');
  assert.equal(events.at(-1).rule, 'socket-type');
  assert.equal(closed.error, true);
  assert.equal(Server.last.closedWith, 1000, 'a page may close with 1000 or 3000-4999 only');

  const req = new ZwsSocket({ WebSocket: Server, url: 'ws://x/', type: 'REQ' });
  req.send(['one']);
  assert.throws(() => req.send(['two']), /reply/);
  Server.last.onopen();
  Server.last.onmessage({ data: zwsFrame('') });
  assert.deepEqual(Server.last.sent, ['00', '01', '006f6e65'], 'routing id, then the delimiter and the request');
  Server.last.onmessage({ data: zwsFrame('', FLAG_MORE) });
  Server.last.onmessage({ data: zwsFrame('answer') });
  req.send(['two']);
  assert.equal(Server.last.sent.length, 5);
  Server.last.onmessage({ data: Uint8Array.of(0x02, 0) });
  assert.equal(req.state, 'closed', 'a command on a connection without mechanism ends it');
});
