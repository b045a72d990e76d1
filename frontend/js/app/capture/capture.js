// The capture viewer page (capture.html): upload a capture, follow its
// dissection, browse connections and their elements (fetched in pages),
// inspect an element (fields fetched on demand) and the packets under it.
// host = { i18n, document, window, fetch, XMLHttpRequest, EventSource, FormData, clipboard }
//
// The page is a few parts with one job each: the file (capture-file.js: upload, open, follow the
// dissection, the list of captures, delete), the open connection (capture-connection.js: pages, filter,
// selection, hex, experts, packets), the Elements/Overview views (capture-overview.js) and the Live tab
// (live.js); here the workbench they share, which source tab is shown, a loaded capture's summary, the URL
// and the keyboard.

import { createApi } from '../../core/api.js';
import { parseLink, buildLink } from '../../core/links.js';
import { isTyping, h, setChildren } from '../../views/dom.js';
import { ConnectionsView } from '../../views/capture.js';
import { createCaptureSearchApi } from '../../core/capture-search.js';
import { createWorkbench, initShell, statusLine } from '../shared/workbench.js';
import { createLive } from './live.js';
import { CaptureFile, dissectingText } from './capture-file.js';
import { ConnectionBrowser } from './capture-connection.js';
import { CaptureViews } from './capture-overview.js';

class CapturePage {
  constructor(host) {
    const doc = host.document;
    const win = host.window;
    this.i18n = host.i18n;
    const $ = (id) => doc.getElementById(id);
    this.$ = $;
    this.doc = doc;
    this.win = win;
    const api = createApi(host);
    const searchApi = createCaptureSearchApi(host);
    const status = statusLine(doc);
    this.status = status;
    this.live = null; // the Live tab (live.js); while active, the workbench's callbacks go there
    const isLive = () => this.isLive();

    const wb = createWorkbench(
      { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
      {
        i18n: host.i18n,
        onSelect: (row) => (isLive() ? this.live.selectRow(row) : this.conn.selectRow(row)),
        onPick: (index, dir, offset) => (isLive() ? this.live.selectIndex(index) : this.conn.selectElement(index, { pick: { dir, offset } })),
        onJump: (index, ev) => (isLive() ? this.live.selectIndex(index) : this.conn.selectElement(typeof ev.index === 'number' ? ev.index : index, { hint: ev })),
        context: (ev) => (isLive() ? this.live.context(ev.dir) : this.conn.context(ev.dir)),
        copyText: (text) => {
          if (host.clipboard && host.clipboard.writeText) host.clipboard.writeText(text).then(() => status(this.i18n.t('ui.hex.copied')));
        },
      },
    );
    this.wb = wb;
    initShell(host, (on) => wb.setLarge(on));
    wb.selection.subscribe((s, prev) => {
      if (s.field !== prev.field) this.updateUrl();
    });

    const updateUrl = () => this.updateUrl();
    this.file = new CaptureFile(doc, {
      i18n: host.i18n,
      api,
      searchApi,
      status,
      setUrl: (params) => this.setUrl(params),
      show: (summary, link) => this.showSummary(summary, link),
      shownLink: () => this.shownLink(),
      closed: () => this.conn.abort(),
    });
    const connections = new ConnectionsView($('connections'), { i18n: host.i18n, onSelect: (conn) => (isLive() ? this.live.openConnection(conn) : this.conn.open(conn)) });
    this.connections = connections;
    this.conn = new ConnectionBrowser(doc, this.file, connections, {
      i18n: host.i18n,
      api,
      searchApi,
      wb,
      status,
      updateUrl,
      abortController: () => {
        const Abort = win.AbortController || globalThis.AbortController;
        return Abort ? new Abort() : null;
      },
    });
    $('delete-capture').addEventListener('click', () => this.file.id && this.file.delete(this.file.id, this.file.summary?.name || this.file.id));
    $('open-another').addEventListener('click', () => this.file.showUpload(true));
    this.views = new CaptureViews(doc, this.file, {
      i18n: host.i18n,
      api,
      updateUrl,
      open: (conn, index) => this.conn.open(conn, typeof index === 'number' ? { el: index } : {}),
    });
    this.live = createLive(host, { api, wb, connections, status, onUrl: updateUrl });
    $('tab-file').addEventListener('click', () => this.setMode('file'));
    $('tab-live').addEventListener('click', () => this.setMode('live'));
    win.addEventListener('keydown', (e) => this.onKey(e));
    // Another language: the open capture's elements, notes, experts and overview come again in it
    // (the server translates them), at the same element and field.
    this.i18n.onChange(() => {
      if (this.isLive() || !this.file.summary) return;
      this.views.languageChanged();
      this.showSummary(this.file.summary, { ...this.shownLink(), view: this.views.overviewShown ? 'overview' : undefined });
    });
  }

  isLive() {
    return !!(this.live && this.live.active);
  }

  /** The source tabs: a capture file (uploaded, dissected, paged) or a live source (streamed). */
  setMode(mode) {
    const { $, file, conn } = this;
    const on = mode === 'live';
    for (const [id, sel] of [['tab-file', !on], ['tab-live', on]]) {
      $(id).setAttribute('aria-selected', sel ? 'true' : 'false');
      $(id).classList.toggle('on', sel);
    }
    if (on === this.isLive()) return;
    if (on) {
      file.stopFollowing();
      $('open-another').hidden = true;
      this.showFileControls(false);
      this.live.activate();
      this.updateUrl();
      return;
    }
    this.live.deactivate();
    if (file.summary) this.showSummary(file.summary, { conn: conn.conn, kind: conn.filter.kind, q: conn.filter.q, scope: conn.filter.scope });
    else {
      file.showUpload(true);
      $('capture-section').hidden = true;
      this.setUrl({});
    }
  }

  /** A loaded capture (or the first part of one still being dissected): its facts, notices and connections. */
  showSummary(summary, link) {
    const { $, doc, file, conn, views } = this;
    file.summary = summary;
    if (this.isLive()) return; // shown when the file tab comes back
    this.showFileControls(true);
    file.showUpload(false);
    $('capture-section').hidden = false;
    const list = Array.isArray(summary.connections) ? summary.connections : [];
    const ex = summary.expert_total || {};
    $('capture-title').textContent = summary.name || this.i18n.t('ui.capture.title', { id: summary.id });
    const zmtp = list.filter((c) => c.zmtp !== false).length;
    const other = list.length - zmtp ? this.i18n.t('ui.capture.other', { n: list.length - zmtp }) : '';
    $('capture-facts').textContent = this.i18n.t('ui.capture.facts', { zmtp: this.i18n.tn('ui.capture.zmtp', zmtp), other, error: ex.error || 0, warn: ex.warn || 0, note: ex.note || 0 });
    const notices = [];
    if (summary.state === 'dissecting') {
      notices.push(h(doc, 'p', { class: 'banner', attrs: { id: 'dissect-notice', role: 'status' }, text: dissectingText(this.i18n, summary.percent) }));
    }
    const failed = summary.state === 'error' || !!summary.error;
    if (failed) {
      // With nothing read before the error there is nothing below, and "no ZMTP found" would mislead.
      const after = this.i18n.t(list.length ? 'ui.capture.after' : 'ui.capture.nothingBefore');
      notices.push(h(doc, 'p', { class: 'banner error', attrs: { role: 'alert' }, text: this.i18n.t('ui.capture.stopped', { error: String(summary.error || this.i18n.t('ui.capture.unknownError')).replace(/\.+$/, ''), after }) }));
    }
    if (!list.length && !failed) {
      notices.push(
        h(doc, 'p', { class: 'banner', t: this.i18n.message('ui.capture.noZmtp') }),
      );
    }
    setChildren($('notices'), notices);
    $('workbench').hidden = !list.length;
    $('connections').hidden = !list.length;
    this.connections.setConnections(list, null);
    views.summaryChanged(summary);
    views.set(link.view === 'overview' ? 'overview' : views.view);
    if (list.length) {
      const wanted = list.find((c) => String(c.conn) === String(link.conn));
      const filt = { kind: link.kind || '', q: link.q || '', scope: link.scope || conn.filter.scope || 'all' };
      conn.showFilter(filt);
      conn.open(String((wanted || list[0]).conn), { filter: filt, el: link.el, field: link.field });
    }
  }

  /** What belongs to a capture file, not to a live source: its delete button and its Overview. */
  showFileControls(on) {
    const { $ } = this;
    $('delete-capture').hidden = !on;
    $('view-tabs').hidden = !on;
    if (!on) $('overview').hidden = true; // (a live source shows its elements: the workbench)
  }

  // ---- URL -----------------------------------------------------------------------
  setUrl(params) {
    const win = this.win;
    if (win.history && win.history.replaceState) win.history.replaceState(null, '', `${win.location.pathname}${buildLink(params)}`);
  }

  /** What the user looks at in the open capture, as a link (the element, the filter). */
  shownLink() {
    const { conn } = this;
    const sel = this.wb.selection.get();
    return { conn: conn.conn, el: sel.index ?? undefined, field: sel.field ?? undefined, kind: conn.filter.kind, q: conn.filter.q, scope: conn.filter.scope };
  }

  updateUrl() {
    if (this.isLive()) {
      if (this.live.sourceId) this.setUrl({ live: this.live.sourceId });
      return;
    }
    const { file, conn } = this;
    if (!file.id) return;
    const s = this.wb.selection.get();
    this.setUrl({ id: file.id, conn: conn.conn, el: s.index, field: s.field, kind: conn.filter.kind, q: conn.filter.q,
      view: this.views.overviewShown ? 'overview' : undefined });
  }

  // ---- keyboard ------------------------------------------------------------------
  onKey(e) {
    if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      this.wb.sequence.move(e.key === 'ArrowDown' ? 1 : -1);
    }
  }

  /** Opens what the URL names: a live source, a capture, or the upload zone. */
  start() {
    const link = parseLink(this.win.location.search);
    this.file.showUpload(!link.id);
    this.$('capture-section').hidden = true;
    if (link.live) {
      this.setMode('live');
      this.live.attach(link.live);
    } else if (link.id) this.file.open(link.id, link);
  }
}

export function startCapture(host) {
  const page = new CapturePage(host);
  page.start();
  return { wb: page.wb, file: page.file, connection: page.conn, openCapture: (id, link) => page.file.open(id, link), live: page.live, setMode: (mode) => page.setMode(mode) };
}
