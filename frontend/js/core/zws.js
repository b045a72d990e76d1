// A page as a real ZeroMQ peer: ZWS 2.0 (45/ZWS, ZeroMQ over WebSocket) over an injected WebSocket
// constructor, no library. DOM-free.
//
// The WebSocket (RFC 6455: upgrade, framing, masking, ping/pong) is the browser's; ZWS is on top: no
// greeting, one ZeroMQ frame per binary WebSocket message, its first octet the flags (%x00 the last frame,
// %x01 MORE, %x02 COMMAND). With `ZWS2.0` (no mechanism, ZMTP/2-like) each side's first message is its routing
// id, then messages; with `ZWS2.0/NULL` each side sends a NULL READY (Socket-Type, Identity) and the traffic
// follows 23/ZMTP. A browser can offer only the first: its WebSocket API throws a SyntaxError on a
// subprotocol that is not an HTTP token, and `/` is not a token character, so `mechanism: 'NULL'` is for
// WebSocket constructors that let it through. A SUB subscribes with a %x01-prefixed message (45/ZWS Publish-Subscribe, as libzmq's ws engine and the
// lab's engine send it). The socket behaviour is what a student's page needs: PULL, SUB, DEALER, REQ.
//
// Every element is also told as an event of the lab's event contract (`kind` greeting / command / frame /
// message / expert, `dir` c2s for the page's own, s2c for the server's, `offset`/`length` counted over the
// ZWS payloads: the page never sees the WebSocket frame headers the browser writes and reads), so the
// playground's views draw a page's own bytes as they draw a session's.

import { bytesToHex, utf8Encode } from './bytes.js';

const DECODER = new TextDecoder(); // (lenient: a name or a value that is not UTF-8 still reads)

/** Bytes as text, whatever they are (ASCII included, which bytes.js's utf8Text leaves to the caller). */
export function text(bytes) {
  return DECODER.decode(bytes);
}

export const FLAG_MORE = 0x01;
export const FLAG_COMMAND = 0x02;
export const RESERVED_FLAGS = 0xfc;
export const PROTOCOL_NULL = 'ZWS2.0/NULL';
export const PROTOCOL_ROUTING_IDS = 'ZWS2.0';

/** The socket types a page can be, and the peers 23/ZMTP lets each talk to. */
export const PEERS = {
  PULL: ['PUSH'],
  SUB: ['PUB', 'XPUB'],
  DEALER: ['ROUTER', 'DEALER', 'REP'],
  REQ: ['REP', 'ROUTER'],
};

const CLOSE_NORMAL = 1000;

/** What a socket offers: `ZWS2.0` alone (routing ids: what a browser can offer), or libzmq's offer for NULL. */
export function offer(mechanism = 'none') {
  return mechanism === 'NULL' ? [PROTOCOL_NULL, PROTOCOL_ROUTING_IDS] : [PROTOCOL_ROUTING_IDS];
}

function bytesOf(data) {
  if (data instanceof Uint8Array) return data;
  if (typeof data === 'string') return utf8Encode(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return Uint8Array.from(data || []);
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** One ZWS frame: the payload of one binary WebSocket message, the flag octet then the body. */
export function zwsFrame(body, flags = 0) {
  return concat([Uint8Array.of(flags), bytesOf(body)]);
}

/** `name-size name data`: a command's body. */
export function commandBody(name, data = new Uint8Array(0)) {
  const raw = utf8Encode(name);
  return concat([Uint8Array.of(raw.length), raw, bytesOf(data)]);
}

/** Metadata properties ([[name, value], ...]): 1-octet name size, name, 4-octet big-endian value size, value. */
export function metadata(properties) {
  const parts = [];
  for (const [name, value] of properties) {
    const n = utf8Encode(name);
    const v = bytesOf(value);
    const size = new Uint8Array(4);
    new DataView(size.buffer).setUint32(0, v.length);
    parts.push(Uint8Array.of(n.length), n, size, v);
  }
  return concat(parts);
}

/** The READY a page sends with NULL: Socket-Type, and Identity for the types libzmq gives one (REQ, DEALER). */
export function readyFor(type, identity = '') {
  const properties = [['Socket-Type', type]];
  if (type === 'REQ' || type === 'DEALER') properties.push(['Identity', identity]);
  return zwsFrame(commandBody('READY', metadata(properties)), FLAG_COMMAND);
}

/** A subscription (%x01) or its cancel (%x00) as the one frame of a message. */
export function subscription(topic, on = true) {
  return zwsFrame(concat([Uint8Array.of(on ? 1 : 0), bytesOf(topic)]), 0);
}

/** An ERROR command's frame: `name-size "ERROR" reason-size reason`. */
export function errorFrame(reason) {
  const raw = utf8Encode(reason).subarray(0, 255);
  return zwsFrame(commandBody('ERROR', concat([Uint8Array.of(raw.length), raw])), FLAG_COMMAND);
}

/** An error of the other side's bytes: the rule it broke, what it is in words (a catalog id and its params), where. */
export class ZwsError extends Error {
  constructor(rule, id, params = {}, offset = 0) {
    super(id);
    this.rule = rule;
    this.id = id;
    this.params = params;
    this.offset = offset;
  }
}

/**
 * One received payload read: { flags, more, command, body } and, for a command, { name, data, properties }.
 * Throws a ZwsError on an empty payload, reserved flag bits or a command that does not parse.
 */
export function readFrame(payload) {
  const bytes = bytesOf(payload);
  if (!bytes.length) throw new ZwsError('flags', 'ui.zws.empty');
  const flags = bytes[0];
  if (flags & RESERVED_FLAGS) throw new ZwsError('flags', 'ui.zws.reserved', { bits: `0x${(flags & RESERVED_FLAGS).toString(16)}` });
  const out = { flags, more: !!(flags & FLAG_MORE), command: !!(flags & FLAG_COMMAND), body: bytes.subarray(1) };
  if (out.command) Object.assign(out, readCommand(out.body));
  return out;
}

function readCommand(body) {
  const size = body[0];
  if (body.length < 1 || 1 + size > body.length) throw new ZwsError('command-name', 'ui.zws.shortCommand', {}, 1);
  const name = text(body.subarray(1, 1 + size));
  const data = body.subarray(1 + size);
  const out = { name, data, fields: [] };
  if (name === 'READY' || name === 'ERROR') out.fields = commandFields(name, data, 2 + size);
  if (name === 'READY') out.properties = Object.fromEntries(out.fields.filter((f) => f.name === 'property-value').map((f) => [f.property, f.value]));
  return out;
}

// The fields of a READY's properties or an ERROR's reason, `at` octets into the payload.
function commandFields(name, data, at) {
  const fields = [];
  if (name === 'ERROR') {
    const n = data[0] || 0;
    fields.push({ name: 'reason-size', offset: at, length: 1, value: n, rule: 'error-reason' });
    fields.push({ name: 'reason', offset: at + 1, length: n, value: text(data.subarray(1, 1 + n)), rule: 'error-reason' });
    return fields;
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let i = 0;
  while (i < data.length) {
    const n = data[i];
    if (i + 1 + n + 4 > data.length) throw new ZwsError('metadata', 'ui.zws.longProperty', {}, at + i);
    const property = text(data.subarray(i + 1, i + 1 + n));
    const size = view.getUint32(i + 1 + n);
    const v = i + 1 + n + 4;
    if (v + size > data.length) throw new ZwsError('metadata', 'ui.zws.longProperty', {}, at + i + 1 + n);
    fields.push({ name: 'name-size', offset: at + i, length: 1, value: n, rule: 'name' });
    fields.push({ name: 'property-name', offset: at + i + 1, length: n, value: property, rule: 'name' });
    fields.push({ name: 'value-size', offset: at + v - 4, length: 4, value: size, rule: 'value' });
    fields.push({ name: 'property-value', offset: at + v, length: size, value: text(data.subarray(v, v + size)), property, rule: 'value' });
    i = v + size;
  }
  return fields;
}

const FLAG_WORDS = { 0: 'final', 1: 'MORE', 2: 'COMMAND', 3: 'MORE, COMMAND' };

/** The event of one payload (a ZWS frame) as the lab's event contract has it, with its fields. */
export function frameEvent(payload, read, dir, offset) {
  const bytes = bytesOf(payload);
  const hex = bytesToHex(bytes);
  const flagsField = { name: 'flags', offset, length: 1, value: `0x${bytesToHex([read.flags])} (${FLAG_WORDS[read.flags & 3]})`, rule: 'flags' };
  const base = { offset, length: bytes.length, hex, transport: 'zws', dir };
  if (read.command) {
    const nameSize = bytes[1];
    const fields = [flagsField,
      { name: 'name-size', offset: offset + 1, length: 1, value: nameSize, rule: 'command-name' },
      { name: 'command-name', offset: offset + 2, length: nameSize, value: read.name, rule: 'command-name' },
      ...read.fields.map((f) => ({ name: f.name, offset: offset + f.offset, length: f.length, value: f.value, rule: f.rule }))];
    const ev = { kind: 'command', name: read.name, ...base, fields };
    if (read.properties) ev.properties = read.properties;
    return ev;
  }
  const body = bytesToHex(read.body);
  return {
    kind: 'frame', ...base, more: read.more, long: false, size: read.body.length, body,
    fields: [flagsField, { name: 'body', offset: offset + 1, length: read.body.length, value: text(read.body), rule: 'message-body' }],
  };
}

/**
 * A ZWS socket of one connection: PULL, SUB, DEALER or REQ, the page being the WebSocket client.
 *
 * new ZwsSocket({ WebSocket, url, type, identity, subscribe: [topics], mechanism: 'none' | 'NULL', i18n (its words),
 *                 onEvent(ev), onMessage(frames: Uint8Array[]), onReady({ protocol, socketType, identity }),
 *                 onClose({ code, reason, error }) })
 *
 * send(frames) sends one message (a DEALER's as it is, a REQ's behind its empty delimiter, one request at a
 * time); subscribe(topic) / unsubscribe(topic) on a SUB; close(). `state` is connecting, handshake, ready or
 * closed; what is sent before `ready` waits and goes out, in order, once the handshake is done.
 */
export class ZwsSocket {
  constructor({ WebSocket, url, type, identity = '', subscribe = [], mechanism = 'none', i18n = null, onEvent, onMessage, onReady, onClose }) {
    if (!PEERS[type]) throw new Error(`a page cannot be a ${type} socket`);
    this.i18n = i18n;
    this.type = type;
    this.identity = bytesOf(identity);
    this.topics = subscribe.map(bytesOf);
    this.handlers = { onEvent, onMessage, onReady, onClose };
    this.state = 'connecting';
    this.protocol = null;
    this.peer = null;
    this.awaitingReply = false;
    this.pending = [];
    this.incoming = [];
    this.outgoing = [];
    this.outgoingAt = 0;
    this.offsets = { c2s: 0, s2c: 0 };
    this.seq = 0;
    const ws = new WebSocket(url, offer(mechanism));
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => this.opened();
    ws.onmessage = (e) => this.received(e.data);
    ws.onclose = (e) => this.ended(e && e.code, (e && e.reason) || '', false);
    ws.onerror = () => {};
    this.ws = ws;
  }

  /** Sends one message of frames (strings or bytes). */
  send(frames) {
    if (this.type === 'PULL' || this.type === 'SUB') throw new Error(`a ${this.type} socket does not send`);
    if (this.type === 'REQ') {
      if (this.awaitingReply) throw new Error('a REQ sends its next request once the reply to the last came');
      this.awaitingReply = true;
      frames = [new Uint8Array(0), ...frames];
    }
    const parts = frames.map((f, i) => zwsFrame(f, i < frames.length - 1 ? FLAG_MORE : 0));
    if (this.state === 'ready') parts.forEach((p) => this.write(p));
    else if (this.state !== 'closed') this.pending.push(...parts);
  }

  subscribe(topic) {
    this.changeSubscription(bytesOf(topic), true);
  }

  unsubscribe(topic) {
    this.changeSubscription(bytesOf(topic), false);
  }

  close() {
    if (this.state === 'closed') return;
    this.ended(CLOSE_NORMAL, '', true);
    this.ws.close(CLOSE_NORMAL);
  }

  // ---------------------------------------------------------------- internals

  changeSubscription(topic, on) {
    if (this.type !== 'SUB') throw new Error(`a ${this.type} socket does not subscribe`);
    const at = this.topics.findIndex((t) => bytesToHex(t) === bytesToHex(topic));
    if (on && at < 0) this.topics.push(topic);
    if (!on && at >= 0) this.topics.splice(at, 1);
    const frame = subscription(topic, on);
    if (this.state === 'ready') this.write(frame);
    else if (this.state !== 'closed') this.pending.push(frame);
  }

  opened() {
    this.protocol = this.ws.protocol;
    this.state = 'handshake';
    if (this.protocol === PROTOCOL_ROUTING_IDS) {
      this.write(zwsFrame(this.identity, 0), 'greeting');
    } else if (this.protocol === PROTOCOL_NULL) {
      this.write(readyFor(this.type, this.identity));
    } else {
      this.fail('protocol', 'ui.zws.noProtocol', { protocol: this.protocol || '—' });
    }
  }

  received(data) {
    if (this.state === 'closed') return;
    if (typeof data === 'string') {
      this.fail('opcode', 'ui.zws.text');
      return;
    }
    const payload = bytesOf(data);
    let read;
    try {
      read = readFrame(payload);
      if (read.command && read.more) throw new ZwsError('flags', 'ui.zws.commandMore');
    } catch (err) {
      this.fail(err.rule || 'frame', err.id || err.message, err.params);
      return;
    }
    const offset = this.offsets.s2c;
    this.offsets.s2c += payload.length;
    if (this.protocol === PROTOCOL_ROUTING_IDS && this.state === 'handshake') {
      this.emit(this.greetingEvent(payload, 's2c', offset));
      if (read.flags !== 0) {
        this.fail('identity', 'ui.zws.routingId');
        return;
      }
      this.handshakeDone({ identity: text(read.body), socketType: null });
      return;
    }
    this.emit(frameEvent(payload, read, 's2c', offset));
    if (read.command) {
      this.command(read);
      return;
    }
    if (this.state !== 'ready') {
      this.fail('traffic', 'ui.zws.early');
      return;
    }
    this.incoming.push(read.body);
    if (!read.more) this.deliver(this.incoming.splice(0), offset);
  }

  command(read) {
    if (this.protocol === PROTOCOL_ROUTING_IDS) {
      this.fail('traffic', 'ui.zws.commandNoMechanism');
      return;
    }
    if (read.name === 'ERROR') {
      this.ended(CLOSE_NORMAL, read.fields[1] ? read.fields[1].value : 'ERROR', false, true);
      this.ws.close(CLOSE_NORMAL);
      return;
    }
    if (read.name !== 'READY' || this.state !== 'handshake') return; // (others are ignored, as libzmq ignores them)
    const socketType = (read.properties || {})['Socket-Type'];
    if (!PEERS[this.type].includes(socketType)) {
      this.write(errorFrame('Invalid socket type'));
      this.fail('socket-type', 'ui.zws.socketType', { type: this.type, peer: socketType || '—' });
      return;
    }
    this.handshakeDone({ socketType, identity: (read.properties || {}).Identity || '' });
  }

  handshakeDone(peer) {
    this.peer = peer;
    this.state = 'ready';
    if (this.type === 'SUB') this.topics.forEach((t) => this.write(subscription(t, true)));
    this.pending.splice(0).forEach((p) => this.write(p));
    if (this.handlers.onReady) this.handlers.onReady({ protocol: this.protocol, ...peer });
  }

  deliver(frames, offset) {
    const end = this.offsets.s2c;
    const ev = { kind: 'message', dir: 's2c', offset, length: end - offset, frames: frames.map((f) => bytesToHex(f)) };
    if (this.type === 'REQ') {
      if (!this.awaitingReply || frames.length < 2 || frames[0].length) {
        this.emit({ ...ev, dropped: true });
        return;
      }
      this.awaitingReply = false;
      frames = frames.slice(1);
    }
    if (this.type === 'SUB' && !this.topics.some((t) => startsWith(frames[0] || new Uint8Array(0), t))) {
      this.emit({ ...ev, filtered: true });
      return;
    }
    this.emit(ev);
    if (this.handlers.onMessage) this.handlers.onMessage(frames);
  }

  write(payload, kind) {
    const offset = this.offsets.c2s;
    this.offsets.c2s += payload.length;
    this.ws.send(payload);
    if (kind === 'greeting') {
      this.emit(this.greetingEvent(payload, 'c2s', offset));
      return;
    }
    const read = readFrame(payload);
    this.emit(frameEvent(payload, read, 'c2s', offset));
    if (read.command) return;
    if (!this.outgoing.length) this.outgoingAt = offset;
    this.outgoing.push(read.body);
    if (!read.more) {
      const frames = this.outgoing.splice(0);
      this.emit({ kind: 'message', dir: 'c2s', offset: this.outgoingAt, length: this.offsets.c2s - this.outgoingAt, frames: frames.map((f) => bytesToHex(f)) });
    }
  }

  greetingEvent(payload, dir, offset) {
    const id = payload.subarray(1);
    return {
      kind: 'greeting', dir, offset, length: payload.length, hex: bytesToHex(payload), transport: 'zws', version: '2.0',
      protocol: this.protocol, identity: bytesToHex(id),
      fields: [{ name: 'flags', offset, length: 1, value: '0x00 (final)', rule: 'flags' },
        { name: 'routing-id', offset: offset + 1, length: id.length, value: text(id), rule: 'identity' }],
    };
  }

  emit(ev) {
    ev.seq = this.seq++;
    if (this.handlers.onEvent) this.handlers.onEvent(ev);
  }

  // The other side broke a rule: an `expert` event (its words in the socket's i18n, and the id and params that say
  // them again), then the socket closes (a page may close with 1000 or 3000-4999 only, so the reason is in the
  // event, not in a 1002).
  fail(rule, id, params = {}) {
    if (this.state === 'closed') return;
    const text = this.i18n ? this.i18n.t(id, params) : id;
    this.emit({ kind: 'expert', severity: 'error', rule, text, id, params, dir: 's2c' });
    this.ended(CLOSE_NORMAL, text, true, true);
    this.ws.close(CLOSE_NORMAL);
  }

  ended(code, reason, mine, error = false) {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.handlers.onClose) this.handlers.onClose({ code, reason, mine, error: error || (code !== CLOSE_NORMAL && code !== 1001) });
  }
}

function startsWith(bytes, prefix) {
  if (prefix.length > bytes.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}
