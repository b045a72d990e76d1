// The playground's Session tab: the new-session form, the player, the composer and the fault menu, and
// the session's websocket that feeds the session's Dataset.

import { openSession, parseSessionExport } from '../../core/session.js';
import { tr, frameThrottle } from '../../views/dom.js';
import { SessionForm, PlayControls, Composer, FaultMenu } from '../../views/controls.js';

export class SessionPanel {
  /**
   * host: the page's host (document, window, WebSocket). data: the session's Dataset.
   * page: { api, status(text, kind), reset(data), redraw(), showSession(), urlChanged(), topology(t), speed(x) }, the
   * page around it (topology: the session's topology message, null for none yet; speed: the player's).
   */
  constructor(host, data, page) {
    this.i18n = host.i18n;
    this.host = host;
    this.data = data;
    this.page = page;
    this.session = null; // { id, socket }
    this.playing = false;
    this.canStepBack = false; // the session says whether a step back has anything to undo
    this.mode = 'simulated'; // of the session shown
    this.queuedAt = null; // the position when a message was sent while paused (the composer says it waits)
    this.socketTypes = { server: '', client: '' };
    const $ = (id) => host.document.getElementById(id);
    this.$ = $;
    // The player's line follows the session's state messages (many a second while it plays) in the page's frame:
    // written as they come, each would leave the page to lay out again between two frames.
    this.stateToShow = null;
    this.showState = frameThrottle(host.window, () => {
      if (this.stateToShow) this.controls.setState(this.stateToShow);
      this.stateToShow = null;
    });

    this.form = new SessionForm($('session-form'), { i18n: this.i18n, onCreate: (request) => this.create(request), onOpenExport: (file) => this.openExport(file) });
    this.controls = new PlayControls($('player'), {
      i18n: this.i18n,
      onCommand: (cmd, value) => {
        if (!this.session) return;
        const s = this.session.socket;
        if (cmd === 'play') s.play();
        else if (cmd === 'pause') s.pause();
        else if (cmd === 'step') s.step();
        else if (cmd === 'step_back') s.stepBack();
        else if (cmd === 'reset') s.reset();
        else if (cmd === 'speed') s.speed(value);
      },
    });
    this.composer = new Composer($('composer'), {
      i18n: this.i18n,
      onSend: (cmd) => {
        if (!this.session) return;
        this.session.socket.send(cmd);
        // Paused, the message waits in the sending peer: say so until the session moves on.
        this.queuedAt = this.playing ? null : data.log.length;
        this.composer.setNote(this.playing ? '' : this.i18n.t('ui.composer.queued'));
      },
    });
    this.faults = new FaultMenu($('faults'), { i18n: this.i18n, onFault: (fault, args) => this.session && this.session.socket.fault(fault, args) });
    // Which faults exist and which session modes take each: the server's one table (peers.faults).
    page.api.sessionFaults().then(
      (res) => this.faults.setTable(res.faults),
      (err) => page.status(this.i18n.t('ui.fault.noMenu', { error: err.message }), 'error'),
    );
    this.composer.setEnabled(false);
    this.faults.setEnabled(false);
  }

  /** The session's id, or null before one is shown. */
  get id() {
    return this.session ? this.session.id : null;
  }

  /** The session's socket (for the keyboard), or null. */
  get socket() {
    return this.session ? this.session.socket : null;
  }

  async create(request) {
    const { form } = this;
    form.setBusy(true);
    form.setError('');
    try {
      await this.start(request);
    } catch (err) {
      form.setError(err.message);
    } finally {
      form.setBusy(false);
    }
  }

  /**
   * Creates a session from a two-peer body, a topology or a preset ({preset, mode}) and shows it;
   * throws the server's refusal (the caller shows it where the request was made).
   */
  async start(request) {
    const res = await this.page.api.createSession(request);
    if (request.server && request.client) this.socketTypes = { server: request.server.type, client: request.client.type };
    else if (Array.isArray(request.nodes)) this.socketTypes = Object.fromEntries(request.nodes.map((n) => [n.name, n.type]));
    else this.socketTypes = {}; // a preset's nodes arrive with its topology
    if (Object.keys(this.socketTypes).length) this.composer.setSocketTypes(this.socketTypes);
    this.connect(String(res.id), request.mode);
    this.$('session-setup').open = false;
  }

  /**
   * A session's export.json opened from a file: its events shown as the session showed them (its diagram too, for
   * a topology), to read through; nothing plays (no server session: the controls stay off).
   */
  async openExport(file) {
    let data;
    try {
      data = parseSessionExport(this.i18n, await file.text());
    } catch (err) {
      this.form.setError(this.i18n.t('ui.export.badFile', { name: file.name, error: err.message }));
      return;
    }
    this.form.setError('');
    if (this.session) this.session.socket.close();
    this.session = null;
    const { page } = this;
    const d = this.data;
    page.topology(null);
    this.faults.setTopology(null);
    page.reset(d);
    this.setConnected(false);
    page.showSession();
    if (data.topology) this.topologySeen(data.topology);
    for (const ev of data.events) d.log.add(ev);
    page.redraw();
    for (const fmt of ['pcapng', 'json', 'html', 'py', 'lesson']) this.$(`export-${fmt}`).hidden = true;
    tr(this.$('session-id'), this.i18n.message('ui.export.title', { id: data.id }));
    this.controls.setStatus(this.i18n.message('ui.export.opened', { name: file.name, n: data.events.length }));
    this.$('session-setup').open = false;
    page.urlChanged();
  }

  /** The session's topology (on connect, and as its links open): who may send, and the diagram. */
  topologySeen(topology) {
    const nodes = (topology && topology.nodes) || [];
    if (nodes.length) {
      this.socketTypes = Object.fromEntries(nodes.map((n) => [n.name, n.type]));
      this.composer.setSocketTypes(this.socketTypes);
    }
    this.faults.setTopology(topology);
    this.page.topology(topology);
  }

  /** The peers' socket types as their READY commands say, for the composer (which may send what). */
  peersSeen(server, client) {
    if (!('server' in this.socketTypes && 'client' in this.socketTypes)) return; // a topology: its nodes say
    const types = { server: server.socketType || this.socketTypes.server, client: client.socketType || this.socketTypes.client };
    if (types.server !== this.socketTypes.server || types.client !== this.socketTypes.client) {
      this.socketTypes = types;
      this.composer.setSocketTypes(types);
    }
  }

  setConnected(on) {
    const drive = on && !this.watching; // (a student watching the teacher's session drives nothing)
    this.controls.setEnabled(drive);
    this.composer.setEnabled(drive);
    this.faults.setEnabled(drive);
  }

  setMode(m) {
    this.mode = m === 'tcp' ? 'tcp' : 'simulated';
    this.faults.setMode(this.mode);
  }

  /**
   * Shows session `id`: its socket feeds the session's Dataset from the start. `watch`: a student watching the
   * teacher's session (the socket takes no command). `at`: the session as it was at element `at` (a link to that
   * step): later elements are not shown.
   */
  connect(id, sessionMode, { watch = false, at = null } = {}) {
    const { page, controls, composer } = this;
    const d = this.data;
    this.watching = !!watch;
    this.at = Number.isInteger(at) && at >= 0 ? at : null;
    if (this.session) this.session.socket.close();
    page.topology(null);
    this.faults.setTopology(null);
    page.reset(d);
    this.queuedAt = null;
    composer.setNote('');
    if (sessionMode) this.setMode(sessionMode);
    page.showSession();
    const socket = openSession({
      i18n: this.i18n,
      WebSocket: this.host.WebSocket,
      url: page.api.sessionSocketUrl(this.host.window.location, id, { watch: this.watching }),
      onOpen: () => {
        this.setConnected(true);
        this.stateToShow = null;
        controls.setStatus(this.i18n.message('ui.session.connected', { id }));
      },
      onEvent: (ev) => {
        if (this.at !== null && d.log.length >= this.at) return; // (the session as it was at that step)
        d.log.add(ev);
        page.redraw();
      },
      onState: (s) => {
        this.playing = !!s.playing;
        this.canStepBack = s.can_step_back !== false && s.mode !== 'tcp';
        if (typeof s.position === 'number') this.linkAt(id, s.position);
        if (this.at !== null) {
          controls.setStatus(this.i18n.message('ui.session.atStep', { n: Math.min(this.at, s.position ?? this.at), total: s.total ?? '?' }));
          return;
        }
        this.stateToShow = s;
        this.showState();
        if (typeof s.speed === 'number' && page.speed) page.speed(s.speed);
        if ((s.mode === 'tcp' || s.mode === 'simulated') && s.mode !== this.mode) this.setMode(s.mode);
        if (typeof s.position === 'number' && d.truncate(s.position)) page.redraw();
        if (this.queuedAt !== null && (this.playing || (typeof s.position === 'number' && s.position > this.queuedAt))) {
          this.queuedAt = null;
          composer.setNote('');
        }
      },
      onTopology: (topology) => this.topologySeen(topology),
      onLog: (entry) => {
        if (d.takeLog(entry)) page.redraw();
      },
      onError: (text, severity) => page.status(text, severity),
      onReset: () => page.reset(d),
      onClose: (code, reason) => {
        this.setConnected(false);
        this.playing = false;
        // 1000: the session ended; 1008: too many refused commands; 1013: this page fell behind; 4404: no session.
        const why = code && code !== 1000 ? ['ui.session.disconnectedWhy', { id, code, reason: reason ? `: ${reason}` : '' }] : ['ui.session.disconnected', { id }];
        this.stateToShow = null; // (the last word is the disconnection's)
        controls.setStatus(this.i18n.message(...why));
        if (code && code !== 1000) page.status(this.i18n.t(...why), 'error');
      },
    });
    this.session = { id, socket };
    for (const fmt of ['pcapng', 'json', 'html', 'py', 'lesson']) {
      const a = this.$(`export-${fmt}`);
      a.href = page.api.sessionExportUrl(id, fmt);
      a.onclick = () => {
        a.href = page.api.sessionExportUrl(id, fmt); // (the illustrated page in the page's language of now)
      };
      a.hidden = false;
    }
    tr(this.$('session-id'), this.i18n.message('ui.session.title', { id }));
    page.urlChanged();
  }

  /** The link to this session at element `position` (?session=ID&at=N): what it shows then, for a handout or a
   * student who comes back to it. */
  linkAt(id, position) {
    const a = this.$('link-at');
    if (!a) return;
    const loc = this.host.window.location;
    a.href = `${loc.pathname}?session=${encodeURIComponent(id)}&at=${position}`;
    tr(a, this.i18n.message('ui.session.linkAt', { n: position }));
    a.hidden = false;
  }

  /**
   * The event `ev` of this session's Dataset with its fields (the socket sends events without them): fetched,
   * put in the Dataset in its place (so the views show it) and returned; null when the session or the event
   * has gone meanwhile (a step back, a reset, another session).
   */
  async withFields(ev) {
    if (Array.isArray(ev.fields) || typeof ev.seq !== 'number' || !this.session) return ev;
    const { id } = this.session;
    const full = await this.page.api.sessionEvent(id, ev.seq);
    const log = this.data.log;
    if (!this.session || this.session.id !== id || log.events[log.seqIndex.get(ev.seq)] !== ev) return null;
    log.add(full);
    this.page.redraw();
    return full;
  }

  /** Space: play or pause. */
  togglePlay() {
    if (!this.session) return;
    if (this.playing) this.session.socket.pause();
    else this.session.socket.play();
  }
}
