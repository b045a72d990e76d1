// Octet table: the selected element drawn as the ZMTP specs draw it. One table
// per row of boxes: values, then offsets relative to the element's start, then
// field names (spanning a field's boxes). Colours by rule (core/rules.js).
//
// new OctetView(container, { selection })   — follows the shared selection.

import { h, clear, panel, onResize } from './dom.js';
import { layoutOctets, rangeLabel } from '../core/octets.js';
import { ruleColor } from '../core/rules.js';
import { elementTitle, infoLabel, fieldValueText, tableName } from '../core/labels.js';
import { previewHex } from '../core/bytes.js';
import { octets } from '../core/bytes.js';

export class OctetView {
  constructor(container, { i18n, selection }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.selection = selection;
    this.expand = false;
    this.maxShownOctets = 64;
    const d = this.doc;
    const p = panel(d, this.i18n.message('ui.panel.octets'), 'octets-panel');
    this.body = p.body;
    this.expandBox = h(d, 'input', { type: 'checkbox', on: { change: () => this.setExpand(this.expandBox.checked) } });
    this.moreButton = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.octets.more'), on: { click: () => this.showMore() } });
    p.tools.append(h(d, 'label', { class: 'check', tTitle: this.i18n.message('ui.octets.expand.title') }, this.expandBox, ' ', h(d, 'span', { t: this.i18n.message('ui.octets.expand') })), this.moreButton);
    clear(container);
    container.appendChild(p.root);
    this.body.addEventListener('click', (e) => {
      const cell = closestWithField(e.target, this.body);
      if (cell) this.selection.selectField(Number(cell.dataset.field));
    });
    this.cells = [];
    this.lastEvent = undefined;
    let lastWidth = 0;
    onResize(this.doc.defaultView, this.body, () => {
      if (Math.abs(this.body.clientWidth - lastWidth) > 20) {
        lastWidth = this.body.clientWidth;
        this.render();
      }
    });
    this.i18n.onChange(() => this.render());
    selection.subscribe((state, prev) => {
      if (state.event !== prev.event || state.index !== prev.index) this.render();
      else if (state.field !== prev.field) this.highlight();
    });
    this.render();
  }

  setExpand(on) {
    this.expand = !!on;
    this.expandBox.checked = this.expand;
    this.render();
  }

  showMore() {
    this.maxShownOctets *= 4;
    this.render();
  }

  render() {
    const d = this.doc;
    const { event, index } = this.selection.get();
    if (event !== this.lastEvent) this.maxShownOctets = 64;
    this.lastEvent = event;
    clear(this.body);
    this.cells = [];
    this.moreButton.hidden = true;
    if (!event) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t(index === null ? 'ui.octets.select' : 'ui.octets.loadingElement') }));
      return;
    }
    this.body.appendChild(h(d, 'div', { class: 'octets-title', text: elementTitle(this.i18n, event) }));
    if (event.kind === 'message') {
      // A message's fields are its frame bodies (elsewhere in the stream): draw them, else list the frames.
      const n = Array.isArray(event.frames) ? event.frames.length : 0;
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.tn('ui.octets.message', n) }));
      if (!Array.isArray(event.fields) || !event.fields.length) {
        this.body.appendChild(this.renderMessage(event));
        return;
      }
    }
    if (event.kind === 'expert') {
      this.body.appendChild(h(d, 'p', { class: `hint sev-${event.severity || 'note'}`, text: event.text || '' }));
      return;
    }
    if (event.kind === 'socket' || event.kind === 'peer') {
      // A topology's socket decision or application receive: not octets on the wire; its sequence row says it.
      this.body.appendChild(h(d, 'p', { class: 'hint', text: infoLabel(this.i18n, event) }));
      return;
    }
    if (event.kind === 'gap') {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.octets.gap', { octets: octets(this.i18n, event.length || 0) }) }));
      return;
    }
    if (!Array.isArray(event.fields) && !event.hex) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.loadingFields') }));
      return;
    }
    const layout = layoutOctets(this.i18n, event, { expand: this.expand, maxShownOctets: this.maxShownOctets, maxRowChars: this.rowChars() });
    for (const row of layout.rows) this.body.appendChild(this.renderRow(row));
    // The tables are drawn for eyes (values, offsets and names in three rows); a screen reader gets the same
    // fields as one list, each with its name, value and octets, in order.
    this.body.appendChild(this.renderFieldList(event, layout));
    this.moreButton.hidden = !layout.rows.some((r) => r.boxes.some((b) => b.more && b.format === 'more'));
    this.highlight();
  }

  renderRow(row) {
    const d = this.doc;
    const values = h(d, 'tr', { class: 'oct-values' });
    const offsets = h(d, 'tr', { class: 'oct-offsets' });
    const names = h(d, 'tr', { class: 'oct-names' });
    for (const b of row.boxes) {
      const color = ruleColor(b.rule);
      const td = h(d, 'td', { class: `oct-box fmt-${b.format}${b.empty ? ' empty' : ''}`, title: this.i18n.t(b.label ? 'ui.octets.box.at' : 'ui.octets.box', { name: this.nameOf(b), rule: b.rule || this.i18n.t('ui.octets.noRule'), range: b.label }) });
      td.dataset.field = String(b.field);
      td.style.backgroundColor = color.fill;
      td.style.borderColor = color.stroke;
      td.appendChild(h(d, 'span', { class: 'oct-text', text: b.text }));
      if (b.bytesText) td.appendChild(h(d, 'span', { class: 'oct-bytes', text: b.bytesText }));
      values.appendChild(td);
      const off = h(d, 'td', { class: 'oct-offset', text: b.label });
      off.dataset.field = String(b.field);
      offsets.appendChild(off);
      this.cells.push(td);
    }
    for (const g of row.groups) {
      const name = this.nameOf(g);
      const td = h(d, 'td', { class: 'oct-name', text: g.continued ? this.i18n.t('ui.octets.continued', { name }) : name, colSpan: g.count });
      td.dataset.field = String(g.field);
      td.style.color = ruleColor(g.rule).stroke;
      names.appendChild(td);
      this.cells.push(td);
    }
    return h(d, 'table', { class: 'oct-row', attrs: { 'aria-hidden': 'true' } }, h(d, 'tbody', {}, values, offsets, names));
  }

  /** A box's or a group's field as the table names it (the names row, titles). */
  nameOf(b) {
    const ev = this.lastEvent;
    const fields = ev && Array.isArray(ev.fields) ? ev.fields : [];
    return fields[b.field] ? tableName(this.i18n, ev, fields[b.field]) : b.name;
  }

  /** The element's fields as text a screen reader reads in order: "name: value, octets 1 - 5". */
  renderFieldList(event, layout) {
    const d = this.doc;
    const list = h(d, 'ol', { class: 'visually-hidden octets-fields', attrs: { 'aria-label': this.i18n.t('ui.octets.sr.list', { title: elementTitle(this.i18n, event) }) } });
    const boxesOf = new Map();
    for (const row of layout.rows) for (const b of row.boxes) if (!boxesOf.has(b.field)) boxesOf.set(b.field, b);
    const fields = Array.isArray(event.fields) && event.fields.length ? event.fields : [];
    let at = 0;
    fields.forEach((f, i) => {
      const length = Number(f.length) || 0;
      const rel = typeof f.offset === 'number' && typeof event.offset === 'number' ? f.offset - event.offset : at;
      at = rel + length;
      const value = fieldValueText(this.i18n, f, 64) || (boxesOf.get(i) ? boxesOf.get(i).text : '');
      const name = tableName(this.i18n, event, f) || f.rule || '?';
      const text = length ? this.i18n.t(length === 1 ? 'ui.octets.sr.octet' : 'ui.octets.sr.field', { name, value, range: rangeLabel(rel, length) }) : this.i18n.t('ui.octets.sr.empty', { name });
      list.appendChild(h(d, 'li', { text }));
    });
    if (!fields.length) for (const b of boxesOf.values()) list.appendChild(h(d, 'li', { text: this.i18n.t('ui.octets.sr.field', { name: b.name, value: b.text, range: b.label }) }));
    return list;
  }

  renderMessage(event) {
    const d = this.doc;
    const frames = Array.isArray(event.frames) ? event.frames : [];
    const list = h(d, 'ol', { class: 'message-frames' });
    frames.forEach((f, i) => {
      const size = typeof f === 'string' ? f.length / 2 : 0;
      list.appendChild(h(d, 'li', {}, h(d, 'span', { class: 'frame-size', text: `${octets(this.i18n, size)}${i < frames.length - 1 ? ', MORE' : ''}` }), ' ', h(d, 'code', { text: previewHex(f, 64) })));
    });
    return list;
  }

  /** How many monospace characters fit across the panel (rows wrap there). */
  rowChars() {
    const win = this.doc.defaultView;
    const width = this.body.clientWidth;
    if (!width || !win || !win.getComputedStyle) return undefined;
    const em = parseFloat(win.getComputedStyle(this.body).fontSize) || 15;
    return Math.max(24, Math.floor((width - 16) / (em * 0.62)));
  }

  highlight() {
    const { field } = this.selection.get();
    for (const c of this.cells) c.classList.toggle('selected', field !== null && Number(c.dataset.field) === field);
  }
}

function closestWithField(node, stop) {
  let n = node;
  while (n && n !== stop) {
    if (n.dataset && n.dataset.field !== undefined) return n;
    n = n.parentNode;
  }
  return null;
}
