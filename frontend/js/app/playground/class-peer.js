// The playground's My peer tab: this page as a real ZeroMQ peer of the session's topology (issue 34.3, the class
// is the network). A topology's external node the app serves over ZWS (its `zws` URL in the session's `topology`
// message) can be joined from here: a PULL behind the teacher's PUSH, a SUB with the topic the student types, a
// DEALER to a ROUTER, a REQ to a REP. The page's own bytes (core/zws.js's events) go into the tab's Dataset,
// which the workbench draws as it draws a session.

import { ZwsSocket, PEERS, text } from '../../core/zws.js';

const LAST = 8; // messages listed in the pane
import { h } from '../../views/dom.js';

export class ClassPeer {
  /**
   * container: the tab's pane. data: the tab's Dataset. page: { i18n, status(text, kind), reset(data), redraw(),
   * select(index), offered(on) (the tab shown or hidden) }. host: { WebSocket, document }.
   */
  constructor(host, container, data, page) {
    this.host = host;
    this.i18n = page.i18n;
    this.el = container;
    this.data = data;
    this.page = page;
    this.nodes = []; // the external nodes this page may be, from the last topology message
    this.drafts = new Map(); // node name -> { topic, identity } typed and not yet joined with (a redraw keeps them)
    this.socket = null;
    this.joined = null; // { node, type, topic }
    this.received = 0;
    this.last = []; // the last messages the page's application got, as text, newest first
    this.frames = ''; // the frames a joined DEALER or REQ has typed to send (a redraw keeps them)
    this.i18n.onChange(() => this.render());
    this.render();
  }

  /**
   * A session's topology: which of its nodes a page can join. null (the session's socket opens again, or another
   * session comes) keeps a joined peer until the next topology says whether its node is still there.
   */
  offer(topology) {
    if (!topology && this.joined) return;
    const nodes = topology && Array.isArray(topology.nodes) ? topology.nodes : [];
    const offered = nodes.filter((n) => n.external && n.zws && PEERS[n.type]);
    // (Every classmate who joins sends the session a new topology: an offer like the last leaves the pane, and
    // the input being typed in, as they are.)
    const same = sameOffer(this.nodes, offered);
    this.nodes = offered;
    if (this.joined && !this.nodes.some((n) => n.name === this.joined.node && n.zws === this.joined.url)) this.leave();
    this.page.offered(this.nodes.length > 0);
    if (!same) this.render();
  }

  /** Joins external node `node` (a topology node) as this page: `topic` for a SUB, `identity` for a DEALER/REQ. */
  join(node, { topic = '', identity = '' } = {}) {
    this.leave();
    this.page.reset(this.data);
    this.received = 0;
    this.last = [];
    this.frames = node.type === 'DEALER' ? ',hello' : 'hello';
    this.joined = { node: node.name, type: node.type, topic, url: node.zws, state: 'connecting' };
    this.socket = new ZwsSocket({
      WebSocket: this.host.WebSocket,
      i18n: this.i18n,
      url: node.zws,
      type: node.type,
      identity,
      subscribe: node.type === 'SUB' ? [topic] : [],
      onEvent: (ev) => {
        this.data.log.add({ ...ev, conn: '0' });
        this.page.redraw();
      },
      onReady: () => {
        this.joined.state = 'ready';
        this.page.status(this.i18n.t('ui.peer.joined', { node: node.name, type: node.type }));
        this.render();
      },
      onMessage: (frames) => {
        this.received++;
        this.last = [frames.map((f) => text(f)).join(' | '), ...this.last].slice(0, LAST);
        this.render();
      },
      onClose: ({ reason, mine, error }) => {
        if (!this.joined) return;
        this.joined.state = 'closed';
        if (!mine || error) this.page.status(this.i18n.t('ui.peer.closed', { reason: reason || '—' }), error ? 'error' : undefined);
        this.socket = null;
        this.render();
      },
    });
    this.render();
  }

  leave() {
    const s = this.socket;
    this.socket = null;
    this.joined = null;
    if (s) s.close();
    this.render();
  }

  send(text) {
    if (!this.socket || this.joined.state !== 'ready') return;
    try {
      this.socket.send(text.split(','));
    } catch {
      this.page.status(this.i18n.t('ui.peer.waitReply'), 'error');
    }
  }

  // ---- the pane ---------------------------------------------------------------------------
  render() {
    const doc = this.host.document;
    const t = (id, params) => this.i18n.t(id, params);
    const el = this.el;
    el.textContent = '';
    if (this.joined) {
      const j = this.joined;
      const said = { connecting: 'ui.peer.state.connecting', ready: 'ui.peer.state.ready', closed: 'ui.peer.state.closed' };
      el.append(h(doc, 'p', { class: 'peer-state', attrs: { 'data-state': j.state }, text: t(said[j.state], { node: j.node, type: j.type }) }));
      if (j.type === 'SUB') el.append(h(doc, 'p', { class: 'peer-topic', text: t('ui.peer.topicIs', { topic: j.topic === '' ? t('ui.peer.everything') : j.topic }) }));
      el.append(h(doc, 'p', { class: 'peer-received', attrs: { 'data-count': this.received }, text: this.i18n.tn('ui.peer.received', this.received) }));
      if (this.last.length) el.append(h(doc, 'ul', { class: 'peer-messages' }, this.last.map((m) => h(doc, 'li', { text: m }))));
      if ((j.type === 'DEALER' || j.type === 'REQ') && j.state === 'ready') {
        const input = h(doc, 'input', { type: 'text', class: 'peer-frames', value: this.frames, attrs: { 'aria-label': t('ui.peer.frames') }, on: { input: (ev) => { this.frames = ev.target.value; } } });
        el.append(h(doc, 'p', {}, h(doc, 'label', {}, t('ui.peer.frames'), ' ', input), ' ',
          h(doc, 'button', { type: 'button', class: 'peer-send', text: t('ui.peer.send'), on: { click: () => this.send(input.value) } })));
      }
      el.append(h(doc, 'p', {}, h(doc, 'button', { type: 'button', class: 'peer-leave', text: t('ui.peer.leave'), on: { click: () => this.leave() } })));
      return;
    }
    if (!this.nodes.length) {
      el.append(h(doc, 'p', { class: 'hint', text: t('ui.peer.none') }));
      return;
    }
    el.append(h(doc, 'p', { class: 'hint', text: t('ui.peer.intro') }));
    for (const node of this.nodes) {
      const draft = this.drafts.get(node.name) || { topic: '', identity: '' };
      this.drafts.set(node.name, draft);
      const keep = (key) => ({ input: (ev) => { draft[key] = ev.target.value; } });
      const topic = node.type === 'SUB' ? h(doc, 'input', { type: 'text', class: 'peer-topic-input', value: draft.topic, placeholder: t('ui.peer.topicPlaceholder'), attrs: { 'aria-label': t('ui.peer.topic') }, on: keep('topic') }) : null;
      const identity = node.type === 'DEALER' || node.type === 'REQ'
        ? h(doc, 'input', { type: 'text', class: 'peer-identity-input', value: draft.identity, placeholder: t('ui.peer.identityPlaceholder'), attrs: { 'aria-label': t('ui.peer.identity') }, on: keep('identity') }) : null;
      const join = h(doc, 'button', {
        type: 'button', class: 'peer-join', attrs: { 'data-node': node.name },
        text: t('ui.peer.join', { node: node.name, type: node.type }),
        on: { click: () => this.join(node, { topic: topic ? topic.value : '', identity: identity ? identity.value : '' }) },
      });
      el.append(h(doc, 'div', { class: 'peer-offer' },
        topic ? h(doc, 'label', {}, t('ui.peer.topic'), ' ', topic) : null,
        identity ? h(doc, 'label', {}, t('ui.peer.identity'), ' ', identity) : null,
        join));
    }
  }
}

/** Whether two offers are the same nodes, in order, at the same URLs. */
function sameOffer(a, b) {
  return a.length === b.length && a.every((n, i) => n.name === b[i].name && n.type === b[i].type && n.zws === b[i].zws);
}
