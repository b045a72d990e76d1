// External nodes (issue 34.1): what the playground's box says a program outside the lab runs to join.
import test from 'node:test';
import assert from 'node:assert/strict';
import { externalNodes, peerCommand, pyzmqSnippet } from '../../frontend/js/core/external-nodes.js';

const TOPOLOGY = {
  mode: 'tcp',
  nodes: [
    { name: 'router', type: 'ROUTER' },
    { name: 'you', type: 'DEALER', external: true, listens: true, endpoint: 'tcp://127.0.0.1:40001', zws: 'ws://lab:8000/zws-abc-you' },
    { name: 'feed', type: 'PULL', external: true, endpoint: 'tcp://127.0.0.1:5555' },
  ],
  links: [{ connect: 'you', bind: 'router' }, { connect: 'router', bind: 'feed' }],
};

test('each external node: where its program joins, the lab node it is linked to, and what to run', () => {
  const [you, feed] = externalNodes(TOPOLOGY);
  assert.deepEqual([you.name, you.peer, you.listens, you.max, you.zws], ['you', 'router', true, 1, 'ws://lab:8000/zws-abc-you']);
  assert.equal(you.command, 'zmtplab peer DEALER tcp://127.0.0.1:40001 --connect --send hello --recv 1');
  assert.equal(you.commandZws, 'zmtplab peer DEALER ws://lab:8000/zws-abc-you --connect --send hello --recv 1');
  assert.match(you.pyzmq, /sock = ctx.socket\(zmq.DEALER\)\nsock.connect\("tcp:\/\/127.0.0.1:40001"\)\nsock.send\(b"hello from python"\)\nprint\(sock.recv_multipart\(\)\)/);
  // The lab connects to this one: its program binds the endpoint's port.
  assert.equal(feed.listens, false);
  assert.equal(feed.command, 'zmtplab peer PULL tcp://*:5555 --bind --recv 1');
  assert.match(feed.pyzmq, /sock.bind\("tcp:\/\/\*:5555"\)/);
  assert.deepEqual(externalNodes({ nodes: [{ name: 'a', type: 'PUSH' }], links: [] }), []);
  assert.deepEqual(externalNodes(null), []);
});

test('a SUB subscribes first; a REP answers what it read; a PUSH only sends', () => {
  assert.match(pyzmqSnippet('SUB', 'tcp://h:1', false, ['weather']), /setsockopt\(zmq.SUBSCRIBE, b"weather"\)\nsock.connect/);
  assert.match(pyzmqSnippet('REP', 'tcp://h:1'), /print\(sock.recv_multipart\(\)\)\nsock.send\(b"hello from python"\)$/);
  assert.doesNotMatch(pyzmqSnippet('PUSH', 'tcp://h:1'), /recv/);
  assert.equal(peerCommand('SUB', 'tcp://h:1'), "zmtplab peer SUB tcp://h:1 --connect --subscribe '' --recv 1");
  assert.equal(peerCommand('PUSH', 'tcp://h:1'), 'zmtplab peer PUSH tcp://h:1 --connect --send hello');
});
