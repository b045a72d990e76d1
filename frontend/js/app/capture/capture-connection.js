// The capture viewer's open connection: its elements fetched in pages, the filter (kind and search, over
// this connection or every one), selecting an element (fields fetched on demand, a small cache), the
// follow-stream hex around it, its expert list and the packets under it.
//
// Element indexes: `el` (URL) and selection.index are an element's index in its
// connection's unfiltered list (the backend's `index` key, else its position in
// an unfiltered page). With a filter, the sequence shows matching rows only: of
// every connection unless "this connection only" is ticked, each numbered
// with its connection and index; opening one opens its connection.

import { PagedSource } from '../../core/source.js';
import { buildChunks } from '../../core/hexdump.js';
import { fieldAt } from '../../core/octets.js';
import { formatCount } from '../../core/bytes.js';
import { matchText } from '../../core/capture-search.js';
import { FilterBar, PacketsView } from '../../views/capture.js';
import { IllustratedExport } from '../../views/illustrated-export.js';

const PAGE = 200;
const HEX_WINDOW = 150; // elements either side of the selection in the follow-stream view
const EXPERT_LIMIT = 500;
const FULL_CACHE = 200; // elements kept with their fields

export class ConnectionBrowser {
  /**
   * file: the CaptureFile (its `id` and `summary`). connections: the ConnectionsView (shared with the live tab).
   * page: { api, searchApi, wb, status(text, kind), updateUrl(), abortController(): a new AbortController, or null }
   */
  constructor(doc, file, connections, page) {
    this.i18n = page.i18n;
    const $ = (id) => doc.getElementById(id);
    this.file = file;
    this.connections = connections;
    this.page = page;
    this.conn = null;
    this.filter = { kind: '', q: '', scope: 'all' };
    this.list = null; // PagedSource of the sequence (filtered)
    this.stream = null; // PagedSource of the whole connection (the list itself when unfiltered)
    this.full = new Map(); // element index -> event with fields (small LRU)
    this.gen = 0; // bumps when the connection or filter changes; stale replies are dropped
    this.filterBar = new FilterBar($('filter'), { i18n: this.i18n, onChange: (f) => this.setFilter(f), onMore: () => this.searchFurther() });
    this.packets = new PacketsView($('packets'), { i18n: this.i18n, onPacket: (n) => this.showPacket(n) });
    this.export = new IllustratedExport($('illustrated-export'), { i18n: this.i18n, url: (from, to) => page.api.captureIllustratedUrl(file.id, this.conn, from, to) });
  }

  /** The open connection's entry in the capture's summary, or null. */
  info() {
    return (this.file.summary?.connections || []).find((c) => String(c.conn) === String(this.conn)) || null;
  }

  /** What the octet views need to know of a direction: its ZMTP version and the mechanism. */
  context(dir) {
    const c = this.info();
    if (!c) return {};
    return { version: c.versions ? c.versions[dir] : undefined, mechanism: c.mechanism };
  }

  /** Ends the requests of the list shown (another capture takes the page). */
  abort() {
    if (this.list && this.list.abort) this.list.abort();
  }

  /** Shows the filter the page was given (a link), before a connection opens with it. */
  showFilter(filt) {
    this.filterBar.set(filt);
  }

  makeSource() {
    const { conn } = this;
    const { id } = this.file;
    const { api } = this.page;
    return new PagedSource({ pageSize: PAGE, fetchPage: (offset, limit) => api.captureEvents(id, { conn, offset, limit, kind: '', q: '', fields: 0 }) });
  }

  open(conn, { filter: filt = this.filter, el, field, keepList = false } = {}) {
    const { wb } = this.page;
    const summary = this.file.summary;
    this.conn = conn;
    this.full.clear();
    const c = this.info();
    this.export.setRange(c ? c.events : 0);
    this.connections.setConnections(summary.connections, conn);
    const types = c && c.socket_types ? c.socket_types : {};
    wb.sequence.setLabels({ client: `${this.i18n.t('ui.peer.client')} ${c?.client || ''}${types.c2s ? ' · ' + types.c2s : ''}`, server: `${this.i18n.t('ui.peer.server')} ${c?.server || ''}${types.s2c ? ' · ' + types.s2c : ''}` });
    // Times count from the capture's first packet (as Wireshark's do): the same on every connection, so
    // a list of matches from several connections and the details of one agree.
    const firsts = (summary.connections || []).map((x) => x.first_ts).filter((t) => typeof t === 'number');
    const first = firsts.length ? Math.min(...firsts) : null;
    wb.sequence.setTimeBase(first);
    wb.tree.setTimeBase(first);
    this.stream = this.makeSource();
    // A list of every connection's matches stays as it is when one of them opens its connection.
    if (!(keepList && this.list && this.list !== this.stream && this.filter.scope === 'all')) this.applyFilter(filt);
    this.loadExperts(c);
    if (typeof el === 'number') {
      this.selectElement(el).then(() => {
        if (typeof field === 'number') wb.selection.selectField(field);
      });
    } else {
      wb.selection.clear();
      this.packets.setPackets([]);
      wb.hex.setChunks([]);
      this.stream.load().then(() => this.updateHex(0), (err) => this.page.status(err.message, 'error'));
      this.page.updateUrl();
    }
  }

  setFilter(f) {
    const { wb } = this.page;
    this.applyFilter({ ...f, scope: f.scope || this.filter.scope });
    const sel = wb.selection.get().index;
    if (sel !== null) wb.sequence.setSelected(this.rowOf(sel));
    this.page.updateUrl();
  }

  /** The filtered list: matches of every connection (scope 'all') or of the open one. */
  makeListSource(kind, q, scope, more = false) {
    const { id } = this.file;
    const { searchApi } = this.page;
    const conn = scope === 'conn' ? this.conn : undefined;
    let searchOn = more; // only the first page goes on with a search the server answered before its end
    const controller = this.page.abortController();
    const source = new PagedSource({
      pageSize: PAGE,
      fetchPage: (offset, limit) => {
        const m = searchOn && offset === 0;
        searchOn = false;
        return searchApi.events(id, { conn, offset, limit, kind, q, more: m }, controller ? controller.signal : undefined).then((res) => {
          if (offset === 0) source.search = res;
          return res;
        });
      },
    });
    source.search = null;
    // A list given up (another filter, connection or capture) ends its requests: the server stops their searches.
    source.abort = () => controller && controller.abort();
    return source;
  }

  applyFilter({ kind = '', q = '', scope = 'all' }, { more = false } = {}) {
    const { wb } = this.page;
    const bar = this.filterBar;
    this.filter = { kind, q, scope };
    this.gen += 1;
    const gen = this.gen;
    const filtered = !!(kind || q);
    this.abort();
    this.list = filtered ? this.makeListSource(kind, q, scope, more) : this.stream;
    const list = this.list;
    wb.sequence.setSource(list);
    wb.sequence.setRowNumbers(filtered ? (row, ev) => this.rowNumber(row, ev) : null);
    bar.setCount(() => (filtered && q ? this.i18n.t('ui.search.searching') : ''));
    list.load().then(
      () => {
        if (gen !== this.gen) return;
        if (filtered) {
          const res = list.search || { total: list.length };
          const { conn } = this;
          const connections = (this.file.summary?.connections || []).length;
          bar.setCount(() => matchText(this.i18n, res, { scope, conn, connections }), { more: !!res.partial });
        } else bar.setCount(() => this.i18n.tn('ui.seq.count', list.length, { n: formatCount(list.length) }));
        const sel = wb.selection.get().index;
        if (sel !== null) wb.sequence.setSelected(this.rowOf(sel));
      },
      (err) => {
        if (gen === this.gen) bar.setCount(() => this.i18n.t('ui.search.failed', { error: err.message }));
      },
    );
  }

  /** "Search further": the same search, on from where the server answered it (its time limit, or its first page full). */
  searchFurther() {
    this.applyFilter(this.filter, { more: true });
  }

  /** A filtered row is numbered as its element: connection and index (1-based, as in the unfiltered list). */
  rowNumber(row, ev) {
    if (!ev || typeof ev.index !== 'number') return String(row + 1);
    return this.filter.scope === 'all' ? `${ev.conn}:${ev.index + 1}` : String(ev.index + 1);
  }

  async loadExperts(c) {
    const { conn } = this;
    const { id } = this.file;
    const { wb } = this.page;
    const counts = c && c.expert ? c.expert : null;
    const total = counts ? (counts.note || 0) + (counts.warn || 0) + (counts.error || 0) : 0;
    if (counts && total === 0) {
      wb.expert.setItems([], { counts });
      return;
    }
    try {
      const res = await this.page.api.captureEvents(id, { conn, kind: 'expert', offset: 0, limit: EXPERT_LIMIT, fields: 0 });
      if (this.conn !== conn || this.file.id !== id) return;
      const events = Array.isArray(res.events) ? res.events : [];
      wb.expert.setItems(
        events.map((ev, i) => ({ index: typeof ev.index === 'number' ? ev.index : i, event: ev })),
        { total: typeof res.total === 'number' ? res.total : events.length, counts },
      );
    } catch (err) {
      this.page.status(this.i18n.t('ui.capture.expertFailed', { error: err.message }), 'error');
    }
  }

  /** Row of the sequence list showing element `index`, or null (filtered out / not loaded). */
  rowOf(index) {
    if (this.list === this.stream) return index;
    return this.list.findLoaded((event) => event.index === index && (event.conn === undefined || String(event.conn) === String(this.conn)));
  }

  selectRow(row) {
    const { list } = this;
    const ev = list.get(row);
    if (!ev) {
      list.ensure(row, row + 1).then(() => this.list.get(row) && this.selectRow(row));
      return;
    }
    const index = typeof ev.index === 'number' ? ev.index : row;
    if (list !== this.stream && ev.conn !== undefined && String(ev.conn) !== String(this.conn)) {
      this.open(String(ev.conn), { el: index, keepList: true });
      return;
    }
    this.selectElement(index, { row, hint: ev });
  }

  /**
   * Select element `index` (unfiltered): list row, inspector (fields fetched),
   * packets, follow stream. Resolves when its fields are in.
   */
  async selectElement(index, { row = null, hint = null, pick = null } = {}) {
    const { conn, full: cache, packets } = this;
    const { id } = this.file;
    const { wb } = this.page;
    wb.sequence.setSelected(row !== null ? row : this.rowOf(index));
    const cached = cache.get(index);
    wb.selection.selectElement(index, cached || hint || this.stream.get(index) || null);
    this.page.updateUrl();
    this.updateHex(index);
    const basic = cached || hint || this.stream.get(index);
    packets.setPackets(basic && basic.packets ? basic.packets : []);
    let full = cached;
    if (!full) {
      try {
        const res = await this.page.api.captureEvent(id, index, conn);
        full = res && res.event && typeof res.event === 'object' ? res.event : res;
      } catch (err) {
        this.page.status(this.i18n.t('ui.capture.elementFailed', { index, error: err.message }), 'error');
        return;
      }
      if (this.file.id !== id || this.conn !== conn) return;
      cache.set(index, full);
      if (cache.size > FULL_CACHE) cache.delete(cache.keys().next().value);
    }
    wb.selection.setEvent(index, full);
    packets.setPackets(Array.isArray(full.packets) ? full.packets : []);
    if (pick && full.dir === pick.dir) {
      const fi = fieldAt(full, pick.offset);
      if (fi >= 0) wb.selection.selectField(fi);
    }
  }

  /** The follow-stream view: the elements around `index`, fetched as needed. */
  updateHex(index) {
    const stream = this.stream;
    const start = Math.max(0, index - HEX_WINDOW);
    const end = index + HEX_WINDOW;
    const draw = () => {
      if (stream !== this.stream) return;
      const last = Math.min(end, stream.length);
      const note = stream.length > last - start
        ? this.i18n.t('ui.hex.window', { from: formatCount(start + 1), to: formatCount(last), n: formatCount(stream.length) })
        : '';
      this.page.wb.hex.setChunks(buildChunks(stream.slice(start, last).map(({ index: i, event }) => ({ index: typeof event.index === 'number' ? event.index : i, event }))), note);
    };
    stream.ensure(start, end).then(draw, (err) => this.page.status(err.message, 'error'));
  }

  async showPacket(n) {
    const { id } = this.file;
    const { packets } = this;
    packets.setLayers(null, n);
    try {
      const res = await this.page.api.capturePacket(id, n);
      if (this.file.id === id) packets.setLayers(res, n);
    } catch (err) {
      packets.setLayers({ error: this.i18n.t('ui.packets.failed', { number: n, error: err.message }) }, n);
    }
  }
}
