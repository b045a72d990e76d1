// Details tree, like Wireshark's packet details: the element, its summary keys,
// and its fields (name: value, offset, length), collapsible.
//
// new TreeView(container, { selection })   — follows the shared selection.

import { h, clear, panel, revealInPane } from './dom.js';
import { elementTitle, fieldValueText } from '../core/labels.js';
import { ruleColor } from '../core/rules.js';
import { absoluteTime, relativeTime } from '../core/times.js';
import { previewHex, octets } from '../core/bytes.js';
import { dirName, fieldName } from '../core/labels.js';

// Kind keys shown under "Summary" (everything but the framing keys and fields).
const SKIP = new Set(['conn', 'dir', 'offset', 'length', 'kind', 'fields', 'hex', 'seq', 't', 'ts', 'packets', 'index']);
const HEX_KEYS = new Set(['identity', 'context', 'topic', 'body']);

// The event contract's kind keys, named in the page's language (a key not here shows as it is; wire names
// such as as_server, ttl, more and long stay).
const KEY_IDS = {
  version: 'ui.key.version', mechanism: 'ui.key.mechanism', socket_type: 'ui.key.socketType', identity: 'ui.key.identity',
  name: 'ui.key.name', properties: 'ui.key.properties', reason: 'ui.key.reason', context: 'ui.key.context', topic: 'ui.key.topic',
  username: 'ui.key.username', password: 'ui.key.password', group: 'ui.key.group', size: 'ui.key.size', body: 'ui.key.body',
  frames: 'ui.key.frames', truncated: 'ui.key.truncated', severity: 'ui.key.severity', text: 'ui.key.text', rule: 'ui.key.rule',
  encrypted: 'ui.key.encrypted', decrypted: 'ui.key.decrypted', box_size: 'ui.key.boxSize',
  // A topology's socket decision and application read (issue 19's keys).
  node: 'ui.key.node', what: 'ui.key.what', peer: 'ui.key.peer', msg: 'ui.key.msg', reply_to: 'ui.key.replyTo',
  depth: 'ui.key.depth', hwm: 'ui.key.hwm', args: 'ui.key.args', libzmq: 'ui.key.libzmq',
};
const keyName = (i18n, k) => (KEY_IDS[k] ? i18n.t(KEY_IDS[k]) : k);

function summaryValue(i18n, key, value) {
  if (HEX_KEYS.has(key) && typeof value === 'string') return `${previewHex(value, 48)} (${octets(i18n, value.length / 2)})`;
  if (key === 'ttl' && typeof value === 'number') return i18n.t('ui.tree.ttl', { value, seconds: (value / 10).toFixed(1) });
  if (Array.isArray(value)) return `[${value.length}]`;
  if (typeof value === 'boolean') return i18n.t(value ? 'ui.tree.true' : 'ui.tree.false'); // (more: true; 是 in Chinese)
  if (value && typeof value === 'object') return '';
  return String(value);
}

export class TreeView {
  constructor(container, { i18n, selection }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.selection = selection;
    const p = panel(this.doc, this.i18n.message('ui.panel.details'), 'tree-panel');
    this.body = p.body;
    this.open = { summary: true, fields: true };
    clear(container);
    container.appendChild(p.root);
    this.rows = [];
    this.timeBase = null;
    this.i18n.onChange(() => this.render());
    selection.subscribe((state, prev) => {
      if (state.event !== prev.event || state.index !== prev.index) this.render();
      else if (state.field !== prev.field) this.highlight(true);
    });
    this.render();
  }

  /** Times are shown relative to `t` (the first packet, as in the sequence); null: absolute. */
  setTimeBase(t) {
    this.timeBase = typeof t === 'number' ? t : null;
    this.render();
  }

  node(title, key, children) {
    const d = this.doc;
    const det = h(d, 'details', { class: 'tree-node', open: this.open[key] !== false }, h(d, 'summary', { text: title }), ...children);
    det.addEventListener('toggle', () => {
      this.open[key] = det.open;
    });
    return det;
  }

  render() {
    const d = this.doc;
    const { event, index } = this.selection.get();
    clear(this.body);
    this.rows = [];
    if (!event) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t(index === null ? 'ui.tree.select' : 'ui.loading') }));
      return;
    }
    // (A topology's socket decision or application receive has no direction, offset or length: not on the wire.)
    const info = typeof event.offset !== 'number' ? [] : [
      leaf(this.i18n, d, this.i18n.t('ui.tree.direction'), `${dirName(this.i18n, event.dir)} (${event.dir === 's2c' ? 's2c' : 'c2s'})`),
      leaf(this.i18n, d, this.i18n.t('ui.tree.offset'), String(event.offset)),
      leaf(this.i18n, d, this.i18n.t('ui.tree.length'), octets(this.i18n, event.length)),
    ];
    if (typeof event.ts === 'number') {
      // As the sequence shows it: seconds since the first packet; the UTC time on hover.
      const time = leaf(this.i18n, d, this.i18n.t('ui.tree.time'), this.timeBase !== null ? this.i18n.t('ui.tree.seconds', { s: relativeTime(event.ts, this.timeBase) }) : absoluteTime(event.ts));
      time.setAttribute('title', this.timeBase !== null ? this.i18n.t('ui.tree.timeAfter', { time: absoluteTime(event.ts), s: relativeTime(event.ts, this.timeBase) }) : absoluteTime(event.ts));
      info.push(time);
    }
    if (typeof event.t === 'number') info.push(leaf(this.i18n, d, this.i18n.t('ui.tree.time'), this.i18n.t('ui.tree.seconds', { s: event.t.toFixed(3) })));
    if (Array.isArray(event.packets) && event.packets.length) info.push(leaf(this.i18n, d, this.i18n.t('ui.tree.packets'), event.packets.join(', ')));
    if (typeof event.seq === 'number') info.push(leaf(this.i18n, d, this.i18n.t('ui.tree.seq'), String(event.seq)));
    const summary = [];
    for (const [k, v] of Object.entries(event)) {
      if (SKIP.has(k)) continue;
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        summary.push(this.node(keyName(this.i18n, k), `sum-${k}`, Object.entries(v).map(([pk, pv]) => leaf(this.i18n, d, pk, String(pv)))));
      } else if (Array.isArray(v)) {
        summary.push(this.node(`${keyName(this.i18n, k)} [${v.length}]`, `sum-${k}`, v.map((item, i) => leaf(this.i18n, d, `${i + 1}`, typeof item === 'string' ? previewHex(item, 64) : String(item)))));
      } else summary.push(leaf(this.i18n, d, keyName(this.i18n, k), summaryValue(this.i18n, k, v)));
    }
    const root = [this.node(elementTitle(this.i18n, event), 'element', info)];
    if (summary.length) root.push(this.node(this.i18n.t('ui.tree.summary'), 'summary', summary));
    if (Array.isArray(event.fields)) {
      const fields = event.fields.map((f, i) => {
        const row = h(d, 'div', { class: 'tree-field', tabIndex: 0 });
        row.dataset.field = String(i);
        row.append(
          h(d, 'span', { class: 'swatch', style: { backgroundColor: ruleColor(f.rule).strong } }),
          h(d, 'span', { class: 'tf-name', text: this.i18n.t('ui.tree.name', { name: fieldName(this.i18n, f) }) }),
          h(d, 'span', { class: 'tf-value', text: fieldValueText(this.i18n, f) }),
          h(d, 'span', { class: 'tf-where', text: this.i18n.t('ui.tree.where', { offset: f.offset - event.offset, octets: octets(this.i18n, f.length) }) }),
        );
        row.setAttribute('title', `${f.rule || ''}${f.note ? ' — ' + f.note : ''}`);
        row.addEventListener('click', () => this.selection.selectField(i));
        row.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            this.selection.selectField(i);
          }
        });
        this.rows.push(row);
        return row;
      });
      root.push(this.node(this.i18n.t('ui.tree.fields', { n: fields.length }), 'fields', fields));
    } else if (!['message', 'expert', 'gap', 'socket', 'peer'].includes(event.kind)) {
      root.push(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.loadingFields') }));
    }
    this.body.append(...root);
    this.highlight(false);
  }

  highlight(scroll) {
    const { field } = this.selection.get();
    for (const row of this.rows) {
      const on = field !== null && Number(row.dataset.field) === field;
      row.classList.toggle('selected', on);
      if (on && scroll) revealInPane(row);
    }
  }
}

function leaf(i18n, d, name, value) {
  return h(d, 'div', { class: 'tree-leaf' }, h(d, 'span', { class: 'tf-name', text: i18n.t('ui.tree.name', { name }) }), h(d, 'span', { class: 'tf-value', text: value }));
}
