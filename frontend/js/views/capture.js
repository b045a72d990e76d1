// Capture viewer pieces: upload (drop zone, file picker, progress), the
// connection list, the filter bar, and the packets / lower layers panel.

import { h, clear, setChildren, panel, tr } from './dom.js';
import { KINDS } from '../core/links.js';
import { humanSize, formatCount } from '../core/bytes.js';
import { severityName } from '../core/labels.js';

/**
 * new UploadView(container, { onFile(file) })
 *   .setUpload(loaded, total) .setDissect(percent, state, detail) .setError(text) .reset()
 */
export class UploadView {
  constructor(container, { i18n, onFile }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onFile = onFile;
    this.input = h(d, 'input', { type: 'file', accept: '.pcap,.pcapng,.cap,application/vnd.tcpdump.pcap', class: 'visually-hidden', attrs: { id: 'capture-file' } });
    this.input.addEventListener('change', () => {
      const f = this.input.files && this.input.files[0];
      if (f) this.onFile(f);
      this.input.value = '';
    });
    this.zone = h(
      d,
      'div',
      { class: 'drop-zone', tabIndex: 0, attrs: { role: 'button' } }, // (named by its text: what a reader sees is what is read)
      h(d, 'p', { class: 'drop-title', t: this.i18n.message('ui.upload.drop') }),
      h(d, 'p', { class: 'hint' }, h(d, 'span', { t: this.i18n.message('ui.upload.or') }), h(d, 'label', { class: 'link', attrs: { for: 'capture-file' }, t: this.i18n.message('ui.upload.file') }), h(d, 'span', { t: this.i18n.message('ui.upload.anyPort') })),
    );
    this.zone.addEventListener('click', (e) => {
      if (e.target === this.zone || (e.target.tagName && e.target.tagName.toUpperCase() === 'P')) this.input.click();
    });
    this.zone.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        this.input.click();
      }
    });
    for (const type of ['dragenter', 'dragover']) {
      this.zone.addEventListener(type, (e) => {
        e.preventDefault();
        this.zone.classList.add('over');
      });
    }
    this.zone.addEventListener('dragleave', () => this.zone.classList.remove('over'));
    this.zone.addEventListener('drop', (e) => {
      e.preventDefault();
      this.zone.classList.remove('over');
      const f = e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files[0];
      if (f) this.onFile(f);
    });
    this.uploadBar = progress(d, this.i18n.message('ui.upload.upload'));
    this.dissectBar = progress(d, this.i18n.message('ui.upload.dissection'));
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    clear(container);
    container.appendChild(h(d, 'div', { class: 'upload' }, this.zone, this.input, this.uploadBar.root, this.dissectBar.root, this.error));
    this.reset();
  }

  reset() {
    this.uploadBar.root.hidden = true;
    this.dissectBar.root.hidden = true;
    this.setError('');
  }

  setUpload(loaded, total) {
    this.uploadBar.root.hidden = false;
    const pct = total ? Math.min(100, (100 * loaded) / total) : 0;
    this.uploadBar.set(pct, this.i18n.t('ui.upload.of', { loaded: humanSize(loaded), total: humanSize(total || 0) }));
  }

  setDissect(percent, state, detail) {
    this.dissectBar.root.hidden = false;
    const pct = Math.max(0, Math.min(100, Number(percent) || 0));
    this.dissectBar.set(pct, `${this.i18n.t(state === 'done' ? 'ui.upload.done' : state === 'error' ? 'ui.upload.stopped' : 'ui.upload.dissecting')} ${pct.toFixed(0)}%${detail ? ' — ' + detail : ''}`);
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }
}

function progress(d, label) {
  const bar = h(d, 'progress', { max: 100, value: 0 });
  const text = h(d, 'span', { class: 'progress-text' });
  return {
    root: h(d, 'div', { class: 'progress' }, h(d, 'span', { class: 'progress-label', t: label }), bar, text),
    set(pct, words) {
      bar.value = pct;
      text.textContent = words;
    },
  };
}

const MAX_CONN_ROWS = 8;

// The filter's element kinds as a reader names them (lower case, as the kind key).
const KIND_IDS = { greeting: 'ui.filter.greeting', command: 'ui.filter.command', frame: 'ui.filter.frame', message: 'ui.filter.message', expert: 'ui.filter.expert', gap: 'ui.filter.gap' };

// The connection table's columns after '#'.
const CONNECTION_COLUMNS = ['ui.col.client', 'ui.col.server', 'ui.conns.zmtp', 'ui.col.mechanism', 'ui.conns.sockets', 'ui.conns.identities', 'ui.col.messages', 'ui.conns.octets', 'ui.kind.expert'];

// A stored capture's states (the server's summary `state`).
const CAPTURE_STATES = { dissecting: 'ui.upload.dissecting', done: 'ui.upload.done', error: 'ui.run.state.error' };
const captureState = (i18n, state) => (CAPTURE_STATES[state] ? i18n.t(CAPTURE_STATES[state]) : String(state || ''));

/**
 * The connections of a capture, one row each; click to open.
 * new ConnectionsView(container, { onSelect(conn) }) ; .setConnections(list, selected)
 */
export class ConnectionsView {
  constructor(container, { i18n, onSelect }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.onSelect = onSelect;
    const p = panel(this.doc, this.i18n.message('ui.panel.connections'), 'connections-panel');
    this.body = p.body;
    clear(container);
    container.appendChild(p.root);
  }

  setConnections(list, selected) {
    const d = this.doc;
    const pair = (o, fmt = (x) => x) => (o && typeof o === 'object' ? `${fmt(o.c2s ?? '–')} / ${fmt(o.s2c ?? '–')}` : '–');
    const head = h(d, 'tr', {}, h(d, 'th', { text: '#' }), ...CONNECTION_COLUMNS.map((id) => h(d, 'th', { t: this.i18n.message(id) })));
    const rows = list.map((c) => {
      const ex = c.expert || {};
      const tr = h(
        d,
        'tr',
        { class: String(c.conn) === String(selected) ? 'selected' : '', tabIndex: 0 },
        h(d, 'td', { text: String(c.conn) }),
        h(d, 'td', { class: 'mono', text: c.client || '–' }),
        h(d, 'td', { class: 'mono', text: c.server || '–' }),
        // A connection nothing could be read of as ZMTP: its expert note (rule `unreadable`) says why.
        h(d, 'td', c.zmtp === false ? { class: 'not-zmtp', t: this.i18n.message('ui.conns.notZmtp') } : { text: pair(c.versions) }),
        h(d, 'td', { text: c.mechanism || '–' }),
        h(d, 'td', { text: pair(c.socket_types) }),
        h(d, 'td', { class: 'mono', text: pair(c.identities, (x) => (x === '' ? '""' : x)) }),
        h(d, 'td', { text: pair(c.messages, formatCount) }),
        h(d, 'td', { text: pair(c.bytes, (n) => (typeof n === 'number' ? humanSize(n) : n)) }),
        h(d, 'td', {}, ...['error', 'warn', 'note'].filter((s) => ex[s]).map((s) => h(d, 'span', { class: `sev-badge sev-${s}`, text: `${ex[s]} ${severityName(this.i18n, s)}` }))),
      );
      tr.addEventListener('click', () => this.onSelect(String(c.conn)));
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') this.onSelect(String(c.conn));
      });
      return tr;
    });
    setChildren(this.body, h(d, 'div', { class: 'table-wrap' }, h(d, 'table', { class: 'connections' }, h(d, 'thead', {}, head), h(d, 'tbody', {}, rows))));
    // As tall as its rows, up to MAX_CONN_ROWS of them; more scroll.
    this.body.style.maxHeight = list.length > MAX_CONN_ROWS ? `${(MAX_CONN_ROWS + 1) * 1.75 + 0.5}rem` : 'none';
  }
}

/**
 * Filter: element kind and free text (command name, socket type, text in bodies), in every connection
 * unless "this connection only" is ticked; "Search further" goes on with a search the server answered before its end.
 * new FilterBar(container, { onChange({kind, q, scope}), onMore() }) ; .set({kind, q, scope}) ; .setCount(text, {more})
 * (text: a string, or a function that says it in the page's language: said again on a language switch)
 */
export class FilterBar {
  constructor(container, { i18n, onChange, onMore = () => {} }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.kind = h(d, 'select', { tLabel: this.i18n.message('ui.filter.kind') }, h(d, 'option', { value: '', t: this.i18n.message('ui.filter.allKinds') }), ...KINDS.map((k) => h(d, 'option', KIND_IDS[k] ? { value: k, t: this.i18n.message(KIND_IDS[k]) } : { value: k, text: k })));
    this.q = h(d, 'input', { type: 'search', tPlaceholder: this.i18n.message('ui.filter.placeholder'), tLabel: this.i18n.message('ui.filter.text') });
    this.scope = h(d, 'input', { type: 'checkbox', attrs: { id: 'filter-this-conn' } });
    const scopeLabel = h(d, 'label', { class: 'filter-scope', attrs: { for: 'filter-this-conn' } }, this.scope, ' ', h(d, 'span', { t: this.i18n.message('ui.filter.thisConn') }));
    this.count = h(d, 'span', { class: 'filter-count', attrs: { role: 'status' } });
    this.more = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.filter.further'), hidden: true, on: { click: () => onMore() } });
    const fire = () => onChange({ kind: this.kind.value, q: this.q.value.trim(), scope: this.scope.checked ? 'conn' : 'all' });
    this.kind.addEventListener('change', fire);
    this.scope.addEventListener('change', fire);
    let timer = null;
    this.q.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(fire, 300);
    });
    this.q.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        clearTimeout(timer);
        fire();
      }
    });
    clear(container);
    container.appendChild(h(d, 'form', { class: 'filter-bar', on: { submit: (e) => e.preventDefault() } }, this.kind, this.q, scopeLabel, this.count, this.more));
    this.countText = () => '';
    this.i18n.onChange(() => {
      this.count.textContent = this.countText();
    });
  }

  set({ kind = '', q = '', scope = 'all' }) {
    this.kind.value = kind;
    this.q.value = q;
    this.scope.checked = scope === 'conn';
  }

  setCount(text, { more = false } = {}) {
    this.countText = typeof text === 'function' ? text : () => text;
    this.count.textContent = this.countText();
    this.more.hidden = !more;
  }
}

/**
 * This client's captures on the server, to reopen or delete.
 * new CaptureListView(container, { onOpen(id), onDelete(id, name) }) ; .setCaptures(list, current) ; .setError(text)
 */
export class CaptureListView {
  constructor(container, { i18n, onOpen, onDelete }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onOpen = onOpen;
    this.onDelete = onDelete;
    this.list = h(d, 'ul', { class: 'capture-list' });
    this.note = h(d, 'p', { class: 'hint' });
    clear(container);
    container.append(h(d, 'h2', { t: this.i18n.message('ui.captures.title') }), this.note, this.list);
    this.setCaptures([]);
  }

  setCaptures(list, current = null) {
    const d = this.doc;
    tr(this.note, list.length ? this.i18n.message('ui.captures.count', { n: list.length }) : this.i18n.message('ui.captures.none'));
    setChildren(
      this.list,
      list.map((c) =>
        h(
          d,
          'li',
          { class: String(c.id) === String(current) ? 'current' : '' },
          h(d, 'button', { type: 'button', class: 'link capture-open', text: c.name || c.id, tTitle: this.i18n.message('ui.captures.open', { name: c.name || c.id }), on: { click: () => this.onOpen(String(c.id)) } }),
          h(d, 'span', { class: 'muted', text: ` ${humanSize(c.size || 0)} · ${captureState(this.i18n, c.state)}` }),
          h(d, 'button', { type: 'button', class: 'small danger capture-delete', t: this.i18n.message('ui.picker.delete'), tLabel: this.i18n.message('ui.picker.delete.label', { name: c.name || c.id }), on: { click: () => this.onDelete(String(c.id), c.name || c.id) } }),
        ),
      ),
    );
  }
}

/**
 * The packets that carried the selected element, and the lower layers of one.
 * new PacketsView(container, { onPacket(number) }) ; .setPackets(numbers) ; .setLayers(layers | {error} | null, number)
 */
export class PacketsView {
  constructor(container, { i18n, onPacket }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.onPacket = onPacket;
    const p = panel(this.doc, this.i18n.message('ui.panel.packets'), 'packets-panel');
    this.list = h(this.doc, 'div', { class: 'packet-list' });
    this.layers = h(this.doc, 'div', { class: 'layers' });
    p.body.append(this.list, this.layers);
    clear(container);
    container.appendChild(p.root);
    this.setPackets([]);
  }

  setPackets(numbers, current = null) {
    const d = this.doc;
    if (!numbers || !numbers.length) {
      setChildren(this.list, h(d, 'p', { class: 'hint', t: this.i18n.message('ui.packets.select') }));
      clear(this.layers);
      return;
    }
    setChildren(
      this.list,
      h(d, 'span', { class: 'muted', t: this.i18n.message(numbers.length === 1 ? 'ui.packets.carried.one' : 'ui.packets.carried.other') }),
      numbers.map((n) => h(d, 'button', { type: 'button', class: `small packet${n === current ? ' on' : ''}`, text: `#${n}`, on: { click: () => this.onPacket(n) } })),
    );
  }

  setLayers(result, number) {
    const d = this.doc;
    if (!result) {
      setChildren(this.layers, h(d, 'p', { class: 'hint', text: this.i18n.t('ui.packets.loading', { number }) }));
      return;
    }
    if (result.error) {
      setChildren(this.layers, h(d, 'p', { class: 'error', text: result.error }));
      return;
    }
    const layers = Array.isArray(result.layers) ? result.layers : [];
    const nodes = layers.map((layer, i) =>
      h(
        d,
        'details',
        { class: 'tree-node', open: i === layers.length - 1 },
        h(d, 'summary', { text: layerTitle(this.i18n, layer) }),
        (layer.fields || []).map((f) => h(d, 'div', { class: 'tree-leaf' }, h(d, 'span', { class: 'tf-name', text: this.i18n.t('ui.tree.name', { name: f.name }) }), h(d, 'span', { class: 'tf-value', text: String(f.value) }))),
      ),
    );
    setChildren(this.layers, h(d, 'p', { class: 'muted', text: this.i18n.t('ui.packets.frame', { number }) }), nodes);
    // Scroll the panel to the open (TCP) layer: in a short panel the collapsed layers above would hide it.
    const open = nodes[nodes.length - 1];
    const body = this.layers.parentNode;
    if (open && body && typeof open.getBoundingClientRect === 'function' && typeof body.getBoundingClientRect === 'function') {
      body.scrollTop += open.getBoundingClientRect().top - body.getBoundingClientRect().top;
    }
  }
}

const LAYER_NAMES = { eth: 'Ethernet II', ip: 'Internet Protocol', ipv6: 'Internet Protocol Version 6', tcp: 'Transmission Control Protocol', sll: 'Linux cooked capture' };

function layerTitle(i18n, layer) {
  if (layer.name === 'frame') return i18n.t('ui.packets.layerFrame');
  return LAYER_NAMES[layer.name] || String(layer.name || 'layer');
}
