// Hex dump: both directions of a connection interleaved in stream order,
// coloured per direction as Wireshark's Follow TCP Stream does (client red-ish,
// server blue-ish and indented). Offset, hex and ASCII columns; the selected
// element's bytes and the selected field's bytes are highlighted. Virtual: only
// the visible lines are built. An "ASCII" mode shows the same stream as text, and a
// "UTF-8" mode as text decoded as UTF-8 (a character in the cell of its first octet).
//
// new HexView(container, { selection, onPick(index, dir, offset), copyText(text), title })
//   .setChunks(chunks, note)   chunks from core/hexdump.js buildChunks()

import { h, clear, panel, frameThrottle, onResize, tr } from './dom.js';
import { formatCount } from '../core/bytes.js';
import { layoutLines, toFollowText, fittingBytesPerLine, BYTES_PER_LINE } from '../core/hexdump.js';
import { visibleRange, contentHeight, scrollToReveal } from '../core/virtual.js';
import { byteHex, isPrintable, utf8Cells } from '../core/bytes.js';

const LINE_HEIGHT = 20;

export class HexView {
  constructor(container, { i18n, selection, onPick = () => {}, copyText = null, title = 'ui.panel.hex' }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.win = this.doc.defaultView;
    this.selection = selection;
    this.onPick = onPick;
    this.copyText = copyText;
    this.mode = 'hex';
    this.lineHeight = LINE_HEIGHT;
    this.chunks = [];
    this.perLine = BYTES_PER_LINE;
    this.lines = layoutLines([], this.perLine);
    const d = this.doc;
    const p = panel(d, this.i18n.message(title), 'hex-panel');
    this.noteEl = h(d, 'span', { class: 'panel-note' });
    this.modeButtons = {
      hex: h(d, 'button', { type: 'button', class: 'small toggle on', text: 'Hex', on: { click: () => this.setMode('hex') } }),
      ascii: h(d, 'button', { type: 'button', class: 'small toggle', text: 'ASCII', on: { click: () => this.setMode('ascii') } }),
      utf8: h(d, 'button', { type: 'button', class: 'small toggle', text: 'UTF-8', tTitle: this.i18n.message('ui.hex.utf8.title'), on: { click: () => this.setMode('utf8') } }),
    };
    this.connEl = h(d, 'span', { class: 'hex-conn', hidden: true });
    this.legends = { c2s: h(d, 'span', { class: 'legend c2s', t: this.i18n.message('ui.dir.c2s') }), s2c: h(d, 'span', { class: 'legend s2c', t: this.i18n.message('ui.dir.s2c') }) };
    p.tools.append(
      this.noteEl,
      this.connEl,
      this.legends.c2s,
      this.legends.s2c,
      this.modeButtons.hex,
      this.modeButtons.ascii,
      this.modeButtons.utf8,
    );
    if (copyText) {
      p.tools.append(h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.hex.copy'), tTitle: this.i18n.message('ui.hex.copy.title'), on: { click: () => this.copy() } }));
    }
    this.spacer = h(d, 'div', { class: 'hex-spacer' });
    this.linesEl = h(d, 'div', { class: 'hex-lines' });
    // Ten characters in the lines' font, never shown: how many octets a line can hold at this width.
    this.probe = h(d, 'span', { class: 'hex-probe', text: '0000000000', attrs: { 'aria-hidden': 'true' } });
    // Where the viewport stands, kept so that a redraw reads no layout (see the sequence view).
    this.top = 0;
    this.height = null;
    this.viewport = h(d, 'div', { class: 'hex-viewport', tabIndex: 0, on: { scroll: () => this.onScroll() } }, this.spacer, this.linesEl, this.probe);
    this.empty = h(d, 'p', { class: 'hint', t: this.i18n.message('ui.hex.empty') });
    p.body.append(this.empty, this.viewport);
    clear(container);
    container.appendChild(p.root);
    this.schedule = frameThrottle(this.win, () => this.render());
    // The octets a line holds are measured when the pane's size (or mode, or font) changes, never per
    // update: a measure after the page's other writes forces a whole layout mid-frame.
    this.measured = false;
    this.stopResize = onResize(this.win, this.viewport, () => {
      this.height = this.viewport.clientHeight;
      this.top = this.viewport.scrollTop;
      if (this.fitting() !== this.perLine) this.relayout({ measure: true });
      else this.schedule();
    });
    this.linesEl.addEventListener('click', (e) => this.onClick(e));
    this.i18n.onChange(() => {
      this.drawn = null; // (the marker lines' words)
      this.schedule();
    });
    this.picking = false;
    this.drawn = null; // what the drawn lines show (render() skips a frame that would draw the same)
    selection.subscribe((state, prev) => {
      // Reveal a new element or field, unless it was picked here (the user is looking at it).
      const moved = state.index !== prev.index || state.event !== prev.event || state.field !== prev.field;
      if (moved && !this.picking) this.reveal();
      this.schedule();
    });
  }

  onScroll() {
    this.top = this.viewport.scrollTop;
    this.schedule();
  }

  /** The viewport's height: as last reported by a resize, else measured now. */
  viewportHeight() {
    return this.height ?? this.viewport.clientHeight;
  }

  /**
   * Which connection the dump follows, among a topology's many: { conn, client, server } (its number, and the
   * nodes at its ends, which the direction chips then name), or null (one connection: client and server).
   */
  setEnds(ends) {
    this.connEl.hidden = !ends;
    if (ends) {
      tr(this.connEl, this.i18n.message('ui.hex.conn', { conn: ends.conn }));
      tr(this.legends.c2s, this.i18n.message('ui.hex.way', { from: ends.client, to: ends.server }));
      tr(this.legends.s2c, this.i18n.message('ui.hex.way', { from: ends.server, to: ends.client }));
    } else {
      tr(this.legends.c2s, this.i18n.message('ui.dir.c2s'));
      tr(this.legends.s2c, this.i18n.message('ui.dir.s2c'));
    }
  }

  setChunks(chunks, note = '') {
    this.chunks = chunks;
    this.noteEl.textContent = note;
    this.relayout();
    this.reveal();
  }

  setMode(mode) {
    this.mode = mode === 'ascii' || mode === 'utf8' ? mode : 'hex';
    for (const [name, button] of Object.entries(this.modeButtons)) button.classList.toggle('on', this.mode === name);
    this.relayout({ measure: true });
    this.reveal();
  }

  setLineHeight(px) {
    this.lineHeight = px;
    this.relayout({ measure: true });
    this.reveal();
  }

  /** Octets a line holds at the viewport's width and font. */
  fitting() {
    const width = this.viewport.clientWidth || 0;
    const ten = this.probe.getBoundingClientRect ? this.probe.getBoundingClientRect().width : 0;
    return fittingBytesPerLine(width && ten ? (width * 10) / ten : 0, this.mode);
  }

  relayout({ measure = !this.measured } = {}) {
    if (measure) {
      this.perLine = this.fitting();
      this.measured = true;
    }
    this.lines = layoutLines(this.chunks, this.perLine);
    this.spacer.style.height = `${contentHeight(this.lines.count, this.lineHeight)}px`;
    this.empty.hidden = this.lines.count > 0;
    this.viewport.hidden = this.lines.count === 0;
    if (this.viewport.hidden) this.top = 0; // (a hidden box loses its scroll)
    this.schedule();
  }

  /** Ranges to highlight: { el: {dir, start, end}, field: {dir, start, end} }. */
  ranges() {
    const { event } = this.selection.get();
    const field = this.selection.fieldObject();
    if (!event) return { el: null, field: null };
    const len = Math.max(event.length || 0, event.kind === 'expert' ? 1 : 0);
    return {
      el: { dir: event.dir, start: event.offset, end: event.offset + len },
      field: field ? { dir: event.dir, start: field.offset, end: field.offset + field.length } : null,
    };
  }

  /** Scroll so the selected element's (or field's) first line is visible. */
  reveal() {
    const { event } = this.selection.get();
    if (!event || !this.lines.count) return;
    const field = this.selection.fieldObject();
    const line = this.lines.findLine(event.dir, field ? field.offset : event.offset);
    if (line < 0) return;
    const top = scrollToReveal({ index: line, scrollTop: this.top, viewportHeight: this.viewportHeight() || 300, rowHeight: this.lineHeight, total: this.lines.count });
    if (top !== this.top) {
      this.viewport.scrollTop = top;
      this.top = this.viewport.scrollTop; // (free: the write laid the page out)
    }
    this.schedule();
  }

  render() {
    const d = this.doc;
    const total = this.lines.count;
    const { start, end, top } = visibleRange({ scrollTop: this.top, viewportHeight: this.viewportHeight() || 300, rowHeight: this.lineHeight, total });
    const { el, field } = this.ranges();
    // The same lines over the same bytes, highlighted the same: nothing to draw (the dump grows below the
    // lines shown many times a second while a session plays).
    const drawn = { chunks: this.chunks, mode: this.mode, height: this.lineHeight, top, lines: lineKeys(this.lines, start, end), el: rangeKey(el), field: rangeKey(field) };
    if (sameDrawing(this.drawn, drawn)) return;
    this.drawn = drawn;
    clear(this.linesEl);
    this.linesEl.style.top = `${top}px`;
    for (let i = start; i < end; i++) {
      const line = this.lines.line(i);
      const div = h(d, 'div', { class: `hex-line ${line.dir}` });
      div.style.height = `${this.lineHeight}px`;
      div.dataset.line = String(i);
      if (line.kind !== 'bytes') {
        div.classList.add('marker-line');
        const what = this.i18n.t(line.kind === 'gap' ? 'ui.hex.gap' : 'ui.hex.notLoaded', { n: formatCount(line.count) });
        div.append(h(d, 'span', { class: 'hex-off', text: hex8(line.offset) }), h(d, 'span', { class: 'hex-missing', text: what }));
        this.linesEl.appendChild(div);
        continue;
      }
      const inEl = (o) => el && el.dir === line.dir && o >= el.start && o < el.end;
      const inField = (o) => field && field.dir === line.dir && o >= field.start && o < field.end;
      const hexCol = h(d, 'span', { class: 'hex-bytes' });
      const asciiCol = h(d, 'span', { class: this.mode === 'utf8' ? 'hex-ascii hex-utf8' : 'hex-ascii' });
      const text = this.mode === 'utf8' ? utf8Cells(line.bytes) : null;
      line.bytes.forEach((b, k) => {
        const o = line.offset + k;
        const cls = inField(o) ? 'b sel-field' : inEl(o) ? 'b sel-el' : 'b';
        if (this.mode === 'hex') {
          const cell = h(d, 'span', { class: cls, text: byteHex(b) });
          cell.dataset.k = String(k);
          hexCol.appendChild(cell);
          if (k === 7) hexCol.appendChild(d.createTextNode(' '));
        }
        const ch = h(d, 'span', { class: cls, text: text ? text[k] : isPrintable(b) ? String.fromCharCode(b) : '.' });
        ch.dataset.k = String(k);
        asciiCol.appendChild(ch);
      });
      div.append(h(d, 'span', { class: 'hex-off', text: hex8(line.offset) }));
      if (this.mode === 'hex') div.append(hexCol);
      div.append(asciiCol);
      this.linesEl.appendChild(div);
    }
  }

  onClick(e) {
    let n = e.target;
    let k = null;
    while (n && n !== this.linesEl) {
      if (k === null && n.dataset && n.dataset.k !== undefined) k = Number(n.dataset.k);
      if (n.dataset && n.dataset.line !== undefined) break;
      n = n.parentNode;
    }
    if (!n || n === this.linesEl) return;
    const line = this.lines.line(Number(n.dataset.line));
    this.picking = true;
    try {
      this.onPick(line.index, line.dir, line.offset + (line.kind === 'bytes' && k !== null ? k : 0));
    } finally {
      this.picking = false;
    }
  }

  copy() {
    if (this.copyText) this.copyText(toFollowText(this.chunks));
  }

  destroy() {
    this.stopResize();
  }
}

/** What lines [start, end) show: kind, direction, offset, size and element of each (bytes are appended, never changed). */
function lineKeys(lines, start, end) {
  const keys = [];
  for (let i = start; i < end; i++) {
    const l = lines.line(i);
    keys.push(`${l.kind}/${l.dir}/${l.offset}/${l.bytes ? l.bytes.length : l.count}/${l.index}`);
  }
  return keys.join(' ');
}

function rangeKey(r) {
  return r ? `${r.dir}/${r.start}/${r.end}` : '';
}

function sameDrawing(a, b) {
  return !!a && Object.keys(b).every((k) => a[k] === b[k]);
}

function hex8(n) {
  return Number(n).toString(16).padStart(8, '0');
}
