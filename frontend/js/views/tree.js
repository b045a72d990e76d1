// Details tree, like Wireshark's packet details: the element, its summary keys,
// and its fields (name: value, offset, length), collapsible.
//
// new TreeView(container, { selection })   — follows the shared selection.

import { h, clear, panel } from './dom.js';
import { elementTitle, fieldValueText } from '../core/labels.js';
import { ruleColor } from '../core/rules.js';
import { previewHex } from '../core/bytes.js';
import { absoluteTime, relativeTime } from '../core/times.js';

// Kind keys shown under "Summary" (everything but the framing keys and fields).
const SKIP = new Set(['conn', 'dir', 'offset', 'length', 'kind', 'fields', 'hex', 'seq', 't', 'ts', 'packets', 'index']);
const HEX_KEYS = new Set(['identity', 'context', 'topic', 'body']);

function summaryValue(key, value) {
  if (HEX_KEYS.has(key) && typeof value === 'string') return `${previewHex(value, 48)} (${value.length / 2} octets)`;
  if (key === 'ttl' && typeof value === 'number') return `${value} (${(value / 10).toFixed(1)} s)`;
  if (Array.isArray(value)) return `[${value.length}]`;
  if (value && typeof value === 'object') return '';
  return String(value);
}

export class TreeView {
  constructor(container, { selection }) {
    this.doc = container.ownerDocument;
    this.selection = selection;
    const p = panel(this.doc, 'Details', 'tree-panel');
    this.body = p.body;
    this.open = { summary: true, fields: true };
    clear(container);
    container.appendChild(p.root);
    this.rows = [];
    this.timeBase = null;
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
      this.body.appendChild(h(d, 'p', { class: 'hint', text: index === null ? 'Select an element.' : 'Loading…' }));
      return;
    }
    const info = [
      leaf(d, 'Direction', event.dir === 's2c' ? 'server → client (s2c)' : 'client → server (c2s)'),
      leaf(d, 'Stream offset', String(event.offset)),
      leaf(d, 'Length', `${event.length} octet${event.length === 1 ? '' : 's'}`),
    ];
    if (typeof event.ts === 'number') {
      // As the sequence shows it: seconds since the first packet; the UTC time on hover.
      const time = leaf(d, 'Time', this.timeBase !== null ? `${relativeTime(event.ts, this.timeBase)} s` : absoluteTime(event.ts));
      time.setAttribute('title', this.timeBase !== null ? `${absoluteTime(event.ts)} (${relativeTime(event.ts, this.timeBase)} s after the first packet)` : absoluteTime(event.ts));
      info.push(time);
    }
    if (typeof event.t === 'number') info.push(leaf(d, 'Time', `${event.t.toFixed(3)} s`));
    if (Array.isArray(event.packets) && event.packets.length) info.push(leaf(d, 'Packets', event.packets.join(', ')));
    if (typeof event.seq === 'number') info.push(leaf(d, 'Session seq', String(event.seq)));
    const summary = [];
    for (const [k, v] of Object.entries(event)) {
      if (SKIP.has(k)) continue;
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        summary.push(this.node(k, `sum-${k}`, Object.entries(v).map(([pk, pv]) => leaf(d, pk, String(pv)))));
      } else if (Array.isArray(v)) {
        summary.push(this.node(`${k} [${v.length}]`, `sum-${k}`, v.map((item, i) => leaf(d, `${i + 1}`, typeof item === 'string' ? previewHex(item, 64) : String(item)))));
      } else summary.push(leaf(d, k, summaryValue(k, v)));
    }
    const root = [this.node(elementTitle(event), 'element', info)];
    if (summary.length) root.push(this.node('Summary', 'summary', summary));
    if (Array.isArray(event.fields)) {
      const fields = event.fields.map((f, i) => {
        const row = h(d, 'div', { class: 'tree-field', tabIndex: 0 });
        row.dataset.field = String(i);
        row.append(
          h(d, 'span', { class: 'swatch', style: { backgroundColor: ruleColor(f.rule).strong } }),
          h(d, 'span', { class: 'tf-name', text: `${f.name}: ` }),
          h(d, 'span', { class: 'tf-value', text: fieldValueText(f) }),
          h(d, 'span', { class: 'tf-where', text: ` [offset ${f.offset - event.offset}, ${f.length} octet${f.length === 1 ? '' : 's'}]` }),
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
      root.push(this.node(`Fields (${fields.length})`, 'fields', fields));
    } else if (event.kind !== 'message' && event.kind !== 'expert' && event.kind !== 'gap') {
      root.push(h(d, 'p', { class: 'hint', text: 'Loading fields…' }));
    }
    this.body.append(...root);
    this.highlight(false);
  }

  highlight(scroll) {
    const { field } = this.selection.get();
    for (const row of this.rows) {
      const on = field !== null && Number(row.dataset.field) === field;
      row.classList.toggle('selected', on);
      if (on && scroll && row.scrollIntoView) row.scrollIntoView({ block: 'nearest' });
    }
  }
}

function leaf(d, name, value) {
  return h(d, 'div', { class: 'tree-leaf' }, h(d, 'span', { class: 'tf-name', text: `${name}: ` }), h(d, 'span', { class: 'tf-value', text: value }));
}
