// The one websocket wrapper under the pages' sockets (core/socket.js): JSON both ways, sends queued until
// open behind an optional first message, unreadable text reported apart, and who closed the socket.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { openJsonSocket } from '../../frontend/js/core/socket.js';
import { fakeWebSocket } from './fakes.mjs';

test('sends wait for the open, behind the first message, and stop once closed', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const opened = [];
  const s = openJsonSocket({ WebSocket, url: 'ws://h/ws/x', first: { type: 'auth', token: 't' }, onOpen: () => opened.push(sockets[0].sent.length) });
  s.send({ n: 1 });
  s.send({ n: 2 });
  assert.equal(sockets[0].url, 'ws://h/ws/x');
  assert.deepEqual(sockets[0].sent, []);
  assert.equal(s.isOpen, false);
  sockets[0].onopen();
  assert.equal(s.isOpen, true);
  assert.deepEqual(opened, [3], 'onOpen comes after the queue went out');
  s.send({ n: 3 });
  assert.deepEqual(sockets[0].sent, [{ type: 'auth', token: 't' }, { n: 1 }, { n: 2 }, { n: 3 }]);
  s.close();
  s.send({ n: 4 });
  assert.equal(s.isOpen, false);
  assert.equal(sockets[0].sent.length, 4);
});

test('messages arrive parsed, batches whole; text that is not JSON goes to onUnreadable', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const got = [];
  openJsonSocket({ WebSocket, url: 'u', onMessage: (m) => got.push(m), onUnreadable: () => got.push('unreadable') });
  const ws = sockets[0];
  ws.onopen();
  ws.onmessage({ data: '{"type":"event","event":{"kind":"frame"}}' });
  ws.onmessage({ data: '[{"type":"state"},{"type":"reset"}]' });
  ws.onmessage({ data: '{broken' });
  ws.onmessage({ data: '"text"' });
  assert.deepEqual(got, [{ type: 'event', event: { kind: 'frame' } }, [{ type: 'state' }, { type: 'reset' }], 'unreadable', 'text']);
});

test('onClose says who closed; errors after our own close are not reported', () => {
  const { WebSocket, sockets } = fakeWebSocket();
  const log = [];
  const hooks = { onClose: (...a) => log.push(['close', ...a]), onError: () => log.push(['error']) };
  openJsonSocket({ WebSocket, url: 'a', ...hooks });
  sockets[0].onerror();
  sockets[0].onclose({ code: 4404, reason: 'no such session' });
  const mine = openJsonSocket({ WebSocket, url: 'b', ...hooks });
  mine.close();
  sockets[1].onerror();
  assert.deepEqual(log, [['error'], ['close', 4404, 'no such session', false], ['close', 1000, undefined, true]]);
});
