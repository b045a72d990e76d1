// The playground's topology box (issue 19.2): the preset menu, and the custom topology editor (add a
// node, link two, set a node's options) with Save, Load and Share.
//
// new TopologyEditor(container, { onStartPreset(id, options), onStart(topology, options), onSave(topology),
//                                 onLoad(file), onShare(topology) })   options: { mode, autoplay }
//   .setPresets(presets)  .setTopology(topology)  .topology  .setError(text)  .setNote(text)  .setBusy(bool)

import { messages } from '../core/i18n.js';
import { h, clear, setChildren } from './dom.js';
import { SOCKET_TYPES } from '../core/links.js';
import { addNode, addLink, removeNode, removeLink, setNode, emptyTopology } from '../core/topology-edit.js';

// The words of this box, in one place (for the catalogs of issue 21).
const EDITOR_IDS = {
  preset: 'ui.topoEditor.preset',
  presetNone: 'ui.topoEditor.presetNone',
  startPreset: 'ui.topoEditor.startPreset',
  mode: 'ui.form.peers',
  simulated: 'ui.form.simulated',
  tcp: 'ui.form.tcp',
  autoplay: 'ui.topoEditor.autoplay',
  custom: 'ui.topoEditor.custom',
  fromPreset: 'ui.topoEditor.fromPreset',
  clearAll: 'ui.topoEditor.clearAll',
  nodes: 'ui.topoEditor.nodes',
  links: 'ui.topoEditor.links',
  name: 'ui.topoEditor.name',
  type: 'ui.form.socket',
  sndhwm: 'SNDHWM',
  rcvhwm: 'RCVHWM',
  identity: 'ui.form.identity',
  libzmq: 'ui.form.libzmq',
  libzmqHelp: 'ui.form.libzmq.help',
  echo: 'ui.topoEditor.echo',
  external: 'ui.topoEditor.external',
  externalHelp: 'ui.topoEditor.external.help',
  subscribe: 'ui.topoEditor.subscribe',
  subscribeEvery: 'ui.form.topic.every',
  subscribeNone: 'ui.form.topic.none',
  recv: 'ui.topoEditor.recv',
  recvModes: { auto: 'ui.topoEditor.recv.auto', manual: 'ui.topoEditor.recv.manual', slow: 'ui.topoEditor.recv.slow' },
  remove: 'ui.topoEditor.remove',
  addNode: 'ui.topoEditor.addNode',
  addLink: 'ui.topoEditor.addLink',
  connects: 'ui.topoEditor.connects',
  binds: 'ui.topoEditor.binds',
  noNodes: 'ui.topoEditor.noNodes',
  noLinks: 'ui.topoEditor.noLinks',
  start: 'ui.topoEditor.start',
  save: 'ui.topoEditor.save',
  load: 'ui.topoEditor.load',
  share: 'ui.topoEditor.share',
  starting: 'ui.form.starting',
};

const SLOW = 0.5;
const ECHO_TYPES = ['REP', 'ROUTER', 'DEALER', 'PAIR']; // the sockets whose application may echo (peers.topology)

/** A node's subscriptions as a list (a file may give one prefix as a string); none when it gives nothing. */
function subscriptions(node) {
  if (Array.isArray(node.subscribe)) return node.subscribe.map(String);
  return typeof node.subscribe === 'string' ? [node.subscribe] : [];
}

function recvMode(node) {
  if (node.recv === 'manual') return 'manual';
  if (node.recv && typeof node.recv === 'object') return 'slow';
  if (typeof node.recv === 'number') return 'slow';
  return 'auto';
}

export class TopologyEditor {
  constructor(container, { i18n, onStartPreset = () => {}, onStart = () => {}, onSave = () => {}, onLoad = () => {}, onShare = () => {} } = {}) {
    this.i18n = i18n;
    this.T = messages(i18n, EDITOR_IDS); // (its words, read when used: in the language in force)
    const d = (this.doc = container.ownerDocument);
    this.presets = [];
    this.topo = emptyTopology();
    const { T } = this;
    this.menu = h(d, 'select', { id: 'preset-menu', attrs: { 'aria-label': T.preset } });
    this.menu.addEventListener('change', () => this.describePreset());
    this.about = h(d, 'p', { class: 'hint preset-about' });
    this.mode = h(d, 'select', { attrs: { 'aria-label': T.mode } }, h(d, 'option', { value: 'simulated', text: T.simulated }), h(d, 'option', { value: 'tcp', text: T.tcp }));
    this.autoplay = h(d, 'input', { type: 'checkbox', checked: true });
    this.startPreset = h(d, 'button', { type: 'button', class: 'primary', id: 'start-preset', text: T.startPreset, on: { click: () => this.menu.value && onStartPreset(this.menu.value, this.options()) } });
    this.nodeList = h(d, 'div', { class: 'topo-nodes' });
    this.linkList = h(d, 'div', { class: 'topo-links' });
    this.newType = h(d, 'select', { attrs: { 'aria-label': T.type } }, SOCKET_TYPES.map((t) => h(d, 'option', { value: t, text: t })));
    this.file = h(d, 'input', { type: 'file', accept: '.json,application/json', hidden: true });
    this.file.addEventListener('change', () => {
      const f = this.file.files && this.file.files[0];
      if (f) onLoad(f);
      this.file.value = '';
    });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.note = h(d, 'p', { class: 'hint topo-note', hidden: true, attrs: { 'aria-live': 'polite' } });
    this.shareUrl = h(d, 'input', { type: 'text', id: 'share-url', readOnly: true, hidden: true, attrs: { 'aria-label': this.T.share } });
    this.start = h(d, 'button', { type: 'button', class: 'primary', id: 'start-topology', text: T.start, on: { click: () => onStart(this.topology, this.options()) } });
    this.custom = h(d, 'details', { class: 'topo-editor' },
      h(d, 'summary', { text: T.custom }),
      h(d, 'div', { class: 'ctl-row' },
        h(d, 'button', { type: 'button', id: 'edit-preset', text: T.fromPreset, on: { click: () => this.editPreset() } }),
        h(d, 'button', { type: 'button', text: T.clearAll, on: { click: () => this.setTopology(emptyTopology()) } })),
      h(d, 'h3', { text: T.nodes }), this.nodeList,
      h(d, 'div', { class: 'ctl-row' }, this.newType, h(d, 'button', { type: 'button', id: 'add-node', text: T.addNode, on: { click: () => this.change(addNode(this.topo, this.newType.value)) } })),
      h(d, 'h3', { text: T.links }), this.linkList,
      h(d, 'div', { class: 'ctl-row' }, h(d, 'button', { type: 'button', id: 'add-link', text: T.addLink, on: { click: () => this.addLink() } })),
      h(d, 'div', { class: 'ctl-row' }, this.start,
        h(d, 'button', { type: 'button', id: 'save-topology', text: T.save, on: { click: () => onSave(this.topology) } }),
        h(d, 'button', { type: 'button', id: 'load-topology', text: T.load, on: { click: () => this.file.click() } }),
        h(d, 'button', { type: 'button', id: 'share-topology', text: T.share, on: { click: () => onShare(this.topology) } })),
      this.file);
    const root = h(d, 'div', { class: 'topology-setup' },
      h(d, 'label', { class: 'field' }, h(d, 'span', { class: 'field-label', text: T.preset }), this.menu),
      this.about,
      h(d, 'div', { class: 'ctl-row' }, h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', text: T.mode }), this.mode),
        h(d, 'label', { class: 'check' }, this.autoplay, ` ${T.autoplay}`)),
      h(d, 'div', { class: 'ctl-row' }, this.startPreset),
      this.custom, this.error, this.note, this.shareUrl);
    this.root = root;
    this.mode.addEventListener('change', () => this.syncMode());
    clear(container);
    container.appendChild(root);
    this.render();
    this.syncMode();
  }

  /** A real libzmq socket is only offered for real TCP sessions. */
  syncMode() {
    const tcp = this.mode.value === 'tcp';
    this.root.classList.toggle('simulated', !tcp);
    this.root.classList.toggle('tcp', tcp);
  }

  options() {
    return { mode: this.mode.value === 'tcp' ? 'tcp' : 'simulated', autoplay: !!this.autoplay.checked };
  }

  /** The server's presets ({id, title, description, topology}). */
  setPresets(presets) {
    const d = this.doc;
    this.presets = Array.isArray(presets) ? presets : [];
    clear(this.menu);
    if (!this.presets.length) this.menu.appendChild(h(d, 'option', { value: '', text: this.T.presetNone }));
    for (const p of this.presets) this.menu.appendChild(h(d, 'option', { value: p.id, text: p.title || p.id }));
    this.startPreset.disabled = !this.presets.length;
    this.describePreset();
  }

  describePreset() {
    const p = this.presets.find((x) => x.id === this.menu.value);
    this.about.textContent = p ? p.description || '' : '';
  }

  /** Copies the chosen preset's topology (and script) into the editor. */
  editPreset() {
    const p = this.presets.find((x) => x.id === this.menu.value);
    if (!p) return;
    const t = JSON.parse(JSON.stringify(p.topology));
    if (Array.isArray(p.script) && p.script.length) t.script = p.script;
    this.setTopology({ ...emptyTopology(this.options().mode), ...t });
  }

  /** The topology being edited. */
  get topology() {
    return { ...this.topo, mode: this.options().mode };
  }

  setTopology(topology) {
    this.topo = { ...emptyTopology(), ...topology };
    if (topology.mode === 'tcp' || topology.mode === 'simulated') this.mode.value = topology.mode;
    this.syncMode();
    this.custom.open = true;
    this.render();
  }

  change(topology) {
    this.topo = topology;
    this.render();
  }

  addLink() {
    const names = this.topo.nodes.map((n) => n.name);
    if (names.length < 2) return;
    // The next pair not linked yet: the last node connects to the first, by default.
    const bind = names[0];
    const connect = names.find((n) => n !== bind && !this.topo.links.some((l) => l.connect === n && l.bind === bind)) || names[names.length - 1];
    this.change(addLink(this.topo, connect, bind));
  }

  render() {
    const d = this.doc;
    const { T } = this;
    const names = this.topo.nodes.map((n) => n.name);
    if (!this.topo.nodes.length) setChildren(this.nodeList, h(d, 'p', { class: 'muted', text: T.noNodes }));
    else {
      setChildren(this.nodeList, this.topo.nodes.map((n) => this.nodeRow(n)));
    }
    if (!this.topo.links.length) setChildren(this.linkList, h(d, 'p', { class: 'muted', text: T.noLinks }));
    else {
      setChildren(this.linkList, this.topo.links.map((l, i) => {
        const pick = (value) => {
          const sel = h(d, 'select', {}, names.map((name) => h(d, 'option', { value: name, text: name })));
          sel.value = value;
          return sel;
        };
        const connect = pick(l.connect);
        const bind = pick(l.bind);
        const update = () => {
          const links = this.topo.links.map((x, k) => (k === i ? { ...x, connect: connect.value, bind: bind.value } : x));
          this.topo = { ...this.topo, links };
        };
        connect.addEventListener('change', update);
        bind.addEventListener('change', update);
        const row = h(d, 'div', { class: 'topo-link-row' }, connect, h(d, 'span', { class: 'muted', text: ` ${T.connects} ` }), bind, h(d, 'span', { class: 'muted', text: ` ${T.binds}` }),
          h(d, 'button', { type: 'button', class: 'small', text: '✕', title: T.remove, on: { click: () => this.change(removeLink(this.topo, i)) } }));
        row.dataset.link = String(i);
        return row;
      }));
    }
    this.start.disabled = !this.topo.nodes.length;
  }

  nodeRow(n) {
    const d = this.doc;
    const { T } = this;
    let name = n.name;
    const set = (patch) => {
      this.topo = setNode(this.topo, name, patch);
      if (patch.name) name = patch.name;
    };
    const nameIn = h(d, 'input', { type: 'text', value: n.name, class: 'topo-name', attrs: { 'aria-label': T.name, maxlength: 32 } });
    nameIn.addEventListener('change', () => {
      const v = nameIn.value.trim();
      if (v && v !== name && !this.topo.nodes.some((x) => x.name === v)) {
        set({ name: v });
        this.render();
      } else nameIn.value = name;
    });
    const type = h(d, 'select', { attrs: { 'aria-label': T.type } }, SOCKET_TYPES.map((t) => h(d, 'option', { value: t, text: t })));
    type.value = n.type;
    const num = (key, label) => {
      const el = h(d, 'input', { type: 'number', min: 0, max: 1000000, step: 1, value: n[key] ?? 1000, class: 'topo-hwm', title: label, attrs: { 'aria-label': label } });
      el.addEventListener('change', () => set({ [key]: Math.max(0, Math.floor(Number(el.value) || 0)) }));
      return h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', text: label }), el);
    };
    // The prefixes typed, and the empty prefix (every message) as a box of its own: an empty field is no
    // subscription at all, and such a SUB receives nothing (as in libzmq), which the row says.
    const topics = subscriptions(n);
    const sub = h(d, 'input', { type: 'text', value: topics.filter((x) => x !== '').join(', '), attrs: { 'aria-label': T.subscribe }, placeholder: T.subscribe });
    const every = h(d, 'input', { type: 'checkbox', checked: topics.includes(''), attrs: { 'data-option': 'subscribe-every' } });
    const none = h(d, 'p', { class: 'hint topic-none', text: T.subscribeNone });
    const syncSub = () => {
      const list = [...(every.checked ? [''] : []), ...sub.value.split(',').map((x) => x.trim()).filter((x) => x)];
      set({ subscribe: list });
      none.hidden = list.length > 0;
    };
    sub.addEventListener('change', syncSub);
    every.addEventListener('change', syncSub);
    none.hidden = topics.length > 0;
    const subField = h(d, 'div', { class: 'topo-subscribe' },
      h(d, 'label', { class: 'field' }, h(d, 'span', { class: 'field-label', text: T.subscribe }), sub),
      h(d, 'label', { class: 'check' }, every, ` ${T.subscribeEvery}`), none);
    const ident = h(d, 'input', { type: 'text', value: n.identity || '', attrs: { 'aria-label': T.identity }, class: 'topo-ident' });
    ident.addEventListener('change', () => set({ identity: ident.value }));
    const recv = h(d, 'select', { attrs: { 'aria-label': T.recv } }, Object.entries(T.recvModes).map(([v, text]) => h(d, 'option', { value: v, text })));
    recv.value = recvMode(n);
    recv.addEventListener('change', () => set({ recv: recv.value === 'slow' ? { every: SLOW } : recv.value }));
    const check = (key, label, help) => {
      const box = h(d, 'input', { type: 'checkbox', checked: !!n[key], attrs: { 'data-option': key } });
      box.addEventListener('change', () => set({ [key]: box.checked }));
      return h(d, 'label', { class: 'check', title: help }, box, ` ${label}`);
    };
    const libzmq = check('libzmq', T.libzmq, T.libzmqHelp);
    libzmq.classList.add('topo-libzmq');
    const echo = check('echo', T.echo);
    // An external node: a program of the user's is it (real sessions only); the lab runs no socket for it, so
    // nothing of its application's (echo, libzmq, how it reads) stays.
    const external = check('external', T.external, T.externalHelp);
    external.classList.add('topo-libzmq');
    external.querySelector('input').addEventListener('change', (e) => {
      if (!e.target.checked) return;
      set({ external: true, echo: false, libzmq: false, recv: 'auto' });
      for (const box of [echo, libzmq]) box.querySelector('input').checked = false;
      recv.value = 'auto';
    });
    const syncType = () => {
      subField.hidden = !['SUB', 'XSUB'].includes(type.value);
      echo.hidden = !ECHO_TYPES.includes(type.value);
    };
    type.addEventListener('change', () => {
      set({ type: type.value });
      syncType();
    });
    syncType();
    const row = h(d, 'div', { class: 'topo-node-row' },
      h(d, 'div', { class: 'ctl-row' }, nameIn, type,
        h(d, 'button', { type: 'button', class: 'small', text: '✕', title: T.remove, on: { click: () => this.change(removeNode(this.topo, name)) } })),
      h(d, 'div', { class: 'ctl-row' }, num('sndhwm', T.sndhwm), num('rcvhwm', T.rcvhwm)),
      h(d, 'div', { class: 'ctl-row' }, h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', text: T.identity }), ident),
        h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', text: T.recv }), recv)),
      subField,
      h(d, 'div', { class: 'ctl-row' }, echo, libzmq, external));
    row.dataset.node = n.name;
    return row;
  }

  setBusy(busy) {
    this.start.disabled = !!busy || !this.topo.nodes.length;
    this.startPreset.disabled = !!busy || !this.presets.length;
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }

  setNote(text) {
    this.note.textContent = text || '';
    this.note.hidden = !text;
  }

  /** Shows the share link (selected, to copy by hand when the clipboard says no). */
  setShareUrl(url) {
    this.shareUrl.value = url || '';
    this.shareUrl.hidden = !url;
    if (url && this.shareUrl.select) this.shareUrl.select();
  }
}
