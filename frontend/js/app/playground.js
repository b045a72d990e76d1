// The playground page (index.html): create a session and watch it, or paste hex.
// host = { document, window, fetch, WebSocket, XMLHttpRequest, EventSource, FormData, clipboard }
// — the only place the environment comes from (see main-playground.js).

import { createApi } from '../core/api.js';
import { openSession } from '../core/session.js';
import { EventLog, peerLabel } from '../core/eventlog.js';
import { ArraySource } from '../core/source.js';
import { Marker, MarkedSource } from '../core/marks.js';
import { TEXT } from '../core/playground-text.js';
import { createChunker } from '../core/hexdump.js';
import { interleaveBySegments } from '../core/hexparse.js';
import { parseLink, buildLink } from '../core/links.js';
import { isTyping } from '../views/dom.js';
import { SessionForm, PlayControls, Composer, FaultMenu } from '../views/controls.js';
import { PasteView } from '../views/paste.js';
import { createWorkbench, initShell, statusLine } from './workbench.js';

function makeDataset({ marks = false } = {}) {
  const log = new EventLog();
  const source = new ArraySource(log.events);
  const marker = new Marker();
  // A session's sequence shows connection boundaries and faults as rows of their own (core/marks.js).
  const rows = marks ? new MarkedSource(source, marker.marks) : source;
  return { log, source, rows, marker, chunker: createChunker(), chunked: 0 };
}

/** The element a sequence row shows (null for a mark), and the row of an element. */
function eventOfRow(d, row) {
  return d.rows.eventOf ? d.rows.eventOf(row) : row;
}
function rowOfEvent(d, index) {
  return d.rows.rowOf ? d.rows.rowOf(index) : index;
}

export function startPlayground(host) {
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createApi(host);
  const status = statusLine(doc);
  const data = { session: makeDataset({ marks: true }), paste: makeDataset() };
  let active = 'session';
  let session = null; // { id, socket }
  let playing = false;
  let mode = 'simulated'; // of the session shown
  let queuedAt = null; // the position when a message was sent while paused (the composer says it waits)
  let socketTypes = { server: '', client: '' };
  let pendingLink = null; // { el, field } from the URL, applied when that element arrives
  const ds = () => data[active];

  const wb = createWorkbench(
    { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
    {
      onSelect: (row) => {
        const index = eventOfRow(ds(), row);
        if (index !== null) selectIndex(index);
      },
      onPick: (index) => selectIndex(index),
      onJump: (index) => selectIndex(index),
      context: (ev) => ds().log.context(ev.dir),
      copyText: (text) => copy(text),
    },
  );
  initShell(host, (on) => wb.setLarge(on));
  wb.selection.subscribe((s, prev) => {
    if (s.field !== prev.field || s.index !== prev.index) updateUrl();
  });

  // ---- data flow -------------------------------------------------------------
  let dirty = false;
  let lastHex = 0;
  const raf = win.requestAnimationFrame ? (f) => win.requestAnimationFrame(f) : (f) => setTimeout(f, 16);
  function markDirty() {
    if (dirty) return;
    dirty = true;
    raf(flush);
  }
  function flush() {
    dirty = false;
    const d = ds();
    d.source.set(d.log.events);
    wb.expert.setItems(d.log.experts.map((i) => ({ index: i, event: d.log.events[i] })));
    const server = d.log.peer('s2c');
    const client = d.log.peer('c2s');
    wb.sequence.setLabels({ client: peerLabel('client', client), server: peerLabel('server', server) });
    if (d === data.session) {
      const types = { server: server.socketType || socketTypes.server, client: client.socketType || socketTypes.client };
      if (types.server !== socketTypes.server || types.client !== socketTypes.client) {
        socketTypes = types;
        composer.setSocketTypes(types);
      }
    }
    const sel = wb.selection.get();
    if (sel.index !== null && d.log.events[sel.index] !== sel.event) {
      if (sel.index < d.log.length) wb.selection.setEvent(sel.index, d.log.events[sel.index]);
      else wb.selection.clear();
    }
    // The hex dump relayout is linear in the stream: at most a few times a second.
    const now = Date.now();
    if (now - lastHex > 250 || d.log.length < 2000) {
      lastHex = now;
      updateHex();
    } else setTimeout(markDirty, 260);
    applyPendingLink();
  }
  function updateHex() {
    const d = ds();
    if (d.chunked > d.log.length) rebuildChunks(d);
    for (; d.chunked < d.log.length; d.chunked++) d.chunker.add(d.chunked, d.log.events[d.chunked]);
    wb.hex.setChunks(d.chunker.chunks);
  }
  function rebuildChunks(d) {
    d.chunker = createChunker();
    d.chunked = 0;
  }
  function resetData(d) {
    d.log.clear();
    d.marker.clear();
    if (d.rows.setMarks) d.rows.setMarks(d.marker.marks);
    rebuildChunks(d);
    if (d === ds()) {
      wb.selection.clear();
      wb.sequence.setSource(d.rows);
      wb.sequence.setSelected(null);
    }
    markDirty();
  }

  function selectIndex(index) {
    const ev = ds().log.events[index];
    if (!ev) return;
    wb.sequence.setSelected(rowOfEvent(ds(), index));
    wb.selection.selectElement(index, ev);
  }

  function applyPendingLink() {
    if (!pendingLink || active !== 'session') return;
    if (ds().log.length > pendingLink.el) {
      selectIndex(pendingLink.el);
      if (pendingLink.field !== undefined) wb.selection.selectField(pendingLink.field);
      pendingLink = null;
    }
  }

  function updateUrl() {
    if (!win.history || !win.history.replaceState) return;
    const s = wb.selection.get();
    const params = active === 'session' && session ? { session: session.id, el: s.index, field: s.field } : {};
    const url = `${win.location.pathname}${buildLink(params)}${active === 'paste' ? '#paste' : ''}`;
    win.history.replaceState(null, '', url);
  }

  // ---- tabs ------------------------------------------------------------------
  const tabs = { session: $('tab-session'), paste: $('tab-paste') };
  const panes = { session: $('pane-session'), paste: $('pane-paste') };
  function showTab(name) {
    active = name === 'paste' ? 'paste' : 'session';
    for (const k of Object.keys(tabs)) {
      tabs[k].setAttribute('aria-selected', k === active ? 'true' : 'false');
      tabs[k].classList.toggle('on', k === active);
      panes[k].hidden = k !== active;
    }
    wb.selection.clear();
    wb.sequence.setSource(ds().rows);
    wb.sequence.setFollowTail(active === 'session');
    wb.hex.setChunks([]);
    ds().chunked = 0;
    ds().chunker = createChunker();
    markDirty();
    updateUrl();
  }
  tabs.session.addEventListener('click', () => showTab('session'));
  tabs.paste.addEventListener('click', () => showTab('paste'));

  // ---- session ---------------------------------------------------------------
  const form = new SessionForm($('session-form'), {
    async onCreate(request) {
      form.setBusy(true);
      form.setError('');
      try {
        const res = await api.createSession(request);
        socketTypes = { server: request.server.type, client: request.client.type };
        composer.setSocketTypes(socketTypes);
        connect(String(res.id), request.mode);
        $('session-setup').open = false;
      } catch (err) {
        form.setError(err.message);
      } finally {
        form.setBusy(false);
      }
    },
  });
  const controls = new PlayControls($('player'), {
    onCommand(cmd, value) {
      if (!session) return;
      const s = session.socket;
      if (cmd === 'play') s.play();
      else if (cmd === 'pause') s.pause();
      else if (cmd === 'step') s.step();
      else if (cmd === 'step_back') s.stepBack();
      else if (cmd === 'reset') s.reset();
      else if (cmd === 'speed') s.speed(value);
    },
  });
  const composer = new Composer($('composer'), {
    onSend(cmd) {
      if (!session) return;
      session.socket.send(cmd);
      // Paused, the message waits in the sending peer: say so until the session moves on.
      queuedAt = playing ? null : data.session.log.length;
      composer.setNote(playing ? '' : TEXT.composer.queued);
    },
  });
  const faults = new FaultMenu($('faults'), { onFault: (fault, args) => session && session.socket.fault(fault, args) });
  composer.setEnabled(false);
  faults.setEnabled(false);

  function setConnected(on) {
    controls.setEnabled(on);
    composer.setEnabled(on);
    faults.setEnabled(on);
  }

  function setMode(m) {
    mode = m === 'tcp' ? 'tcp' : 'simulated';
    faults.setMode(mode);
  }

  function connect(id, sessionMode) {
    if (session) session.socket.close();
    const d = data.session;
    resetData(d);
    queuedAt = null;
    composer.setNote('');
    if (sessionMode) setMode(sessionMode);
    if (active !== 'session') showTab('session');
    const socket = openSession({
      WebSocket: host.WebSocket,
      url: api.sessionSocketUrl(win.location, id),
      onOpen() {
        setConnected(true);
        controls.setStatus(`Connected to session ${id}.`);
      },
      onEvent(ev) {
        d.log.add(ev);
        markDirty();
      },
      onState(s) {
        playing = !!s.playing;
        controls.setState(s);
        if ((s.mode === 'tcp' || s.mode === 'simulated') && s.mode !== mode) setMode(s.mode);
        if (typeof s.position === 'number' && d.log.truncate(s.position)) {
          d.marker.truncate(s.position);
          d.rows.setMarks(d.marker.marks);
          rebuildChunks(d);
          markDirty();
        }
        if (queuedAt !== null && (playing || (typeof s.position === 'number' && s.position > queuedAt))) {
          queuedAt = null;
          composer.setNote('');
        }
      },
      onLog(entry) {
        if (d.marker.take(entry, d.log.length, d.log.events)) {
          d.rows.setMarks(d.marker.marks);
          markDirty();
        }
      },
      onError: (text) => status(text, 'error'),
      onReset() {
        resetData(d);
      },
      onClose(code, reason) {
        setConnected(false);
        playing = false;
        // 1000: the session ended; 1008: too many refused commands; 1013: this page fell behind; 4404: no session.
        const why = code && code !== 1000 ? ` (code ${code}${reason ? `: ${reason}` : ''})` : '';
        controls.setStatus(`Disconnected from session ${id}${why}.`);
        if (why) status(`Disconnected from session ${id}${why}.`, 'error');
      },
    });
    session = { id, socket };
    for (const fmt of ['pcapng', 'json']) {
      const a = $(`export-${fmt}`);
      a.href = api.sessionExportUrl(id, fmt);
      a.hidden = false;
    }
    $('session-id').textContent = `Session ${id}`;
    updateUrl();
  }

  // ---- paste -----------------------------------------------------------------
  const paste = new PasteView($('paste'), {
    async onDecode(parsed) {
      paste.setBusy(true);
      paste.setError('');
      try {
        const results = await Promise.all(parsed.directions.map((x) => api.decode(x.hex)));
        const byDir = {};
        parsed.directions.forEach((x, k) => {
          const events = Array.isArray(results[k] && results[k].events) ? results[k].events : [];
          byDir[x.dir] = events.map((ev) => ({ ...ev, conn: '0', dir: x.dir }));
        });
        const d = data.paste;
        resetData(d);
        d.log.addAll(interleaveBySegments(byDir, parsed.segments));
        markDirty();
        status(`Decoded ${d.log.length} element${d.log.length === 1 ? '' : 's'}.`);
        // Show the first protocol element, not a note such as "no greeting" that comes before it.
        const first = d.log.events.findIndex((ev) => ev.kind !== 'expert' && ev.kind !== 'gap');
        if (d.log.length) selectIndex(first >= 0 ? first : 0);
      } catch (err) {
        clearPaste();
        paste.setError(err.message);
      } finally {
        paste.setBusy(false);
      }
    },
    onInvalid: () => clearPaste(),
  });

  /** Input that does not decode: what an earlier paste decoded must not stay on screen as if it were this. */
  function clearPaste() {
    resetData(data.paste);
    status('');
  }

  // ---- keyboard --------------------------------------------------------------
  win.addEventListener('keydown', (e) => {
    if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    const socket = active === 'session' && session ? session.socket : null;
    const onButton = e.target && String(e.target.tagName || '').toUpperCase() === 'BUTTON';
    if (e.key === ' ' && socket && !onButton) {
      e.preventDefault();
      if (playing) socket.pause();
      else socket.play();
    } else if ((e.key === 'ArrowRight' || e.key === 'n') && socket) {
      e.preventDefault();
      socket.step();
    } else if ((e.key === 'ArrowLeft' || e.key === 'p') && socket) {
      e.preventDefault();
      socket.stepBack();
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      wb.sequence.move(e.key === 'ArrowDown' ? 1 : -1);
    }
  });

  function copy(text) {
    if (host.clipboard && host.clipboard.writeText) {
      host.clipboard.writeText(text).then(
        () => status('Copied as a Follow TCP Stream hex dump.'),
        () => status('The browser refused the clipboard.', 'error'),
      );
    }
  }

  // ---- start -----------------------------------------------------------------
  const link = parseLink(win.location.search);
  if ((win.location.hash || '').replace('#', '') === 'paste') showTab('paste');
  else showTab('session');
  if (link.session) {
    if (link.el !== undefined) pendingLink = { el: link.el, field: link.field };
    $('session-setup').open = false;
    connect(link.session);
  }
  return { wb, data, connect, showTab };
}
