// Corpus page pieces: the capture picker (with upload), the list of runs, a
// run's header and progress bar, the report frame and the paged table. Every
// value from the server goes into text nodes (see dom.js).

import { h, clear, setChildren, tr } from './dom.js';
import { columns, pageText, progressText, runFacts, captureText, startedText, stateText, phaseText, EVENT_KINDS, TABLE_FILTERS, PAGE_SIZE } from '../core/corpus-tables.js';

// The kinds the events table's filter offers, as a reader names them (lower case, as the kind key).
const KIND_IDS = { greeting: 'ui.filter.greeting', command: 'ui.filter.command', frame: 'ui.filter.frame', message: 'ui.filter.message', expert: 'ui.filter.expert', gap: 'ui.filter.gap' };

/**
 * The uploads a run may take, with checkboxes, an upload button, "Start run", and per capture a link
 * to the viewer and a Delete button.
 * new CapturePicker(container, { onUpload(files), onStart(ids), onDelete(id, name) })
 *   .setCaptures(list, checked) .selected() .setBusy(running) .setNote(text, kind)
 *   .setUnavailable(text|null): the server cannot run Spark (text says why and what to install): no start
 */
export class CapturePicker {
  constructor(container, { i18n, onUpload, onStart, onDelete = () => {} }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onDelete = onDelete;
    this.input = h(d, 'input', { type: 'file', multiple: true, accept: '.pcap,.pcapng,.cap,application/vnd.tcpdump.pcap', class: 'visually-hidden', attrs: { id: 'corpus-file' } });
    this.input.addEventListener('change', () => {
      const files = this.input.files ? [...this.input.files] : [];
      this.input.value = '';
      if (files.length) onUpload(files);
    });
    this.list = h(d, 'ul', { class: 'pick-list', tLabel: this.i18n.message('ui.picker.label') });
    this.note = h(d, 'p', { class: 'hint pick-note', attrs: { role: 'status' } });
    this.unavailable = h(d, 'p', { class: 'hint pick-unavailable', attrs: { id: 'corpus-unavailable' }, hidden: true });
    this.start = h(d, 'button', { type: 'button', class: 'primary', t: this.i18n.message('ui.picker.start'), attrs: { id: 'start-run' }, disabled: true });
    this.start.addEventListener('click', () => onStart(this.selected()));
    const all = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.picker.all'), on: { click: () => this.checkAll(true) } });
    const none = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.picker.none'), on: { click: () => this.checkAll(false) } });
    clear(container);
    container.appendChild(
      h(
        d,
        'section',
        { class: 'box picker', attrs: { 'aria-labelledby': 'picker-title' } },
        h(d, 'div', { class: 'box-head' }, h(d, 'h2', { t: this.i18n.message('ui.picker.title'), attrs: { id: 'picker-title' } }), h(d, 'label', { class: 'button-like', attrs: { for: 'corpus-file' }, t: this.i18n.message('ui.picker.upload') }), this.input),
        h(d, 'p', { class: 'hint', t: this.i18n.message('ui.picker.hint') }),
        this.unavailable,
        this.list,
        h(d, 'div', { class: 'ctl-row' }, all, none, h(d, 'span', { class: 'spacer' }), this.start),
        this.note,
      ),
    );
    this.busy = false;
    this.boxes = [];
  }

  setCaptures(list, checked = new Set()) {
    const d = this.doc;
    this.boxes = list.map((c) => {
      const box = h(d, 'input', { type: 'checkbox', value: String(c.id), checked: checked.has(c.id) });
      box.addEventListener('change', () => this.update());
      return box;
    });
    if (!list.length) setChildren(this.list, h(d, 'li', { class: 'muted', t: this.i18n.message('ui.picker.empty') }));
    else {
      setChildren(
        this.list,
        list.map((c, i) =>
          h(
            d,
            'li',
            { class: 'pick-item' },
            h(d, 'label', { class: 'check' }, this.boxes[i], h(d, 'span', { text: captureText(c) })),
            h(d, 'a', { class: 'small', href: `capture.html?id=${encodeURIComponent(String(c.id))}`, t: this.i18n.message('ui.picker.view'), tTitle: this.i18n.message('ui.picker.view.title', { name: c.name || c.id }) }),
            h(d, 'button', { type: 'button', class: 'small danger pick-delete', t: this.i18n.message('ui.picker.delete'), tLabel: this.i18n.message('ui.picker.delete.label', { name: c.name || c.id }), on: { click: () => this.onDelete(String(c.id), c.name || String(c.id)) } }),
          ),
        ),
      );
    }
    this.update();
  }

  selected() {
    return this.boxes.filter((b) => b.checked).map((b) => b.value);
  }

  checkAll(on) {
    for (const b of this.boxes) b.checked = on;
    this.update();
  }

  setBusy(busy) {
    this.busy = busy;
    this.update();
  }

  setUnavailable(text) {
    this.unavailable.textContent = text || '';
    this.unavailable.hidden = !text;
    this.update();
  }

  update() {
    const n = this.selected().length;
    this.start.disabled = this.busy || n === 0 || !this.unavailable.hidden;
    tr(this.start, n > 1 ? this.i18n.message('ui.picker.startN', { n }) : this.i18n.message('ui.picker.start'));
  }

  setNote(text, kind = 'info') {
    this.note.textContent = text || '';
    this.note.className = `hint pick-note ${kind}`;
  }
}

/**
 * Past and running runs, newest first; click one to open it.
 * new RunList(container, { onOpen(id) }) ; .setRuns(runs, currentId)
 */
export class RunList {
  constructor(container, { i18n, onOpen }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onOpen = onOpen;
    this.list = h(d, 'ul', { class: 'run-list', tLabel: this.i18n.message('ui.runs.title') });
    clear(container);
    container.appendChild(h(d, 'section', { class: 'box runs' }, h(d, 'h2', { t: this.i18n.message('ui.runs.title') }), this.list));
  }

  setRuns(runs, current) {
    const d = this.doc;
    if (!runs.length) {
      setChildren(this.list, h(d, 'li', { class: 'muted', t: this.i18n.message('ui.runs.empty') }));
      return;
    }
    setChildren(
      this.list,
      runs.map((r) => {
        const names = (r.captures || []).map((c) => c.name).join(', ');
        const item = h(
          d,
          'li',
          { class: `run-item${r.id === current ? ' selected' : ''}`, tabIndex: 0, attrs: { 'data-run': r.id, 'aria-current': r.id === current ? 'true' : null } },
          h(d, 'div', { class: 'run-line' }, h(d, 'span', { class: `state-badge state-${r.state}`, text: stateText(this.i18n, r.state) }), h(d, 'span', { class: 'muted', text: startedText(r.created) })),
          h(d, 'div', { class: 'run-names', text: names, title: names }),
          h(d, 'div', { class: 'muted run-facts', text: runFacts(this.i18n, r) }),
        );
        item.addEventListener('click', () => this.onOpen(r.id));
        item.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            this.onOpen(r.id);
          }
        });
        return item;
      }),
    );
  }
}

/**
 * A run's head: title, facts, progress bar, Cancel and Delete.
 * new RunHead(container, { onCancel(), onDelete() }) ; .setRun(run) .setProgress(msg)
 */
export class RunHead {
  constructor(container, { i18n, onCancel, onDelete }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.title = h(d, 'h1', { attrs: { id: 'run-title' } });
    this.facts = h(d, 'p', { class: 'muted run-head-facts' });
    this.bar = h(d, 'progress', { max: 100, value: 0, tLabel: this.i18n.message('ui.run.progress'), attrs: { id: 'run-progress' } });
    this.text = h(d, 'span', { class: 'progress-text', attrs: { id: 'run-progress-text' } });
    this.phase = h(d, 'span', { class: 'progress-label', attrs: { id: 'run-phase' } });
    this.cancel = h(d, 'button', { type: 'button', t: this.i18n.message('ui.run.cancel'), attrs: { id: 'cancel-run' }, on: { click: () => onCancel() } });
    this.remove = h(d, 'button', { type: 'button', t: this.i18n.message('ui.run.delete'), attrs: { id: 'delete-run' }, on: { click: () => onDelete() } });
    this.error = h(d, 'p', { class: 'banner error', hidden: true, attrs: { role: 'alert' } });
    clear(container);
    container.appendChild(
      h(
        d,
        'div',
        { class: 'run-head' },
        h(d, 'div', { class: 'run-head-line' }, this.title, h(d, 'span', { class: 'spacer' }), this.cancel, this.remove),
        this.facts,
        h(d, 'div', { class: 'progress run-progress' }, this.phase, this.bar, this.text),
        this.error,
      ),
    );
  }

  setRun(run) {
    const names = (run.captures || []).map((c) => c.name).join(', ');
    tr(this.title, this.i18n.message('ui.run.title', { id: String(run.id).slice(0, 8) }));
    this.facts.textContent = `${runFacts(this.i18n, run)} — ${names}`;
    this.setProgress(run);
  }

  setProgress(msg) {
    const running = msg.state === 'running';
    const pct = Math.round(100 * Math.max(0, Math.min(1, Number(msg.fraction) || 0)));
    this.bar.value = msg.state === 'done' ? 100 : pct;
    this.bar.className = `state-${msg.state}`;
    this.phase.textContent = running ? phaseText(this.i18n, msg.phase) : stateText(this.i18n, msg.state);
    this.text.textContent = progressText(this.i18n, msg);
    this.cancel.hidden = !running;
    this.cancel.disabled = msg.detail === 'cancelling';
    this.error.hidden = !(msg.state === 'error' && msg.detail);
    this.error.textContent = msg.state === 'error' ? this.i18n.t('ui.run.failed', { detail: msg.detail }) : '';
  }
}

/**
 * The report in a sandboxed frame (the server serves it with a CSP of its own).
 * new ReportView(container) ; .show(url) .clear()
 */
export class ReportView {
  constructor(container, { i18n }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.container = container;
    this.link = h(d, 'a', { t: this.i18n.message('ui.report.open'), attrs: { target: '_blank', rel: 'noopener' } });
    this.frameSlot = h(d, 'div', { class: 'report-slot' });
    clear(container);
    container.appendChild(h(d, 'div', { class: 'report-view' }, h(d, 'p', { class: 'hint' }, this.link), this.frameSlot));
    this.url = null;
  }

  show(url) {
    if (this.url === url) return;
    this.url = url;
    this.link.href = url;
    // sandbox="" : no script, an origin of its own; the report needs neither.
    const frame = h(this.doc, 'iframe', { class: 'report-frame', tTitle: this.i18n.message('ui.report.title'), attrs: { sandbox: '', src: url, id: 'report-frame' } });
    setChildren(this.frameSlot, frame);
  }

  clear() {
    this.url = null;
    clear(this.frameSlot);
  }
}

/**
 * One table of a run, a page at a time, with its filters.
 * new TableView(container, { onQuery(changes) })
 *   .configure(table, captures, query) .setPage(page, ctx) .setError(text)
 * onQuery gets { capture?, kind?, dir?, conn?, offset? } changes.
 */
export class TableView {
  constructor(container, { i18n, onQuery }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onQuery = onQuery;
    const select = (id, label) => {
      const el = h(d, 'select', { tLabel: label, attrs: { id } });
      el.addEventListener('change', () => this.onQuery({ [id.replace('filter-', '')]: el.value, offset: 0 }));
      return el;
    };
    this.capture = select('filter-capture', this.i18n.message('ui.col.capture'));
    this.kind = select('filter-kind', this.i18n.message('ui.col.kind'));
    this.dir = select('filter-dir', this.i18n.message('ui.tree.direction'));
    this.conn = h(d, 'input', { type: 'text', tPlaceholder: this.i18n.message('ui.filter.conn'), tLabel: this.i18n.message('ui.filter.connection'), attrs: { id: 'filter-conn', inputmode: 'numeric', size: 5 } });
    this.conn.addEventListener('change', () => this.onQuery({ conn: this.conn.value.trim(), offset: 0 }));
    this.fields = {
      capture: h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.col.capture') }), this.capture),
      kind: h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.col.kind') }), this.kind),
      dir: h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.tree.direction') }), this.dir),
      conn: h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.col.conn') }), this.conn),
    };
    this.first = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.page.first'), on: { click: () => this.onQuery({ offset: 0 }) } });
    this.prev = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.page.prev'), attrs: { id: 'page-prev' }, on: { click: () => this.onQuery({ offset: Math.max(0, this.offset - PAGE_SIZE) }) } });
    this.next = h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.page.next'), attrs: { id: 'page-next' }, on: { click: () => this.onQuery({ offset: this.offset + PAGE_SIZE }) } });
    this.range = h(d, 'span', { class: 'page-range', attrs: { id: 'page-range', 'aria-live': 'polite' } });
    this.table = h(d, 'table', { class: 'data-table', attrs: { id: 'data-table' } });
    this.detail = h(d, 'pre', { class: 'row-detail', hidden: true, attrs: { id: 'row-detail' } });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    clear(container);
    container.appendChild(
      h(
        d,
        'div',
        { class: 'table-view' },
        h(d, 'div', { class: 'table-bar' }, Object.values(this.fields), h(d, 'span', { class: 'spacer' }), this.first, this.prev, this.range, this.next),
        this.error,
        h(d, 'div', { class: 'table-wrap data-wrap' }, this.table),
        this.detail,
      ),
    );
    this.offset = 0;
    this.selectedRow = null;
  }

  /** Sets up the bar for `table`: the run's captures, the kinds, the current filter values. */
  configure(table, captures, query) {
    const d = this.doc;
    const allowed = TABLE_FILTERS[table] || [];
    for (const [name, el] of Object.entries(this.fields)) el.hidden = !allowed.includes(name);
    const option = (value, text, selected) => h(d, 'option', { value, text, selected });
    setChildren(this.capture, option('', this.i18n.t('ui.filter.all'), !query.capture), captures.map((c) => option(c.id, c.name, c.id === query.capture)));
    setChildren(this.kind, option('', this.i18n.t('ui.filter.all'), !query.kind), EVENT_KINDS.map((k) => option(k, KIND_IDS[k] ? this.i18n.t(KIND_IDS[k]) : k, k === query.kind)));
    setChildren(this.dir, option('', this.i18n.t('ui.filter.both'), !query.dir), option('c2s', 'C→S', query.dir === 'c2s'), option('s2c', 'S→C', query.dir === 's2c'));
    this.conn.value = query.conn || '';
    this.detail.hidden = true;
  }

  /** Shows one page: { rows, total, offset } of `table`; ctx.names maps capture ids to names. */
  setPage(table, page, ctx) {
    const d = this.doc;
    const cols = columns(this.i18n, table);
    this.offset = page.offset;
    this.error.hidden = true;
    const head = h(d, 'thead', {}, h(d, 'tr', {}, cols.map((c) => h(d, 'th', { class: c.cls || null, text: c.label }))));
    const body = h(
      d,
      'tbody',
      {},
      page.rows.map((row, i) => {
        const tr = h(d, 'tr', { tabIndex: 0, attrs: { 'data-row': page.offset + i } }, cols.map((c) => h(d, 'td', { class: c.cls || null, text: c.text(row, ctx) })));
        tr.addEventListener('click', () => this.showRow(tr, row));
        return tr;
      }),
    );
    if (!page.rows.length) body.appendChild(h(d, 'tr', {}, h(d, 'td', { class: 'muted', t: this.i18n.message('ui.page.noMatch'), attrs: { colspan: cols.length } })));
    setChildren(this.table, head, body);
    this.selectedRow = null;
    this.range.textContent = pageText(this.i18n, page.offset, page.rows.length, page.total);
    this.first.disabled = this.prev.disabled = page.offset === 0;
    this.next.disabled = page.offset + page.rows.length >= page.total;
    this.detail.hidden = true;
  }

  /** Every column of one row that has a value, as JSON text, under the table. */
  showRow(tr, row) {
    if (this.selectedRow) this.selectedRow.classList.remove('selected');
    this.selectedRow = tr;
    tr.classList.add('selected');
    const set = Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null && v !== undefined));
    this.detail.textContent = JSON.stringify(set, null, 2);
    this.detail.hidden = false;
  }

  setError(text) {
    this.error.textContent = text;
    this.error.hidden = !text;
  }
}
