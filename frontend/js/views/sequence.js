// Sequence view: two lifelines (client left, server right), one arrow per
// element, time flowing down. Virtual: only the visible rows exist in the DOM,
// so 200,000+ elements scroll as smoothly as 20. Fixed row height.
//
// new SequenceView(container, { source, onSelect(index), rowHeight, timeBase })
//   source: { length, get(i), ensure(start, end), subscribe(fn) } (core/source.js)
//   .setSource(source)  .setLabels({client, server})  .setSelected(index)
//   .setRowHeight(px)  .setFollowTail(bool)  .move(delta)  .destroy()
//   .setLanes(lanes, endsOf)  N lifelines instead of two (a topology session): lanes [{ id, label }],
//     endsOf(event) -> { from, to } lane indexes (an arrow), { at } (a mark on one lifeline) or null
//   .setHighlight(fn)  rows whose event fn(event) is true are marked (a message's path)

import { h, clear, frameThrottle, onResize } from './dom.js';
import { frameQueue } from '../core/frames.js';
import { visibleRange, contentHeight, scrollToReveal, atBottom } from '../core/virtual.js';
import { infoLabel } from '../core/labels.js';
import { absoluteTime, relativeTime } from '../core/times.js';
import { formatCount, octets } from '../core/bytes.js';

let views = 0; // ids of this page's sequence views' rows (aria-activedescendant)

export class SequenceView {
  constructor(container, { i18n, source = null, onSelect = () => {}, rowHeight = 30, timeBase = null } = {}) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.win = this.doc.defaultView;
    this.onSelect = onSelect;
    this.rowHeight = rowHeight;
    this.timeBase = timeBase;
    this.selected = null;
    this.followTail = false;
    this.labels = { client: '', server: '' };
    this.unsubscribe = null;
    this.lanes = null; // N lifelines (setLanes), else the two of a connection
    this.lanesBg = ''; // their lines, as the lane column's background
    this.endsOf = null;
    this.highlight = null;
    this.idPrefix = `seq${++views}`;
    // Where the viewport stands, kept here so that a redraw reads no layout: the scroll position as the last
    // scroll event (or our own scroll) left it, the height as the last resize reported it (null: not yet).
    this.top = 0;
    this.height = null;
    this.drawnRows = new Map(); // index -> { row, key }: the rows in the DOM, kept while what they show stays
    this.version = 0; // bumped by whatever changes how every row looks (lanes, labels, highlight, language...)

    const d = this.doc;
    this.clientHead = h(d, 'div', { class: 'lifeline-head c2s-side' });
    this.serverHead = h(d, 'div', { class: 'lifeline-head s2c-side' });
    this.countEl = h(d, 'div', { class: 'seq-count' });
    this.heads = h(d, 'div', { class: 'seq-heads' }, this.clientHead, this.serverHead);
    this.header = h(d, 'div', { class: 'seq-header' }, h(d, 'div', { class: 'seq-gutter' }, this.countEl), this.heads);
    this.spacer = h(d, 'div', { class: 'seq-spacer' });
    this.rows = h(d, 'div', { class: 'seq-rows' });
    this.empty = h(d, 'div', { class: 'seq-empty', t: this.i18n.message('ui.seq.empty') });
    this.viewport = h(
      d,
      'div',
      {
        class: 'seq-viewport',
        tabIndex: 0,
        attrs: { role: 'listbox' },
        tLabel: this.i18n.message('ui.seq.label'),
        on: { scroll: () => this.onScroll(), keydown: (e) => this.onKey(e) },
      },
      this.spacer,
      this.rows,
    );
    // N lifelines are drawn once, on a layer behind the rows (not on every row: repainted each frame, a dozen
    // gradients a row are most of a busy topology's paint time).
    this.lanesLayer = h(d, 'div', { class: 'seq-lanes-bg', hidden: true });
    this.root = h(d, 'div', { class: 'sequence' }, this.header, this.lanesLayer, this.viewport, this.empty);
    // (passive: listening must not hold a scroll for the main thread)
    for (const type of ['wheel', 'keydown', 'pointerdown', 'touchstart']) this.viewport.addEventListener(type, () => (this.inputAt = Date.now()), { passive: true });
    clear(container);
    container.appendChild(this.root);
    this.schedule = frameThrottle(this.win, (time) => this.render(time));
    this.forgetOwnScroll = () => (this.ownScroll = false);
    this.rows.addEventListener('click', (e) => {
      const row = closestRow(e.target, this.rows);
      if (row) this.select(Number(row.dataset.index));
    });
    this.stopResize = onResize(this.win, this.viewport, () => {
      // (a resize is reported after layout: these reads cost nothing)
      this.height = this.viewport.clientHeight;
      this.top = this.viewport.scrollTop;
      this.placeLanes();
      this.schedule();
    });
    this.setLabels(this.labels);
    this.setSource(source);
    // Another language: the count, the rows' labels and the default lifeline names are words.
    this.i18n.onChange(() => {
      this.setLabels(this.given || {});
      this.countShown = null;
      this.version++;
      this.onData();
    });
  }

  /** The viewport's height: as last reported by a resize, else measured now. */
  viewportHeight() {
    return this.height ?? this.viewport.clientHeight;
  }

  onScroll() {
    // The event after our own scroll (following the tail, a frame at a time) says what we know already: read
    // unless someone scrolled meanwhile (a read here lays out what changed since the frame, animations too).
    const userAt = this.inputAt || 0;
    if (this.ownScroll && Date.now() - userAt > USER_SCROLL_MS) this.ownScroll = false;
    else {
      this.top = this.viewport.scrollTop;
      // Scrolled away from the end: the tail is no longer followed (not even the scroll still to come).
      if (!atBottom({ scrollTop: this.top, viewportHeight: this.viewportHeight(), rowHeight: this.rowHeight, total: this.lastTotal || 0 })) this.toTail = false;
    }
    this.schedule();
  }

  /** Scrolls the viewport (written now, as a browser clamps it) and remembers where it stands. */
  scrollTo(top) {
    const was = this.top;
    this.viewport.scrollTop = top;
    this.top = this.viewport.scrollTop; // (free: the write above laid the page out)
    if (this.top !== was) {
      this.ownScroll = true;
      // Our scroll's event comes before the next frame's callbacks; by then the next one is someone else's (a
      // script's, an assistive tool's; a scroll that made no event must not swallow it).
      frameQueue(this.win).nextFrame(this.forgetOwnScroll);
    }
  }

  /** Every row is drawn again on the next frame. */
  redrawAll() {
    this.version++;
    this.schedule();
  }

  setSource(source) {
    if (this.unsubscribe) this.unsubscribe();
    this.source = source;
    this.unsubscribe = source && source.subscribe ? source.subscribe(() => this.onData()) : null;
    this.selected = null;
    this.scrollTo(0);
    this.version++;
    this.onData();
  }

  setLabels({ client, server }) {
    this.given = { client, server };
    this.labels = { client: client || this.i18n.t('ui.peer.client'), server: server || this.i18n.t('ui.peer.server') };
    if (this.clientHead.textContent !== this.labels.client || this.serverHead.textContent !== this.labels.server) {
      this.clientHead.textContent = this.labels.client;
      this.serverHead.textContent = this.labels.server;
      this.redrawAll(); // (a row's spoken direction names them)
    }
  }

  /**
   * N lifelines (a topology session's nodes or connection ends), or null for the classic two. Heads
   * alternate between two rows so that twelve names stay legible.
   */
  setLanes(lanes, endsOf) {
    const d = this.doc;
    this.lanes = Array.isArray(lanes) && lanes.length ? lanes : null;
    this.endsOf = this.lanes ? endsOf : null;
    this.root.classList.toggle('lanes', !!this.lanes);
    this.lanesLayer.hidden = !this.lanes;
    if (!this.lanes) {
      this.lanesBg = '';
      this.heads.replaceChildren(this.clientHead, this.serverHead);
      this.setLabels(this.labels);
    } else {
      const n = this.lanes.length;
      this.heads.replaceChildren(...this.lanes.map((lane, i) => {
        const head = h(d, 'div', { class: `lane-head${i % 2 ? ' low' : ''}`, text: lane.label, title: lane.label });
        head.dataset.lane = lane.id;
        head.style.left = `${laneX(i, n)}%`;
        head.style.maxWidth = `${Math.min(48, 200 / n)}%`;
        return head;
      }));
      this.lanesBg = this.lanes.map((_, i) => `linear-gradient(#cbd5e0, #cbd5e0) ${laneX(i, n)}% 0 / 1px 100% no-repeat`).join(', ');
      this.lanesLayer.style.background = this.lanesBg;
      this.placeLanes();
    }
    this.redrawAll();
  }

  /** The lifelines' layer starts under the header (whose height the heads' rows set). */
  placeLanes() {
    if (this.lanes) this.lanesLayer.style.top = `${this.header.offsetHeight || 0}px`;
  }

  /** Marks the rows whose event fn(event) holds (null: none). */
  setHighlight(fn) {
    this.highlight = typeof fn === 'function' ? fn : null;
    this.redrawAll();
  }

  /** How rows are numbered: fn(row, event) -> text (null: 1, 2, 3...). A filtered list shows element indexes. */
  setRowNumbers(fn) {
    this.rowNumber = typeof fn === 'function' ? fn : null;
    this.redrawAll();
  }

  setTimeBase(t) {
    this.timeBase = typeof t === 'number' ? t : null;
    this.redrawAll();
  }

  setRowHeight(px) {
    this.rowHeight = px;
    this.version++;
    this.onData();
  }

  setFollowTail(on) {
    this.followTail = !!on;
  }

  /**
   * The source changed: the scroll range and the count now (writes only: nothing here reads the layout, so
   * a page taking many events a frame lays out once), the rows in the next frame.
   */
  onData() {
    const total = this.source ? this.source.length : 0;
    const wasAtBottom = atBottom({ scrollTop: this.top, viewportHeight: this.viewportHeight(), rowHeight: this.rowHeight, total: this.lastTotal || 0 });
    const height = `${contentHeight(total, this.rowHeight)}px`;
    if (this.spacer.style.height !== height) this.spacer.style.height = height;
    const elements = this.source && typeof this.source.elementCount === 'number' ? this.source.elementCount : total; // (marks are not elements)
    if (elements !== this.countShown) {
      this.countShown = elements;
      this.countEl.textContent = this.i18n.tn('ui.seq.count', elements, { n: formatCount(elements) });
    }
    this.empty.hidden = total > 0;
    // Following the tail: scrolled to the end when the rows are drawn (the last write of the frame).
    if (this.followTail && wasAtBottom && total > (this.lastTotal || 0)) this.toTail = true;
    this.lastTotal = total;
    this.schedule();
  }

  /** Draws the rows in view; `time`: the frame's (a flooded tail waits for a later one). */
  render(time) {
    const total = this.source ? this.source.length : 0;
    const vh = this.viewportHeight() || 600;
    let scrollTop = this.top;
    const tail = this.toTail;
    // A flooded tail (more new rows since the last draw than the viewport holds: each draw replaces every row,
    // faster than anyone reads them, and is most of the frame's work) is drawn at most every FLOOD_MS.
    const timed = typeof time === 'number';
    // (and when the frame is full already, e.g. the diagram's figures were drawn in it, the next one draws: up to
    // twice FLOOD_MS; two heavy draws in one frame make the longest frames)
    const since = timed ? time - (this.tailAt ?? -Infinity) : Infinity;
    const wait = since < FLOOD_MS || (since < 2 * FLOOD_MS && frameQueue(this.win).spent() > FRAME_FULL_MS);
    if (tail && timed && total - (this.tailTotal ?? 0) > vh / this.rowHeight && wait) {
      this.schedule(); // (the next frame: this one ran already)
      return;
    }
    if (tail && timed) {
      this.tailTotal = total;
      this.tailAt = time;
    }
    this.toTail = false;
    // (where the browser will clamp the scroll to the end)
    if (tail) scrollTop = Math.max(0, contentHeight(total, this.rowHeight) - vh);
    const { start, end, top } = visibleRange({ scrollTop, viewportHeight: vh, rowHeight: this.rowHeight, total });
    const topPx = `${top}px`;
    if (this.rows.style.top !== topPx) this.rows.style.top = topPx;
    let missing = false;
    // Rows that show what they showed stay in the DOM; the others are made. Following a slow session or moving
    // the selection, a frame makes a row or two, not the screenful.
    const kept = new Map();
    for (let i = start; i < end; i++) {
      const ev = this.source.get(i);
      if (!ev) missing = true;
      const key = `${this.version}/${i === this.selected}/${this.elementOf(i)}`;
      const old = this.drawnRows.get(i);
      if (old && old.ev === ev && old.key === key) {
        kept.set(i, old);
        if (old.row.getAttribute('aria-setsize') !== String(total)) old.row.setAttribute('aria-setsize', String(total));
      } else kept.set(i, { row: this.renderRow(i, ev), ev, key, fresh: true });
    }
    for (const [i, old] of this.drawnRows) if (kept.get(i) !== old && old.row.parentNode === this.rows) this.rows.removeChild(old.row);
    // In order: the new rows before the first kept one, then after each kept one.
    let before = null;
    for (let i = end - 1; i >= start; i--) {
      const entry = kept.get(i);
      if (entry.fresh) {
        this.rows.insertBefore(entry.row, before);
        entry.fresh = false;
      }
      before = entry.row;
    }
    this.drawnRows = kept;
    // The listbox keeps the focus; a screen reader hears the selected row through aria-activedescendant.
    const sel = this.selected !== null && this.selected >= start && this.selected < end ? `${this.idPrefix}-row-${this.selected}` : null;
    if (sel) {
      if (this.viewport.getAttribute('aria-activedescendant') !== sel) this.viewport.setAttribute('aria-activedescendant', sel);
    } else this.viewport.removeAttribute('aria-activedescendant');
    if (missing && this.source.ensure) {
      this.source.ensure(start, end).catch(() => {});
    }
    // Last: the scroll lays the page out once, with every write of the frame made.
    if (tail) this.scrollTo(contentHeight(total, this.rowHeight));
  }

  renderRow(i, ev) {
    const d = this.doc;
    const row = h(d, 'div', { class: 'seq-row', attrs: { role: 'option', 'aria-selected': i === this.selected ? 'true' : 'false' } });
    row.dataset.index = String(i);
    row.id = `${this.idPrefix}-row-${i}`;
    // A virtual list: the row says where it stands among all of them, not among those drawn.
    row.setAttribute('aria-setsize', String(this.source ? this.source.length : 0));
    row.setAttribute('aria-posinset', String(i + 1));
    row.style.height = `${this.rowHeight}px`;
    const num = h(d, 'span', { class: 'seq-num', text: this.rowNumber ? this.rowNumber(i, ev) : String(this.elementOf(i) + 1) });
    if (ev && ev.kind === 'mark') {
      // A connection boundary or a fault (core/marks.js): a row of its own, not an element.
      row.classList.add('seq-mark', `mark-${safeClass(ev.mark)}`);
      row.setAttribute('aria-disabled', 'true');
      row.setAttribute('title', ev.text);
      row.append(h(d, 'span', { class: 'seq-num' }), h(d, 'span', { class: 'seq-time' }), h(d, 'div', { class: 'seq-lane' }, h(d, 'span', { class: 'mark-text', text: ev.text })));
      return row;
    }
    if (!ev) {
      row.classList.add('loading');
      row.append(num, h(d, 'span', { class: 'seq-time' }), h(d, 'div', { class: 'seq-lane' }, h(d, 'span', { class: 'seq-label', text: '…' })));
      return row;
    }
    if (i === this.selected) row.classList.add('selected');
    row.classList.add(`kind-${safeClass(ev.kind)}`, ev.dir === 's2c' ? 's2c' : 'c2s');
    const label = infoLabel(this.i18n, ev);
    row.setAttribute('title', label);
    const speech = this.rowSpeech(i, ev, label);
    const lane = h(d, 'div', { class: 'seq-lane' });
    if (this.highlight && this.highlight(ev)) row.classList.add('on-path');
    const ends = this.lanes ? this.endsOf(ev) : null;
    if (ends) this.laneRow(lane, row, ev, ends, label);
    else if (ev.kind === 'expert' || ev.kind === 'gap') {
      const sev = ev.kind === 'gap' ? 'warn' : safeClass(ev.severity || 'note');
      lane.append(h(d, 'span', { class: `marker sev-${sev}` }), h(d, 'span', { class: `seq-label marker-label sev-${sev}`, text: label }));
    } else {
      lane.append(h(d, 'div', { class: 'arrow' }, h(d, 'span', { class: 'arrow-head' })), h(d, 'span', { class: 'seq-label', text: label }));
    }
    // A screen reader reads the row's own words (the label it shows), with the number before and the direction,
    // size and time after in hidden text, in place of the number and time columns (an aria-label instead would
    // hide the words it shows, which voice control users say to pick it).
    num.setAttribute('aria-hidden', 'true');
    const time = h(d, 'span', { class: 'seq-time', text: this.timeText(ev), title: typeof ev.ts === 'number' ? absoluteTime(ev.ts) : undefined, attrs: { 'aria-hidden': 'true' } });
    row.append(h(d, 'span', { class: 'visually-hidden', text: speech.before }), num, time, lane, h(d, 'span', { class: 'visually-hidden', text: speech.after }));
    return row;
  }

  /** A row across N lifelines: an arrow from one to another, or a mark on one with its text beside it. */
  laneRow(lane, row, ev, ends, label) {
    const d = this.doc;
    const n = this.lanes.length;
    if (typeof ends.at === 'number') {
      const x = laneX(ends.at, n);
      const what = safeClass(ev.what);
      row.classList.add('lane-mark', `what-${what}`);
      const dot = h(d, 'span', { class: `lane-dot what-${what}` });
      dot.style.left = `${x}%`;
      const text = h(d, 'span', { class: 'seq-label lane-text', text: label });
      if (x < 60) text.style.left = `calc(${x}% + 10px)`;
      else text.style.right = `calc(${100 - x}% + 10px)`;
      text.style[x < 60 ? 'right' : 'left'] = '0';
      lane.append(dot, text);
      return;
    }
    const a = laneX(ends.from, n);
    const b = laneX(ends.to, n);
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    row.classList.add(b >= a ? 'ltr' : 'rtl');
    const arrow = h(d, 'div', { class: 'arrow' }, h(d, 'span', { class: 'arrow-head' }));
    arrow.style.left = `${lo}%`;
    arrow.style.right = `${100 - hi}%`;
    // The label sits over its arrow, widened to a third of the row when the arrow is short.
    const mid = (lo + hi) / 2;
    const half = Math.max((hi - lo) / 2, 17);
    const text = h(d, 'span', { class: 'seq-label', text: label });
    text.style.left = `${Math.max(0, Math.min(mid - half, 100 - 2 * half))}%`;
    text.style.right = `${Math.max(0, 100 - Math.max(mid + half, 2 * half))}%`;
    lane.append(arrow, text);
  }

  /**
   * What a screen reader says of a row around its label: "3. " before "READY ...", and ", server to client,
   * 28 octets, t 0.004000 s" after it.
   */
  rowSpeech(i, ev, label) {
    const parts = [label];
    const ends = this.lanes ? this.endsOf(ev) : null;
    const lane = (k) => (this.lanes[k] ? this.lanes[k].label : '?');
    if (ends && typeof ends.at === 'number') parts.push(this.i18n.t('ui.seq.row.at', { lane: lane(ends.at) }));
    else if (ends) parts.push(this.i18n.t('ui.seq.row.dir', { from: lane(ends.from), to: lane(ends.to) }));
    else if (!this.lanes && (ev.dir === 'c2s' || ev.dir === 's2c')) {
      const [from, to] = ev.dir === 'c2s' ? [this.labels.client, this.labels.server] : [this.labels.server, this.labels.client];
      parts.push(this.i18n.t('ui.seq.row.dir', { from, to }));
    }
    if (typeof ev.length === 'number' && ev.kind !== 'expert') parts.push(octets(this.i18n, ev.length));
    const time = this.timeText(ev);
    if (time) parts.push(this.i18n.t('ui.seq.row.time', { time }));
    const sep = this.i18n.t('ui.seq.row.sep');
    return { before: `${this.rowNumber ? this.rowNumber(i, ev) : this.elementOf(i) + 1}. `, after: parts.length > 1 ? sep + parts.slice(1).join(sep) : '' };
  }

  timeText(ev) {
    const t = typeof ev.ts === 'number' ? ev.ts : typeof ev.t === 'number' ? ev.t : null;
    if (t === null) return '';
    return relativeTime(t, this.timeBase);
  }

  /** Select row `index` (from a click or a key) and tell the app. */
  select(index) {
    const total = this.source ? this.source.length : 0;
    if (!(index >= 0 && index < total) || this.isMark(index)) return;
    this.setSelected(index);
    this.onSelect(index);
  }

  /** Mark `index` selected and scroll it into view, without telling the app. */
  setSelected(index, { reveal = true } = {}) {
    this.selected = typeof index === 'number' ? index : null;
    if (reveal && this.selected !== null) {
      const total = this.source ? this.source.length : 0;
      const top = scrollToReveal({ index: this.selected, scrollTop: this.top, viewportHeight: this.viewportHeight() || 600, rowHeight: this.rowHeight, total });
      if (top !== this.top) this.scrollTo(top);
    }
    this.schedule();
  }

  onKey(e) {
    const total = this.source ? this.source.length : 0;
    if (!total) return;
    const page = Math.max(1, Math.floor((this.viewportHeight() || 600) / this.rowHeight) - 1);
    const cur = this.selected === null ? -1 : this.selected;
    const moves = { ArrowDown: cur + 1, ArrowUp: cur - 1, PageDown: cur + page, PageUp: cur - page, Home: 0, End: total - 1 };
    if (!(e.key in moves)) return;
    e.preventDefault();
    e.stopPropagation();
    const to = Math.min(total - 1, Math.max(0, moves[e.key]));
    this.select(this.skipMarks(to, to < cur || e.key === 'End' ? -1 : 1));
  }

  /** The element a row shows, counted without marks (rows and elements are the same without them). */
  elementOf(row) {
    const n = this.source && this.source.eventOf ? this.source.eventOf(row) : row;
    return n === null ? row : n;
  }

  /** A row that holds a mark (a source such as core/marks.js MarkedSource may have them). */
  isMark(row) {
    return !!(this.source && this.source.isMark && this.source.isMark(row));
  }

  /** `row`, or the nearest element row from it in direction `step` (then the other way). */
  skipMarks(row, step) {
    const total = this.source ? this.source.length : 0;
    for (const s of [step, -step]) {
      for (let r = row; r >= 0 && r < total; r += s) if (!this.isMark(r)) return r;
    }
    return row;
  }

  /** Move the selection by `delta` rows (the page's own up/down shortcut). */
  move(delta) {
    const total = this.source ? this.source.length : 0;
    if (!total) return;
    const cur = this.selected === null ? (delta > 0 ? -1 : total) : this.selected;
    this.select(this.skipMarks(Math.min(total - 1, Math.max(0, cur + delta)), delta < 0 ? -1 : 1));
  }

  destroy() {
    if (this.unsubscribe) this.unsubscribe();
    this.stopResize();
  }
}

// How long after a wheel, key, pointer or touch a scroll may be the user's (a smooth scroll runs a few frames).
const USER_SCROLL_MS = 1000;
// How often a flooded tail is drawn at most (20 times a second).
const FLOOD_MS = 50;
// A frame whose callbacks ran this long (ms) is full: a flooded tail's draw waits for the next.
const FRAME_FULL_MS = 4;

function closestRow(node, stop) {
  let n = node;
  while (n && n !== stop) {
    if (n.classList && n.classList.contains('seq-row')) return n;
    n = n.parentNode;
  }
  return null;
}

/** The x of lifeline i of n, in % of the lane column. */
function laneX(i, n) {
  return ((i + 0.5) * 100) / n;
}

/** Kind/severity strings come from the wire side; keep class names to [a-z0-9-]. */
export function safeClass(s) {
  return String(s || '').toLowerCase().replace(/[^a-z0-9-]/g, '') || 'unknown';
}
