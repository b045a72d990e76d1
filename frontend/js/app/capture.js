// The capture viewer page (capture.html): upload a capture, follow its
// dissection, browse connections and their elements (fetched in pages),
// inspect an element (fields fetched on demand) and the packets under it.
// host = { document, window, fetch, XMLHttpRequest, EventSource, FormData, clipboard }
//
// Element indexes: `el` (URL) and selection.index are an element's index in its
// connection's unfiltered list (the backend's `index` key, else its position in
// an unfiltered page). With a filter, the sequence shows matching rows only: of
// every connection unless "this connection only" is ticked, each numbered
// with its connection and index; opening one opens its connection.

import { createApi } from '../core/api.js';
import { PagedSource } from '../core/source.js';
import { buildChunks } from '../core/hexdump.js';
import { fieldAt } from '../core/octets.js';
import { parseLink, buildLink } from '../core/links.js';
import { formatCount } from '../core/bytes.js';
import { isTyping, h, setChildren } from '../views/dom.js';
import { UploadView, ConnectionsView, FilterBar, PacketsView, CaptureListView } from '../views/capture.js';
import { createCaptureSearchApi, matchText } from '../core/capture-search.js';
import { OverviewView } from '../views/overview.js';
import { createWorkbench, initShell, statusLine } from './workbench.js';
import { createLive } from './live.js';

const PAGE = 200;
const HEX_WINDOW = 150; // elements either side of the selection in the follow-stream view
const EXPERT_LIMIT = 500;

export function startCapture(host) {
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createApi(host);
  const searchApi = createCaptureSearchApi(host);
  const status = statusLine(doc);

  const st = {
    id: null,
    summary: null,
    conn: null,
    filter: { kind: '', q: '', scope: 'all' },
    list: null, // PagedSource of the sequence (filtered)
    stream: null, // PagedSource of the whole connection (the list itself when unfiltered)
    full: new Map(), // element index -> event with fields (small LRU)
    gen: 0, // bumps when the connection or filter changes; stale replies are dropped
    view: 'elements', // or 'overview': the capture as a whole
    analysis: null, // { id, promise } of the analysis asked for
  };
  let stopProgress = null;
  let live = null; // the Live tab (app/live.js); while active, the workbench's callbacks go there
  const isLive = () => !!(live && live.active);

  const wb = createWorkbench(
    { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
    {
      onSelect: (row) => (isLive() ? live.selectRow(row) : selectRow(row)),
      onPick: (index, dir, offset) => (isLive() ? live.selectIndex(index) : selectElement(index, { pick: { dir, offset } })),
      onJump: (index, ev) => (isLive() ? live.selectIndex(index) : selectElement(typeof ev.index === 'number' ? ev.index : index, { hint: ev })),
      context: (ev) => (isLive() ? live.context(ev.dir) : connContext(ev.dir)),
      copyText: (text) => {
        if (host.clipboard && host.clipboard.writeText) host.clipboard.writeText(text).then(() => status('Copied as a Follow TCP Stream hex dump.'));
      },
    },
  );
  initShell(host, (on) => wb.setLarge(on));
  wb.selection.subscribe((s, prev) => {
    if (s.field !== prev.field) updateUrl();
  });

  const upload = new UploadView($('upload'), { onFile: (f) => uploadFile(f) });
  const connections = new ConnectionsView($('connections'), { onSelect: (conn) => (isLive() ? live.openConnection(conn) : openConnection(conn)) });
  const filter = new FilterBar($('filter'), { onChange: (f) => setFilter(f), onMore: () => searchFurther() });
  const myCaptures = new CaptureListView($('my-captures'), { onOpen: (id) => openCapture(id), onDelete: (id, name) => deleteCapture(id, name) });
  $('delete-capture').addEventListener('click', () => st.id && deleteCapture(st.id, st.summary?.name || st.id));
  const packets = new PacketsView($('packets'), { onPacket: (n) => showPacket(n) });
  $('open-another').addEventListener('click', () => showUpload(true));
  const overview = new OverviewView($('overview'), {
    onOpenEvent: (conn, index) => openFromOverview(conn, index),
    onOpenConnection: (conn) => openFromOverview(conn),
    onCurveCheck: (secret) => api.captureCurveCheck(st.id, [secret]),
  });
  $('view-elements').addEventListener('click', () => setView('elements'));
  $('view-overview').addEventListener('click', () => setView('overview'));
  live = createLive(host, { api, wb, connections, status, onUrl: () => updateUrl() });
  $('tab-file').addEventListener('click', () => setMode('file'));
  $('tab-live').addEventListener('click', () => setMode('live'));

  /** The source tabs: a capture file (uploaded, dissected, paged) or a live source (streamed). */
  function setMode(mode) {
    const on = mode === 'live';
    for (const [id, sel] of [['tab-file', !on], ['tab-live', on]]) {
      $(id).setAttribute('aria-selected', sel ? 'true' : 'false');
      $(id).classList.toggle('on', sel);
    }
    if (on === isLive()) return;
    if (on) {
      if (stopProgress) stopProgress();
      $('open-another').hidden = true;
      showFileControls(false);
      live.activate();
      updateUrl();
      return;
    }
    live.deactivate();
    if (st.summary) showSummary(st.summary, { conn: st.conn, kind: st.filter.kind, q: st.filter.q, scope: st.filter.scope });
    else {
      showUpload(true);
      $('capture-section').hidden = true;
      setUrl({});
    }
  }

  // ---- loading a capture -------------------------------------------------------
  function showUpload(on) {
    $('upload-section').hidden = !on;
    $('open-another').hidden = on || !st.id;
    if (on) refreshMyCaptures();
  }

  /** The list of this client's captures (under the upload zone). */
  async function refreshMyCaptures() {
    try {
      const res = await searchApi.myCaptures();
      myCaptures.setCaptures(Array.isArray(res?.captures) ? res.captures : [], st.id);
    } catch (err) {
      myCaptures.setCaptures([]);
      status(`Your captures: ${err.message}`, 'error');
    }
  }

  async function deleteCapture(id, name) {
    try {
      await searchApi.deleteCapture(id);
    } catch (err) {
      if (err.status !== 404) {
        status(`Could not delete ${name}: ${err.message}`, 'error');
        return;
      }
    }
    status(`Deleted ${name} from the server.`);
    if (st.id === id) {
      if (stopProgress) stopProgress();
      if (st.list && st.list.abort) st.list.abort();
      st.id = null;
      st.summary = null;
      $('capture-section').hidden = true;
      upload.reset();
      setUrl({});
      showUpload(true);
    } else refreshMyCaptures();
  }

  async function uploadFile(file) {
    upload.reset();
    upload.setUpload(0, file.size);
    try {
      const { promise } = api.uploadCapture(file, (loaded, total) => upload.setUpload(loaded, total));
      const res = await promise;
      await openCapture(String(res.id));
    } catch (err) {
      upload.setError(`Upload failed: ${err.message}`);
    }
  }

  async function openCapture(id, link = {}) {
    if (stopProgress) stopProgress();
    st.id = id;
    st.summary = null;
    setUrl({ id });
    let summary;
    try {
      summary = await api.capture(id);
    } catch (err) {
      showUpload(true);
      upload.setError(err.status === 404 ? `No capture with id ${id} (the server may have restarted): upload it again.` : `Could not load capture ${id}: ${err.message}`);
      return;
    }
    if (summary.state === 'done' || summary.state === 'error') {
      showSummary(summary, link);
      return;
    }
    // Still dissecting: follow the progress stream. The server serves a big capture's first elements
    // while it dissects the rest: show them as soon as the summary has connections, everything when done.
    const hasConnections = (s) => Array.isArray(s.connections) && s.connections.length > 0;
    let early = hasConnections(summary);
    if (early) showSummary(summary, link);
    else {
      showUpload(true);
      upload.setDissect(0, 'dissecting', summary.name || '');
    }
    let asking = false;
    const tryEarly = async () => {
      if (early || asking) return;
      asking = true;
      try {
        const s = await api.capture(id);
        if (st.id === id && !early && s.state === 'dissecting' && hasConnections(s)) {
          early = true;
          showSummary(s, link);
        }
      } catch {
        // the progress stream reports what went wrong
      } finally {
        asking = false;
      }
    };
    const finish = async () => {
      try {
        const s = await api.capture(id);
        if (st.id !== id) return;
        const sel = wb.selection.get();
        // Keep what the user is looking at in the first elements (their indexes do not change).
        showSummary(s, early ? { conn: st.conn, el: sel.index ?? undefined, field: sel.field ?? undefined, kind: st.filter.kind, q: st.filter.q, scope: st.filter.scope } : link);
      } catch (err) {
        if (early) status(err.message, 'error');
        else upload.setError(err.message);
      }
    };
    const onProgress = (msg) => {
      upload.setDissect(msg.percent, msg.state, msg.detail);
      const notice = $('dissect-notice');
      if (notice) notice.textContent = dissectingText(msg.percent);
      if (msg.state === 'done' || msg.state === 'error') finish();
      else tryEarly();
    };
    stopProgress = api.captureProgress(id, onProgress, () => pollSummary(id, onProgress));
  }

  function dissectingText(percent) {
    return `Dissecting the capture: ${Math.round(Number(percent) || 0)}%. Its first elements are shown meanwhile; the rest, and the counts, follow when it is done.`;
  }

  /** Without the progress stream: ask for the summary every second until the dissection ends. */
  async function pollSummary(id, onProgress) {
    while (st.id === id) {
      let summary;
      try {
        summary = await api.capture(id);
      } catch (err) {
        upload.setError(`Could not follow the dissection: ${err.message}`);
        return;
      }
      onProgress({ state: summary.state, percent: summary.percent, detail: '' });
      if (summary.state === 'done' || summary.state === 'error') return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  function showSummary(summary, link) {
    st.summary = summary;
    if (isLive()) return; // shown when the file tab comes back
    showFileControls(true);
    showUpload(false);
    $('capture-section').hidden = false;
    const list = Array.isArray(summary.connections) ? summary.connections : [];
    const ex = summary.expert_total || {};
    $('capture-title').textContent = summary.name || `Capture ${summary.id}`;
    const zmtp = list.filter((c) => c.zmtp !== false).length;
    const other = list.length - zmtp ? ` (and ${list.length - zmtp} not read as ZMTP)` : '';
    $('capture-facts').textContent = `${zmtp} ZMTP connection${zmtp === 1 ? '' : 's'}${other} · expert: ${ex.error || 0} error, ${ex.warn || 0} warn, ${ex.note || 0} note`;
    const notices = [];
    if (summary.state === 'dissecting') {
      notices.push(h(doc, 'p', { class: 'banner', attrs: { id: 'dissect-notice', role: 'status' }, text: dissectingText(summary.percent) }));
    }
    const failed = summary.state === 'error' || !!summary.error;
    if (failed) {
      // With nothing read before the error there is nothing below, and "no ZMTP found" would mislead.
      const after = list.length ? 'What was read before it is shown below.' : 'No ZMTP connection could be read before it.';
      notices.push(h(doc, 'p', { class: 'banner error', attrs: { role: 'alert' }, text: `The dissection stopped with an error: ${String(summary.error || 'unknown error').replace(/\.+$/, '')}. ${after}` }));
    }
    if (!list.length && !failed) {
      notices.push(
        h(doc, 'p', { class: 'banner', text: 'No ZMTP found in this capture: no TCP stream in it starts with a ZMTP greeting (%xFF, 8 octets, %x7F) or a ZMTP 1.0 identity frame. Capture the connection from its start, and make sure the capture holds its TCP payload.' }),
      );
    }
    setChildren($('notices'), notices);
    $('workbench').hidden = !list.length;
    $('connections').hidden = !list.length;
    connections.setConnections(list, null);
    if (st.analysis?.id !== summary.id || summary.state === 'dissecting') st.analysis = null;
    setView(link.view === 'overview' ? 'overview' : st.view);
    if (list.length) {
      const wanted = list.find((c) => String(c.conn) === String(link.conn));
      const filt = { kind: link.kind || '', q: link.q || '', scope: link.scope || st.filter.scope || 'all' };
      filter.set(filt);
      openConnection(String((wanted || list[0]).conn), { filter: filt, el: link.el, field: link.field });
    }
  }

  /** What belongs to a capture file, not to a live source: its delete button and its Overview. */
  function showFileControls(on) {
    $('delete-capture').hidden = !on;
    $('view-tabs').hidden = !on;
    if (!on) $('overview').hidden = true; // (a live source shows its elements: the workbench)
  }

  // ---- the overview (the capture as a whole) ------------------------------------
  /** Elements (one connection's, the workbench) or the Overview (topology, findings, flows). */
  function setView(view) {
    st.view = view === 'overview' ? 'overview' : 'elements';
    const over = st.view === 'overview';
    for (const [id, on] of [['view-elements', !over], ['view-overview', over]]) {
      $(id).setAttribute('aria-selected', on ? 'true' : 'false');
      $(id).classList.toggle('on', on);
    }
    const any = (st.summary?.connections || []).length > 0;
    $('overview').hidden = !over;
    $('workbench').hidden = over || !any;
    $('connections').hidden = over || !any;
    if (over) loadAnalysis();
    updateUrl();
  }

  async function loadAnalysis() {
    const id = st.id;
    if (!id || !st.summary) return;
    if (st.summary.state === 'dissecting') {
      overview.setMessage('The overview comes when the dissection is done.');
      return;
    }
    if (st.analysis?.id !== id) {
      overview.setMessage('Loading the analysis…');
      st.analysis = { id, promise: api.captureAnalysis(id) };
    }
    try {
      const analysis = await st.analysis.promise;
      if (st.id === id) overview.setAnalysis(analysis);
    } catch (err) {
      st.analysis = null;
      if (st.id === id) overview.setMessage(`No overview: ${err.message}`);
    }
  }

  function openFromOverview(conn, index) {
    setView('elements');
    openConnection(String(conn), typeof index === 'number' ? { el: index } : {});
  }

  // ---- a connection ------------------------------------------------------------
  function connInfo() {
    return (st.summary?.connections || []).find((c) => String(c.conn) === String(st.conn)) || null;
  }

  function connContext(dir) {
    const c = connInfo();
    if (!c) return {};
    return { version: c.versions ? c.versions[dir] : undefined, mechanism: c.mechanism };
  }

  function makeSource(kind, q) {
    const { id, conn } = st;
    return new PagedSource({ pageSize: PAGE, fetchPage: (offset, limit) => api.captureEvents(id, { conn, offset, limit, kind, q, fields: 0 }) });
  }

  function openConnection(conn, { filter: filt = st.filter, el, field, keepList = false } = {}) {
    st.conn = conn;
    st.full.clear();
    const c = connInfo();
    connections.setConnections(st.summary.connections, conn);
    const types = c && c.socket_types ? c.socket_types : {};
    wb.sequence.setLabels({ client: `client ${c?.client || ''}${types.c2s ? ' · ' + types.c2s : ''}`, server: `server ${c?.server || ''}${types.s2c ? ' · ' + types.s2c : ''}` });
    // Times count from the capture's first packet (as Wireshark's do): the same on every connection, so
    // a list of matches from several connections and the details of one agree.
    const firsts = (st.summary.connections || []).map((x) => x.first_ts).filter((t) => typeof t === 'number');
    const first = firsts.length ? Math.min(...firsts) : null;
    wb.sequence.setTimeBase(first);
    wb.tree.setTimeBase(first);
    st.stream = makeSource('', '');
    // A list of every connection's matches stays as it is when one of them opens its connection.
    if (!(keepList && st.list && st.list !== st.stream && st.filter.scope === 'all')) applyFilter(filt);
    loadExperts(c);
    if (typeof el === 'number') {
      selectElement(el).then(() => {
        if (typeof field === 'number') wb.selection.selectField(field);
      });
    } else {
      wb.selection.clear();
      packets.setPackets([]);
      wb.hex.setChunks([]);
      st.stream.load().then(() => updateHex(0), (err) => status(err.message, 'error'));
      updateUrl();
    }
  }

  function setFilter(f) {
    applyFilter({ ...f, scope: f.scope || st.filter.scope });
    const sel = wb.selection.get().index;
    if (sel !== null) wb.sequence.setSelected(rowOf(sel));
    updateUrl();
  }

  /** The filtered list: matches of every connection (scope 'all') or of the open one. */
  function makeListSource(kind, q, scope, more = false) {
    const { id } = st;
    const conn = scope === 'conn' ? st.conn : undefined;
    let searchOn = more; // only the first page goes on with a search the time limit stopped
    const Abort = win.AbortController || globalThis.AbortController;
    const controller = Abort ? new Abort() : null;
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

  function applyFilter({ kind = '', q = '', scope = 'all' }, { more = false } = {}) {
    st.filter = { kind, q, scope };
    st.gen += 1;
    const gen = st.gen;
    const filtered = !!(kind || q);
    if (st.list && st.list.abort) st.list.abort();
    st.list = filtered ? makeListSource(kind, q, scope, more) : st.stream;
    wb.sequence.setSource(st.list);
    wb.sequence.setRowNumbers(filtered ? rowNumber : null);
    filter.setCount(filtered && q ? 'searching…' : '');
    st.list.load().then(
      () => {
        if (gen !== st.gen) return;
        if (filtered) {
          const res = st.list.search || { total: st.list.length };
          filter.setCount(matchText(res, { scope, conn: st.conn, connections: (st.summary?.connections || []).length }), { more: !!res.partial });
        } else filter.setCount(`${formatCount(st.list.length)} elements`);
        const sel = wb.selection.get().index;
        if (sel !== null) wb.sequence.setSelected(rowOf(sel));
      },
      (err) => {
        if (gen === st.gen) filter.setCount(`filter failed: ${err.message}`);
      },
    );
  }

  /** "Search further": the same search, on from where the server's time limit stopped it. */
  function searchFurther() {
    applyFilter(st.filter, { more: true });
  }

  /** A filtered row is numbered as its element: connection and index (1-based, as in the unfiltered list). */
  function rowNumber(row, ev) {
    if (!ev || typeof ev.index !== 'number') return String(row + 1);
    return st.filter.scope === 'all' ? `${ev.conn}:${ev.index + 1}` : String(ev.index + 1);
  }

  async function loadExperts(c) {
    const { id, conn } = st;
    const counts = c && c.expert ? c.expert : null;
    const total = counts ? (counts.note || 0) + (counts.warn || 0) + (counts.error || 0) : 0;
    if (counts && total === 0) {
      wb.expert.setItems([], { counts });
      return;
    }
    try {
      const res = await api.captureEvents(id, { conn, kind: 'expert', offset: 0, limit: EXPERT_LIMIT, fields: 0 });
      if (st.conn !== conn || st.id !== id) return;
      const events = Array.isArray(res.events) ? res.events : [];
      wb.expert.setItems(
        events.map((ev, i) => ({ index: typeof ev.index === 'number' ? ev.index : i, event: ev })),
        { total: typeof res.total === 'number' ? res.total : events.length, counts },
      );
    } catch (err) {
      status(`Expert info: ${err.message}`, 'error');
    }
  }

  /** Row of the sequence list showing element `index`, or null (filtered out / not loaded). */
  function rowOf(index) {
    if (st.list === st.stream) return index;
    return st.list.findLoaded((event) => event.index === index && (event.conn === undefined || String(event.conn) === String(st.conn)));
  }

  function selectRow(row) {
    const ev = st.list.get(row);
    if (!ev) {
      st.list.ensure(row, row + 1).then(() => st.list.get(row) && selectRow(row));
      return;
    }
    const index = typeof ev.index === 'number' ? ev.index : row;
    if (st.list !== st.stream && ev.conn !== undefined && String(ev.conn) !== String(st.conn)) {
      openConnection(String(ev.conn), { el: index, keepList: true });
      return;
    }
    selectElement(index, { row, hint: ev });
  }

  /**
   * Select element `index` (unfiltered): list row, inspector (fields fetched),
   * packets, follow stream. Resolves when its fields are in.
   */
  async function selectElement(index, { row = null, hint = null, pick = null } = {}) {
    const { id, conn } = st;
    wb.sequence.setSelected(row !== null ? row : rowOf(index));
    const cached = st.full.get(index);
    wb.selection.selectElement(index, cached || hint || st.stream.get(index) || null);
    updateUrl();
    updateHex(index);
    const basic = cached || hint || st.stream.get(index);
    packets.setPackets(basic && basic.packets ? basic.packets : []);
    let full = cached;
    if (!full) {
      try {
        const res = await api.captureEvent(id, index, conn);
        full = res && res.event && typeof res.event === 'object' ? res.event : res;
      } catch (err) {
        status(`Element ${index}: ${err.message}`, 'error');
        return;
      }
      if (st.id !== id || st.conn !== conn) return;
      st.full.set(index, full);
      if (st.full.size > 200) st.full.delete(st.full.keys().next().value);
    }
    wb.selection.setEvent(index, full);
    packets.setPackets(Array.isArray(full.packets) ? full.packets : []);
    if (pick && full.dir === pick.dir) {
      const fi = fieldAt(full, pick.offset);
      if (fi >= 0) wb.selection.selectField(fi);
    }
  }

  /** The follow-stream view: the elements around `index`, fetched as needed. */
  function updateHex(index) {
    const stream = st.stream;
    const start = Math.max(0, index - HEX_WINDOW);
    const end = index + HEX_WINDOW;
    const draw = () => {
      if (stream !== st.stream) return;
      const last = Math.min(end, stream.length);
      const note = stream.length > last - start ? `elements ${formatCount(start + 1)}–${formatCount(last)} of ${formatCount(stream.length)}` : '';
      wb.hex.setChunks(buildChunks(stream.slice(start, last).map(({ index: i, event }) => ({ index: typeof event.index === 'number' ? event.index : i, event }))), note);
    };
    stream.ensure(start, end).then(draw, (err) => status(err.message, 'error'));
  }

  async function showPacket(n) {
    const id = st.id;
    packets.setLayers(null, n);
    try {
      const res = await api.capturePacket(id, n);
      if (st.id === id) packets.setLayers(res, n);
    } catch (err) {
      packets.setLayers({ error: `Frame #${n}: ${err.message}` }, n);
    }
  }

  // ---- URL -----------------------------------------------------------------------
  function setUrl(params) {
    if (win.history && win.history.replaceState) win.history.replaceState(null, '', `${win.location.pathname}${buildLink(params)}`);
  }

  function updateUrl() {
    if (isLive()) {
      if (live.sourceId) setUrl({ live: live.sourceId });
      return;
    }
    if (!st.id) return;
    const s = wb.selection.get();
    setUrl({ id: st.id, conn: st.conn, el: s.index, field: s.field, kind: st.filter.kind, q: st.filter.q,
      view: st.view === 'overview' ? 'overview' : undefined });
  }

  // ---- keyboard ------------------------------------------------------------------
  win.addEventListener('keydown', (e) => {
    if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      wb.sequence.move(e.key === 'ArrowDown' ? 1 : -1);
    }
  });

  // ---- start -----------------------------------------------------------------------
  const link = parseLink(win.location.search);
  showUpload(!link.id);
  $('capture-section').hidden = true;
  if (link.live) {
    setMode('live');
    live.attach(link.live);
  } else if (link.id) openCapture(link.id, link);
  return { wb, st, openCapture, live, setMode };
}
