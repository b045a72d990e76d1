// The message composer's model: a message built frame by frame. DOM-free.
// Each frame is text (sent as UTF-8) or hex. The wire facts shown to the user
// (long frame above 255 octets, MORE on all frames but the last) are the ones
// 23/ZMTP states for message framing; the session's engine does the encoding.

import { utf8Encode, bytesToHex } from './bytes.js';
import { parsePlainHex } from './hexparse.js';

export const SHORT_MAX = 255;

export function newFrame(text = '', mode = 'text') {
  return { text, mode };
}

/** Bytes of one frame, or { error } when its hex does not parse. */
export function frameBytes(i18n, frame) {
  if (frame.mode === 'hex') {
    if (!frame.text.trim()) return { bytes: new Uint8Array(0) };
    try {
      return { bytes: parsePlainHex(i18n, frame.text).directions[0].bytes };
    } catch (err) {
      return { error: err.message };
    }
  }
  return { bytes: utf8Encode(frame.text) };
}

/**
 * What each frame will look like on the wire.
 * Returns [{ size, long, more, error, header, routing, wire }] — `long` when the body
 * needs the 8-octet size field, `more` on every frame but the last. With `routing` (a
 * ROUTER sends) the first frame is the routing id: `wire` false, no header.
 */
export function describeFrames(i18n, frames, { routing = false } = {}) {
  return frames.map((f, i) => {
    const { bytes, error } = frameBytes(i18n, f);
    const size = bytes ? bytes.length : 0;
    if (routing && i === 0) {
      // A ROUTER's first frame names the connection to send on: the socket takes it off, it never goes on the wire.
      return { size, long: false, more: false, error: error || null, header: 0, routing: true, wire: false };
    }
    return { size, long: size > SHORT_MAX, more: i < frames.length - 1, error: error || null, header: size > SHORT_MAX ? 9 : 2, routing: false, wire: true };
  });
}

/** The frames and octets of a described message that go on the wire: { frames, octets }. */
export function wireTotals(desc) {
  const wire = desc.filter((f) => f.wire !== false);
  return { frames: wire.length, octets: wire.reduce((n, f) => n + f.size + f.header, 0) };
}

/**
 * The websocket command that sends the message.
 * All-text messages go as text (`hex: false`); if any frame is hex, every frame
 * is sent as hex (text frames UTF-8 encoded) with `hex: true`.
 * Throws when a frame's hex is invalid or there are no frames.
 */
export function buildSendCommand(i18n, from, frames) {
  if (!frames.length) throw new Error('a message has at least one frame');
  const anyHex = frames.some((f) => f.mode === 'hex');
  if (!anyHex) return { type: 'send', from, frames: frames.map((f) => f.text), hex: false };
  const out = frames.map((f, i) => {
    const { bytes, error } = frameBytes(i18n, f);
    if (error) throw new Error(`frame ${i + 1}: ${error}`);
    return bytesToHex(bytes);
  });
  return { type: 'send', from, frames: out, hex: true };
}
