// The playground's My peer tab (app/playground/class-peer.js): a topology's external node served over ZWS is
// offered to the page, joined as the node's socket type, and the page's own bytes go into the tab's Dataset.
import { en, pageI18n } from './i18n-setup.mjs';
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument, byClass, walk } from './fake-dom.mjs';
import { ClassPeer } from '../../frontend/js/app/playground/class-peer.js';
import { Dataset } from '../../frontend/js/app/shared/dataset.js';
import { zwsFrame, FLAG_MORE } from '../../frontend/js/core/zws.js';

function server() {
  const sockets = [];
  class Ws {
    constructor(url, protocols) {
      Object.assign(this, { url, protocols, protocol: protocols[0], sent: [] });
      sockets.push(this);
    }
    send(p) { this.sent.push(Array.from(p)); }
    close() { if (this.onclose) this.onclose({ code: 1000 }); }
  }
  return { Ws, sockets };
}

function make(i18n = en) {
  const doc = createDocument();
  const { Ws, sockets } = server();
  const container = doc.createElement('div');
  const data = new Dataset({ i18n });
  const calls = { offered: [], status: [], redraws: 0 };
  const peer = new ClassPeer({ WebSocket: Ws, document: doc }, container, data, {
    i18n, status: (t) => calls.status.push(t), reset: (d) => d.clear(), redraw: () => calls.redraws++, select() {},
    offered: (on) => calls.offered.push(on),
  });
  return { peer, container, data, calls, sockets };
}

const text = (el) => walk(el).map((e) => (e.childNodes || []).filter((c) => c.nodeType === 3).map((c) => c.textContent).join('')).join(' ');
const TOPOLOGY = {
  nodes: [
    { name: 'teacher', type: 'PUSH' },
    { name: 'class', type: 'PULL', external: true, endpoint: 'tcp://10.0.0.1:41000', zws: 'ws://10.0.0.1:8000/zws-s1-class' },
    { name: 'prog', type: 'PULL', external: true, endpoint: 'tcp://10.0.0.1:41001' },
  ],
  links: [],
};

test('only an external node the app serves over ZWS is offered, and the tab goes when it goes', () => {
  const { peer, container, calls } = make();
  assert.match(text(container), /no external node/);
  peer.offer(TOPOLOGY);
  assert.deepEqual(calls.offered, [true]);
  const buttons = byClass(container, 'peer-join');
  assert.deepEqual(buttons.map((b) => b.getAttribute('data-node')), ['class'], 'no ZWS URL: a program joins it, not a page');
  assert.match(text(container), /Join class as a PULL/);
  peer.offer({ nodes: [{ name: 'teacher', type: 'PUSH' }] });
  assert.deepEqual(calls.offered, [true, false]);
});

test("a PULL page joins over ZWS2.0, its routing id first, and every element lands in the tab's Dataset", () => {
  const { peer, container, data, sockets } = make();
  peer.offer(TOPOLOGY);
  byClass(container, 'peer-join')[0].dispatch('click');
  const ws = sockets[0];
  assert.equal(ws.url, 'ws://10.0.0.1:8000/zws-s1-class');
  assert.deepEqual(ws.protocols, ['ZWS2.0']);
  ws.onopen();
  assert.deepEqual(ws.sent, [[0]], 'an empty routing id');
  ws.onmessage({ data: zwsFrame('') });
  ws.onmessage({ data: zwsFrame('task', FLAG_MORE) });
  ws.onmessage({ data: zwsFrame('1') });
  assert.deepEqual(data.log.events.map((e) => [e.kind, e.dir]),
    [['greeting', 'c2s'], ['greeting', 's2c'], ['frame', 's2c'], ['frame', 's2c'], ['message', 's2c']]);
  assert.ok(data.log.events.every((e) => e.conn === '0'));
  assert.equal(byClass(container, 'peer-received')[0].getAttribute('data-count'), '1');
  assert.match(text(byClass(container, 'peer-messages')[0]), /task \| 1/);
  // The session's socket opens again (another language, a teacher's state): the peer stays until a topology without it.
  peer.offer(null);
  peer.offer(TOPOLOGY);
  assert.equal(byClass(container, 'peer-state')[0].getAttribute('data-state'), 'ready');
  byClass(container, 'peer-leave')[0].dispatch('click');
  assert.equal(byClass(container, 'peer-join').length, 1, 'left: offered again');
});

test('a SUB page subscribes to the topic typed, in Chinese too', () => {
  const { peer, container, sockets } = make(pageI18n('zh-CN'));
  peer.offer({ nodes: [{ name: 'room', type: 'SUB', external: true, zws: 'ws://h/zws-s-room' }] });
  assert.match(text(container), /作为 SUB 加入 room/);
  byClass(container, 'peer-topic-input')[0].value = 'weather';
  byClass(container, 'peer-join')[0].dispatch('click');
  sockets[0].onopen();
  sockets[0].onmessage({ data: zwsFrame('') });
  assert.deepEqual(sockets[0].sent.slice(1), [[0, 1, ...Buffer.from('weather')]]);
  assert.match(text(container), /已订阅：weather/);
});

test('what a student types stays while classmates join: a new topology redraws neither it nor its input', () => {
  const { peer, container, sockets } = make();
  const room = { name: 'room', type: 'SUB', external: true, zws: 'ws://h/zws-s-room' };
  peer.offer({ nodes: [room] });
  const typed = byClass(container, 'peer-topic-input')[0];
  typed.value = 'sports';
  typed.dispatch('input');
  peer.offer({ nodes: [{ ...room }], links: [{ from: 'a', to: 'room' }] }); // a classmate joined: the same offer
  assert.equal(byClass(container, 'peer-topic-input')[0], typed, 'the same input, focus and caret kept');
  // Another node offered: the pane is drawn again, with what was typed.
  peer.offer({ nodes: [room, { name: 'jobs', type: 'DEALER', external: true, zws: 'ws://h/zws-s-jobs' }] });
  const again = byClass(container, 'peer-topic-input')[0];
  assert.notEqual(again, typed);
  assert.equal(again.value, 'sports');
  const identity = byClass(container, 'peer-identity-input')[0];
  identity.value = 'me';
  identity.dispatch('input');
  peer.render(); // (as a change of language redraws it)
  assert.deepEqual([byClass(container, 'peer-topic-input')[0].value, byClass(container, 'peer-identity-input')[0].value],
    ['sports', 'me']);
  byClass(container, 'peer-join')[0].dispatch('click');
  sockets[0].onopen();
  sockets[0].onmessage({ data: zwsFrame('') });
  assert.deepEqual(sockets[0].sent.slice(1), [[0, 1, ...Buffer.from('sports')]]);
});

test("a joined REQ's typed request stays through a classmate's topology, a redraw and a reply", () => {
  const { peer, container, sockets } = make();
  const desk = { name: 'desk', type: 'REQ', external: true, zws: 'ws://h/zws-s-desk' };
  peer.offer({ nodes: [desk] });
  byClass(container, 'peer-join')[0].dispatch('click');
  sockets[0].onopen();
  sockets[0].onmessage({ data: zwsFrame('') });
  const typed = byClass(container, 'peer-frames')[0];
  assert.equal(typed.value, 'hello', 'a REQ offers a request to start with');
  typed.value = 'question 1';
  typed.dispatch('input');
  peer.offer({ nodes: [{ ...desk }], links: [{ from: 'teacher', to: 'desk' }] }); // a classmate joined
  assert.equal(byClass(container, 'peer-frames')[0], typed, 'the same input, focus and caret kept');
  peer.render(); // (as a change of language redraws it)
  assert.equal(byClass(container, 'peer-frames')[0].value, 'question 1');
  byClass(container, 'peer-send')[0].dispatch('click');
  assert.deepEqual(sockets[0].sent.slice(-2), [Array.from(zwsFrame('', FLAG_MORE)), Array.from(zwsFrame('question 1'))]);
  sockets[0].onmessage({ data: zwsFrame('', FLAG_MORE) });
  sockets[0].onmessage({ data: zwsFrame('question 1') });
  assert.equal(byClass(container, 'peer-frames')[0].value, 'question 1', 'the reply redraws the pane, not the request');
  assert.match(text(byClass(container, 'peer-messages')[0]), /question 1/);
});

test("a server's broken frame is an expert event in the page's language, and the page leaves", () => {
  const { peer, container, data, sockets } = make(pageI18n('zh-CN'));
  peer.offer(TOPOLOGY);
  byClass(container, 'peer-join')[0].dispatch('click');
  sockets[0].onopen();
  sockets[0].onmessage({ data: zwsFrame('') });
  sockets[0].onmessage({ data: Uint8Array.of(0x84, 1) });
  const expert = data.log.events.at(-1);
  assert.equal(expert.kind, 'expert');
  assert.equal(expert.rule, 'flags');
  assert.equal(expert.text, '设置了保留的标志位：0x84。');
  assert.equal(byClass(container, 'peer-state')[0].getAttribute('data-state'), 'closed');
});
