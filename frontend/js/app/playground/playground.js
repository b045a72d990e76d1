// The playground page (index.html): create a session and watch it, or paste hex.
// host = { i18n, document, window, fetch, WebSocket, XMLHttpRequest, EventSource, FormData, clipboard }
// — the only place the environment comes from (see main-playground.js).
//
// The page is a few parts with one job each: a Dataset per tab (dataset.js), the Session tab
// (session-panel.js), the Paste hex tab (paste-panel.js), a topology session's diagram and lifelines
// (topology-panel.js), the topology box (topology-setup.js: presets, editor, file, link), the My peer tab
// (class-peer.js: this page as a peer of the topology's external node), and here
// the workbench they share: which tab is shown, redraws, the selection, the URL and the keyboard.

import { createApi } from '../../core/api.js';
import { peerLabel } from '../../core/eventlog.js';
import { parseLink, buildLink } from '../../core/links.js';
import { fieldAt } from '../../core/octets.js';
import { frameThrottle, isTyping } from '../../views/dom.js';
import { createWorkbench, initShell, statusLine } from '../shared/workbench.js';
import { Dataset } from '../shared/dataset.js';
import { SessionPanel } from './session-panel.js';
import { PastePanel } from './paste-panel.js';
import { ClassPeer } from './class-peer.js';
import { ExternalPanel } from './external-panel.js';
import { TopologyPanel } from '../shared/topology-panel.js';
import { TopologySetup } from './topology-setup.js';
import { ReplayPanel } from './replay-panel.js';
import { ClassroomClient } from '../shared/classroom-client.js';
import { createLessonsApi } from '../../lessons/api.js';
import { ExerciseBox } from '../../lessons/exercise.js';
import { h } from '../../views/dom.js';

class PlaygroundPage {
  constructor(host) {
    const doc = host.document;
    const win = host.window;
    const $ = (id) => doc.getElementById(id);
    this.host = host;
    this.i18n = host.i18n;
    this.win = win;
    this.api = createApi(host);
    this.status = statusLine(doc);
    this.data = { session: new Dataset({ i18n: host.i18n, marks: true }), paste: new Dataset({ i18n: host.i18n }), peer: new Dataset({ i18n: host.i18n }) };
    this.active = 'session';
    this.pendingLink = null; // { el, field } from the URL, applied when that element arrives
    this.dirty = false;
    this.lastHex = 0;
    this.hexLater = null; // the timer of the hex dump's next redraw, while the session is busy
    // (the views' frame: what the flush gives them is drawn in the same frame, one layout for all)
    this.flushSoon = frameThrottle(win, () => this.flush());

    const wb = createWorkbench(
      { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
      {
        i18n: host.i18n,
        onSelect: (row) => {
          const index = this.ds.eventOfRow(row);
          if (index !== null) this.select(index);
        },
        onPick: (index, dir, offset) => this.select(index, { pick: { dir, offset } }),
        onJump: (index) => this.select(index),
        context: (ev) => this.ds.log.context(ev.dir),
        copyText: (text) => this.copy(text),
      },
    );
    this.wb = wb;
    this.topo = new TopologyPanel($('topology'), { i18n: this.i18n, sequence: wb.sequence, onPick: (index) => this.select(index, { keepPath: true }),
      onRead: (node) => this.sessions.socket && this.sessions.socket.recv(node),
      // (the projector view gives a topology's diagram a row of its own)
      onShown: (on) => $('topology').parentElement.parentElement.classList.toggle('has-topology', on) });
    initShell(host, (on) => wb.setLarge(on));
    wb.selection.subscribe((s, prev) => {
      if (s.field !== prev.field || s.index !== prev.index) {
        this.updateUrl();
        if (this.classroom) this.classroom.broadcast();
      }
    });

    this.tabs = { session: $('tab-session'), paste: $('tab-paste'), peer: $('tab-peer') };
    this.panes = { session: $('pane-session'), paste: $('pane-paste'), peer: $('pane-peer') };
    this.tabs.session.addEventListener('click', () => this.showTab('session'));
    this.tabs.paste.addEventListener('click', () => this.showTab('paste'));
    this.tabs.peer.addEventListener('click', () => this.showTab('peer'));

    // What the tabs may do to the page around them.
    const page = {
      i18n: host.i18n,
      api: this.api,
      status: this.status,
      reset: (d) => this.reset(d),
      redraw: () => this.markDirty(),
      select: (index) => this.select(index),
      showSession: () => this.active !== 'session' && this.showTab('session'),
      urlChanged: () => {
        this.updateUrl();
        if (this.classroom) this.classroom.broadcast(); // (another session shown: the class watches it)
      },
      topology: (topo) => {
        if (topo) this.topo.setTopology(topo);
        else this.topo.forget();
        this.external.setTopology(topo); // (where programs outside join, and what to run there)
        this.peer.offer(topo);
      },
      speed: (x) => this.topo.view.setSpeed(x), // (the diagram's dots move faster)
    };
    this.external = new ExternalPanel(doc, $('external-box'), $('external-slot'), { i18n: host.i18n, copy: (text) => this.copy(text) });
    this.sessions = new SessionPanel(host, this.data.session, page);
    this.setup = new TopologySetup(host, $('topology-form'), {
      api: this.api,
      status: this.status,
      start: (request) => this.startSession(request),
    });
    this.paste = new PastePanel($('paste'), this.data.paste, page);
    this.peer = new ClassPeer(host, $('peer'), this.data.peer, {
      ...page,
      // (the tab is there while the session's topology has a node this page can be)
      offered: (on) => {
        this.tabs.peer.hidden = !on;
        if (!on && this.active === 'peer') this.showTab('session');
      },
    });
    this.startSession = async (request) => {
      await this.sessions.start(request);
      if (!this.exercise) $('topology-setup').open = false; // (an exercise's task and check stay in view)
    };
    this.classroom = this.presenterMode(host);
    win.addEventListener('keydown', (e) => this.onKey(e));
    // Another language: the lifelines' names are words (the views redraw themselves), and the notes and
    // expert texts come from the server in the language asked for: the session's socket is opened again (the
    // session goes on on the server; the element and field shown stay) and pasted hex is decoded again.
    this.i18n.onChange(() => {
      this.expertsShown = null; // (its words)
      this.markDirty();
      const id = this.sessions.id;
      if (id !== null) {
        const s = this.wb.selection.get();
        if (this.active === 'session' && s.index !== null) this.pendingLink = { el: s.index, field: s.field ?? undefined };
        this.sessions.connect(id);
      }
      if (this.data.paste.log.length) this.paste.view.decode();
    });
  }

  /**
   * Presenter mode on the playground (issue 32.10): a teacher presents the session shown (its id and the selected
   * element); a student watches that very session (a socket that takes no command: the teacher drives it) and
   * its selection. A state of the lessons page takes a student there.
   */
  presenterMode(host) {
    const win = this.win;
    const classroom = new ClassroomClient(host, createLessonsApi(host), {
      status: this.status,
      teacherState: () => {
        const id = this.sessions.id;
        if (id === null || this.sessions.watching) return null;
        const s = this.wb.selection.get();
        return { type: 'state', page: 'playground', session: id, selection: { element: s.index ?? null, field: s.field ?? null }, highlights: [] };
      },
      follow: async (state) => {
        if (state.page !== 'playground') {
          win.location.assign(`lessons.html${buildLink({ join: classroom.classCode })}`);
          return;
        }
        const element = state.selection ? state.selection.element : null;
        if (Number.isInteger(element)) this.pendingLink = { el: element, field: state.selection.field ?? undefined };
        if (this.sessions.id !== state.session) {
          this.sessions.connect(state.session, undefined, { watch: true });
          this.status(this.i18n.t('ui.class.watching', { id: state.session.slice(0, 8) }));
        } else this.applyPendingLink();
      },
      hasLesson: () => this.sessions.id !== null,
      hintOpenLesson: () => {
        if (this.sessions.id === null) this.status(this.i18n.t('ui.class.startSession'));
        else classroom.broadcast();
      },
      urlChanged: () => this.updateUrl(),
      showList: () => {},
      answers: () => {},
    });
    return classroom;
  }

  /** The Dataset of the tab shown. */
  get ds() {
    return this.data[this.active];
  }

  // ---- redraws, at most once a frame ----------------------------------------------------
  markDirty() {
    if (this.dirty) return;
    this.dirty = true;
    this.flushSoon();
  }

  flush() {
    this.dirty = false;
    const { wb } = this;
    const d = this.ds;
    d.source.set(d.log.events);
    // (drawn again when it changed, not on every frame of a busy session)
    if (this.expertsShown !== d.log.experts || this.expertsCount !== d.log.experts.length) {
      this.expertsShown = d.log.experts;
      this.expertsCount = d.log.experts.length;
      wb.expert.setItems(d.log.experts.map((i) => ({ index: i, event: d.log.events[i] })));
    }
    const server = d.log.peer('s2c');
    const client = d.log.peer('c2s');
    wb.sequence.setLabels({ client: peerLabel(this.i18n, 'client', client), server: peerLabel(this.i18n, 'server', server) });
    if (d === this.data.session) this.sessions.peersSeen(server, client);
    const sel = wb.selection.get();
    if (sel.index !== null && d.log.events[sel.index] !== sel.event) {
      const ev = d.log.events[sel.index];
      if (sel.index < d.log.length) {
        wb.selection.setEvent(sel.index, ev);
        // (another element in its place, after a step back: its fields are fetched too)
        if (d === this.data.session && !Array.isArray(ev.fields)) this.fetchFields(sel.index, ev, null);
      } else wb.selection.clear();
    }
    if (d === this.data.session && this.topo.active) {
      this.topo.sync(d.log.events);
      // Many connections: the hex dump follows the selected element's (else the first).
      d.setChunkConn(this.topo.hexConn(wb.selection.get().event));
      wb.hex.setEnds(this.topo.connEnds(d.chunkConn));
    } else if (d === this.ds) wb.hex.setEnds(null);
    // The hex dump relayout is linear in the stream: at most a few times a second.
    const now = Date.now();
    if (now - this.lastHex > 250 || d.log.length < 2000) {
      this.lastHex = now;
      wb.hex.setChunks(d.chunks());
    } else if (!this.hexLater) {
      // (one pending redraw, not one per frame)
      this.hexLater = setTimeout(() => {
        this.hexLater = null;
        this.markDirty();
      }, 260);
    }
    this.applyPendingLink();
  }

  /** Empties a Dataset (and what shows it, when its tab is shown). */
  reset(d) {
    d.clear();
    if (d === this.ds) {
      this.wb.selection.clear();
      this.wb.sequence.setSource(d.rows);
      this.wb.sequence.setSelected(null);
    }
    this.markDirty();
  }

  // ---- selection and the URL ------------------------------------------------------------
  select(index, { keepPath = false, pick = null } = {}) {
    const ev = this.ds.log.events[index];
    if (!ev) return;
    this.wb.sequence.setSelected(this.ds.rowOfEvent(index));
    this.wb.selection.selectElement(index, ev);
    if (this.ds === this.data.session && !Array.isArray(ev.fields)) this.fetchFields(index, ev, pick);
    if (this.ds === this.data.session && this.topo.active) {
      if (!keepPath) this.topo.selected(ev);
      // The hex dump shows the selected element's connection.
      if (this.ds.setChunkConn(this.topo.hexConn(ev))) {
        this.wb.hex.setEnds(this.topo.connEnds(this.ds.chunkConn));
        this.wb.hex.setChunks([]);
        this.markDirty();
      }
    }
  }

  /** The session's element `index` was opened without its fields: they are fetched, then shown (and the field
   *  under a picked byte selected). */
  async fetchFields(index, ev, pick) {
    let full;
    try {
      full = await this.sessions.withFields(ev);
    } catch (err) {
      this.status(this.i18n.t('ui.capture.elementFailed', { index, error: err.message }), 'error');
      return;
    }
    const { wb } = this;
    if (!full || wb.selection.get().index !== index) return;
    wb.selection.setEvent(index, full);
    if (pick && full.dir === pick.dir) {
      const fi = fieldAt(full, pick.offset);
      if (fi >= 0) wb.selection.selectField(fi);
    }
  }

  applyPendingLink() {
    const link = this.pendingLink;
    if (!link || this.active !== 'session') return;
    if (this.ds.log.length > link.el) {
      this.select(link.el);
      if (link.field !== undefined) this.wb.selection.selectField(link.field);
      this.pendingLink = null;
    }
  }

  updateUrl() {
    const win = this.win;
    if (!win.history || !win.history.replaceState) return;
    const s = this.wb.selection.get();
    const id = this.sessions ? this.sessions.id : null;
    const params = this.active === 'session' && id !== null ? { session: id, el: s.index, field: s.field } : {};
    const cls = this.classroom;
    if (cls && cls.role && cls.classCode) {
      params[cls.role === 'teacher' ? 'present' : 'join'] = cls.classCode;
      if (cls.role === 'student') delete params.session; // (the class says which session a student watches)
    }
    if (this.exercise) Object.assign(params, { exercise: this.exercise.lessonId, step: this.exercise.step }); // (a reload keeps it)
    if (this.replay) params.replay = this.replay.captureId; // (a reload keeps the replay box; the session goes on)
    const url = `${win.location.pathname}${buildLink(params)}${this.active === 'paste' ? '#paste' : ''}`;
    win.history.replaceState(null, '', url);
  }

  // ---- tabs -----------------------------------------------------------------------------
  showTab(name) {
    this.active = name === 'paste' || name === 'peer' ? name : 'session';
    for (const k of Object.keys(this.tabs)) {
      this.tabs[k].setAttribute('aria-selected', k === this.active ? 'true' : 'false');
      this.tabs[k].classList.toggle('on', k === this.active);
      this.panes[k].hidden = k !== this.active;
    }
    const { wb } = this;
    wb.selection.clear();
    wb.sequence.setSource(this.ds.rows);
    wb.sequence.setFollowTail(this.active === 'session');
    this.topo.show(this.active === 'session');
    wb.hex.setChunks([]);
    this.ds.rebuildChunks();
    this.markDirty();
    this.updateUrl();
  }

  // ---- keyboard and clipboard -----------------------------------------------------------
  onKey(e) {
    if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    const socket = this.active === 'session' ? this.sessions.socket : null;
    const onButton = e.target && String(e.target.tagName || '').toUpperCase() === 'BUTTON';
    if (e.key === ' ' && socket && !onButton) {
      e.preventDefault();
      this.sessions.togglePlay();
    } else if ((e.key === 'ArrowRight' || e.key === 'n' || e.key === 'PageDown') && socket) {
      // (PageDown and PageUp: what a presentation clicker sends)
      e.preventDefault();
      socket.step();
    } else if ((e.key === 'ArrowLeft' || e.key === 'p' || e.key === 'PageUp') && socket) {
      e.preventDefault();
      if (this.sessions.canStepBack) socket.stepBack();
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      this.wb.sequence.move(e.key === 'ArrowDown' ? 1 : -1);
    }
  }

  copy(text) {
    const clipboard = this.host.clipboard;
    if (clipboard && clipboard.writeText) {
      clipboard.writeText(text).then(
        () => this.status(this.i18n.t('ui.hex.copied')),
        () => this.status(this.i18n.t('ui.hex.clipboardRefused'), 'error'),
      );
    }
  }

  /** Opens the tab and the session the URL names. */
  start() {
    const win = this.win;
    const link = parseLink(win.location.search);
    const hash = win.location.hash || ''; // (read first: showing a tab rewrites the URL)
    if (hash.replace('#', '') === 'paste') this.showTab('paste');
    else this.showTab('session');
    // A shared topology (#topology=...) waits in the editor for Start.
    if (this.setup.fromHash(hash)) this.host.document.getElementById('topology-setup').open = true;
    if (link.session && !link.join) {
      if (link.el !== undefined) this.pendingLink = { el: link.el, field: link.field };
      this.host.document.getElementById('session-setup').open = false;
      this.sessions.connect(link.session, undefined, { at: link.at });
    }
    this.classroom.resume(link);
    if (link.exercise) this.openExercise(link.exercise, Number.parseInt(link.step, 10) || 1);
    if (link.replay) this.openReplay(link.replay, { start: !link.session });
  }

  /**
   * A capture replayed (?replay=CAPTURE_ID, the capture viewer's "Open in playground"): the replay box beside the
   * diagram, its topology started as a session (and put in the topology box), re-run with the changes it is given.
   */
  openReplay(captureId, { start }) {
    const doc = this.host.document;
    const box = doc.getElementById('replay-box');
    box.hidden = false;
    box.open = true;
    doc.getElementById('session-setup').open = false;
    this.replay = new ReplayPanel(doc, doc.getElementById('replay-slot'), captureId, {
      i18n: this.i18n,
      api: this.api,
      start: async (topology) => {
        this.setup.editor.setTopology(topology);
        await this.startSession({ mode: 'simulated', ...topology, autoplay: false });
        this.updateUrl();
      },
      saveTopology: (topology) => this.setup.save(topology),
      lessonUrl: () => (this.sessions.id !== null ? this.api.sessionExportUrl(this.sessions.id, 'lesson') : null),
    });
    this.replay.load({ start });
  }

  /**
   * A lesson's exercise (?exercise=ID&step=N, the lessons page's link): its task above the topology editor,
   * which opens with the exercise's start; "Check my topology" sends what the editor holds to the server.
   */
  async openExercise(lessonId, step) {
    const doc = this.host.document;
    if (!this.exercise) this.i18n.onChange(() => this.openExercise(this.exercise.lessonId, this.exercise.step)); // (its words come again)
    this.exercise = { lessonId, step };
    const api = createLessonsApi(this.host);
    try {
      const [lesson, scene] = await Promise.all([api.lesson(lessonId), api.step(lessonId, step)]);
      const exercise = scene.exercise;
      if (!exercise || exercise.kind !== 'topology') throw new Error(this.i18n.t('ui.exercise.none'));
      const back = h(doc, 'p', { class: 'hint' },
        h(doc, 'a', { href: `lessons.html${buildLink({ lesson: lessonId, step })}`, text: this.i18n.t('ui.exercise.from', { lesson: lesson.title, n: step }) }));
      const box = new ExerciseBox(doc, exercise, { i18n: this.i18n, check: (body) => api.exercise(lessonId, step, body), topology: () => this.setup.editor.topology, header: back });
      doc.getElementById('exercise-slot').replaceChildren(box.root);
      if (exercise.start && !this.exerciseStarted) this.setup.editor.setTopology(exercise.start); // (once: not over the student's work)
      if (!this.exerciseStarted) doc.getElementById('session-setup').open = false; // (the two-peer form would push the task below the fold)
      this.exerciseStarted = true;
      doc.getElementById('topology-setup').open = true;
    } catch (err) {
      this.status(this.i18n.t('ui.exercise.failed', { error: err.message }), 'error');
    }
  }
}

export function startPlayground(host) {
  const page = new PlaygroundPage(host);
  page.start();
  return { wb: page.wb, data: page.data, topology: page.topo, connect: (id, mode) => page.sessions.connect(id, mode), showTab: (name) => page.showTab(name) };
}
