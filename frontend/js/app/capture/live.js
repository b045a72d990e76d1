// The capture viewer's "Live" tab: the same workbench (connections, sequence,
// octets, hex, details, expert) fed by a live source's websocket as traffic arrives.
// A live capture on a server interface, or a tap proxy (see core/live.js).
//
// createLive(host, { api, wb, connections, status, onUrl })
//   -> { active, activate(), deactivate(), attach(id), selectRow(row), selectIndex(index),
//        openConnection(conn), context(dir), sourceId }
// capture.js routes the workbench's callbacks here while the tab is active.
// The source itself (the form, the server's source, its socket) is live-source.js's; this module shows it.

import { ArraySource } from '../../core/source.js';
import { createChunker } from '../../core/hexdump.js';
import { peerLabel } from '../../core/eventlog.js';
import { LiveModel, describeSource } from '../../core/live.js';
import { setChildren, h, frameThrottle } from '../../views/dom.js';
import { LiveSource } from './live-source.js';

export function createLive(host, { api, wb, connections, status, onUrl = () => {} }) {
  const { i18n } = host;
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const model = new LiveModel();
  const source = new ArraySource([]);
  const st = {
    active: false,
    conn: null, // the connection shown
    picked: false, // the user chose a connection (else the first one is shown)
    chunker: createChunker(),
    chunked: 0,
  };

  const live = new LiveSource(host, model, {
    api,
    status,
    onUrl,
    reset() {
      st.conn = null;
      st.picked = false;
      source.set([]);
      wb.selection.clear();
      wb.hex.setChunks([]);
      st.chunker = createChunker();
      st.chunked = 0;
    },
    started() {
      showViewer(false);
      markDirty();
    },
    changed: () => markDirty(),
    statusSeen(s) {
      if (st.active) $('capture-facts').textContent = describeSource(i18n, s.source);
    },
  });

  // ---- redraws, at most once a frame -------------------------------------------------
  let lastHex = 0;
  let hexLater = null;
  // (in the page's one frame, with the views' redraws: core/frames.js)
  const flushSoon = frameThrottle(win, () => flush());
  function markDirty() {
    if (st.active) flushSoon();
  }

  function flush() {
    if (!st.active) return;
    const list = model.summaries();
    if (st.conn === null && list.length) openConnection(list[0].conn, { auto: true });
    showViewer(list.length > 0);
    connections.setConnections(list, st.conn);
    const log = st.conn !== null ? model.log(st.conn) : null;
    if (!log) return;
    source.set(log.events);
    wb.expert.setItems(log.experts.map((i) => ({ index: i, event: log.events[i] })));
    const s = model.summary(st.conn);
    wb.sequence.setLabels({
      client: `${peerLabel(i18n, 'client', log.peer('c2s'))}${s.client ? ' · ' + s.client : ''}`,
      server: `${peerLabel(i18n, 'server', log.peer('s2c'))}${s.server ? ' · ' + s.server : ''}`,
    });
    if (typeof s.first_ts === 'number' && s.first_ts !== wb.tree.timeBase) {
      wb.sequence.setTimeBase(s.first_ts);
      wb.tree.setTimeBase(s.first_ts); // the details count time as the sequence does
    }
    const sel = wb.selection.get();
    if (sel.index !== null && log.events[sel.index] !== sel.event && log.events[sel.index]) wb.selection.setEvent(sel.index, log.events[sel.index]);
    // The hex dump's layout is linear in the stream: a few times a second at most.
    const now = Date.now();
    if (now - lastHex > 250 || log.length < 2000) {
      lastHex = now;
      for (; st.chunked < log.length; st.chunked++) st.chunker.add(st.chunked, log.events[st.chunked]);
      wb.hex.setChunks(st.chunker.chunks);
    } else if (!hexLater) {
      // (one pending redraw, not one per frame)
      hexLater = win.setTimeout(() => {
        hexLater = null;
        markDirty();
      }, 260);
    }
  }

  function showViewer(hasData) {
    $('capture-section').hidden = false;
    $('workbench').hidden = !hasData;
    $('connections').hidden = !hasData;
    const running = live.id !== null;
    const text = hasData ? '' : i18n.t(running ? 'ui.live.waiting' : 'ui.live.startAbove');
    setChildren($('notices'), text ? h(doc, 'p', { class: 'banner', text }) : null);
  }

  // ---- a connection ------------------------------------------------------------------
  function openConnection(conn, { auto = false } = {}) {
    st.conn = String(conn);
    if (!auto) st.picked = true;
    st.chunker = createChunker();
    st.chunked = 0;
    wb.selection.clear();
    wb.sequence.setSource(source);
    wb.sequence.setFollowTail(true);
    wb.sequence.setSelected(null);
    wb.hex.setChunks([]);
    const log = model.log(st.conn);
    source.set(log ? log.events : []);
    markDirty();
  }

  function selectIndex(index) {
    const log = st.conn !== null ? model.log(st.conn) : null;
    const ev = log ? log.events[index] : null;
    if (!ev) return;
    wb.sequence.setSelected(index);
    wb.selection.selectElement(index, ev);
  }

  function context(dir) {
    const log = st.conn !== null ? model.log(st.conn) : null;
    return log ? log.context(dir) : {};
  }

  // ---- the tab --------------------------------------------------------------------------
  function activate() {
    st.active = true;
    $('upload-section').hidden = true;
    $('live-section').hidden = false;
    $('filter').hidden = true;
    $('packets').hidden = true;
    $('capture-title').textContent = i18n.t('ui.capture.tab.live');
    $('capture-facts').textContent = live.lastStatus ? describeSource(i18n, live.lastStatus.source) : '';
    live.loadInterfaces();
    if (st.conn !== null) openConnection(st.conn, { auto: !st.picked });
    else {
      wb.selection.clear();
      wb.sequence.setSource(source);
      wb.hex.setChunks([]);
      wb.expert.setItems([]);
    }
    showViewer(model.size > 0);
    markDirty();
  }

  function deactivate() {
    st.active = false;
    $('live-section').hidden = true;
    $('filter').hidden = false;
    $('packets').hidden = false;
    wb.sequence.setFollowTail(false);
  }

  return {
    get active() {
      return st.active;
    },
    get sourceId() {
      return live.id;
    },
    activate,
    deactivate,
    attach: (id, listen) => live.attach(id, listen),
    stop: () => live.stop(),
    selectRow: (row) => selectIndex(row),
    selectIndex,
    openConnection: (conn) => openConnection(conn),
    context,
    model,
  };
}
