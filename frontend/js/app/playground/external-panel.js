// The playground's External nodes box (issue 34.1): for each external node of the session's topology, where its
// program joins (the tcp:// endpoint, the app's ws:// URL) and what to run there, a pyzmq script and a
// `zmtplab peer` command, each with a Copy button. Hidden when the topology has none.

import { externalNodes } from '../../core/external-nodes.js';
import { h } from '../../views/dom.js';

export class ExternalPanel {
  /** box: the <details> shown when there are external nodes; slot: where they go. options: { i18n, copy(text) }. */
  constructor(doc, box, slot, { i18n, copy }) {
    this.doc = doc;
    this.box = box;
    this.slot = slot;
    this.i18n = i18n;
    this.copy = copy;
    this.shown = '';
  }

  /** Shows the external nodes of a session's topology message (none: the box hides). */
  setTopology(topology) {
    const nodes = externalNodes(topology);
    const key = JSON.stringify(nodes);
    if (key === this.shown) return; // (the message comes again as each connection opens)
    this.shown = key;
    this.slot.replaceChildren(...nodes.map((node) => this.node(node)));
    this.box.hidden = nodes.length === 0;
  }

  forget() {
    this.setTopology(null);
  }

  node(node) {
    const doc = this.doc;
    const i18n = this.i18n;
    const head = node.listens
      ? i18n.message('ui.external.waits', { name: node.name, type: node.type, peer: node.peer || '', max: node.max })
      : i18n.message('ui.external.connects', { name: node.name, type: node.type, peer: node.peer || '', endpoint: node.endpoint });
    const rows = [h(doc, 'p', { class: 'external-head', t: head })];
    if (node.listens) rows.push(this.value('ui.external.endpoint', node.endpoint, 'external-endpoint'));
    if (node.zws) rows.push(this.value('ui.external.zws', node.zws, 'external-zws'));
    if (node.pyzmq) rows.push(this.code('ui.external.pyzmq', node.pyzmq, 'external-pyzmq'));
    if (node.command) rows.push(this.code('ui.external.peer', node.command, 'external-peer'));
    if (node.commandZws) rows.push(this.code('ui.external.peerZws', node.commandZws, 'external-peer-zws'));
    return h(doc, 'section', { class: 'external-node', attrs: { 'data-node': node.name } }, ...rows);
  }

  value(label, text, cls) {
    const doc = this.doc;
    return h(doc, 'div', { class: `external-row ${cls}` },
      h(doc, 'span', { class: 'external-label', t: this.i18n.message(label) }),
      h(doc, 'code', { class: 'external-value', text }),
      this.copyButton(text));
  }

  code(label, text, cls) {
    const doc = this.doc;
    return h(doc, 'div', { class: `external-row ${cls}` },
      h(doc, 'span', { class: 'external-label', t: this.i18n.message(label) }),
      this.copyButton(text),
      h(doc, 'pre', { class: 'external-code', text }));
  }

  copyButton(text) {
    return h(this.doc, 'button', { type: 'button', class: 'external-copy', t: this.i18n.message('ui.external.copy'), on: { click: () => this.copy(text) } });
  }
}
