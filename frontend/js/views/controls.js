// Playground controls: the session form, the player (play/pause/step/speed/reset),
// the message composer and the fault menu.

import { h, clear, setChildren, tr } from './dom.js';
import { SOCKET_TYPES, VERSIONS, MECHANISMS, GREETINGS, sessionRequest } from '../core/links.js';
import { newFrame, describeFrames, wireTotals, buildSendCommand } from '../core/composer.js';
import { faultsFor } from '../core/session.js';
import { Message, messages } from '../core/i18n.js';

/** A select of `options` (shown as they are, or as the Message labels[o] says). */
function select(d, options, value, props = {}, labels = null) {
  const sel = h(d, 'select', props);
  for (const o of options) sel.appendChild(h(d, 'option', labels && labels[o] ? { value: o, t: labels[o] } : { value: o, text: o }));
  sel.value = value;
  return sel;
}

const PEER_LABELS = { server: 'ui.peer.server', client: 'ui.peer.client' };
const GREETING_LABELS = { libzmq: 'ui.form.greeting.libzmq', full: 'ui.form.greeting.full' };

/** A labelled control; label: a Message, or { text } for a wire name. */
function field(d, label, control, className = '') {
  const name = label instanceof Message ? { t: label } : { text: label.text };
  return h(d, 'label', { class: `field ${className}`.trim() }, h(d, 'span', { class: 'field-label', ...name }), control);
}

/**
 * The form that creates a session: mode, then server and client peers.
 * new SessionForm(container, { onCreate(request) }) ; .setBusy(bool) ; .setError(text)
 */
export class SessionForm {
  constructor(container, { i18n, onCreate, onOpenExport = null }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onCreate = onCreate;
    this.mode = { simulated: h(d, 'input', { type: 'radio', name: 'mode', value: 'simulated', checked: true }), tcp: h(d, 'input', { type: 'radio', name: 'mode', value: 'tcp' }) };
    this.peers = { server: this.peerFields('server', 'PUSH'), client: this.peerFields('client', 'PULL') };
    this.autoplay = h(d, 'input', { type: 'checkbox', name: 'autoplay' });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.submit = h(d, 'button', { type: 'submit', class: 'primary', t: this.i18n.message('ui.form.start') });
    const form = h(
      d,
      'form',
      { class: 'session-form', on: { submit: (e) => this.onSubmit(e) } },
      h(
        d,
        'fieldset',
        { class: 'mode' },
        h(d, 'legend', { t: this.i18n.message('ui.form.peers') }),
        h(d, 'label', { class: 'check', tTitle: this.i18n.message('ui.form.simulated.title') }, this.mode.simulated, ' ', h(d, 'span', { t: this.i18n.message('ui.form.simulated') })),
        h(d, 'label', { class: 'check', tTitle: this.i18n.message('ui.form.tcp.title') }, this.mode.tcp, ' ', h(d, 'span', { t: this.i18n.message('ui.form.tcp') })),
      ),
      this.peers.server.root,
      this.peers.client.root,
      h(d, 'label', { class: 'check autoplay' }, this.autoplay, ' ', h(d, 'span', { t: this.i18n.message('ui.form.autoplay') })),
      this.error,
      this.submit,
    );
    clear(container);
    container.appendChild(form);
    if (onOpenExport) {
      // A session's export.json, opened again: what it recorded, to read through (it does not play).
      const file = h(d, 'input', { type: 'file', id: 'open-export', accept: '.json,application/json', hidden: true });
      file.addEventListener('change', () => {
        const f = file.files && file.files[0];
        if (f) onOpenExport(f);
        file.value = '';
      });
      container.appendChild(h(d, 'p', { class: 'open-export' },
        h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.export.open'), tTitle: this.i18n.message('ui.export.open.title'), on: { click: () => file.click() } }), file));
    }
    for (const radio of Object.values(this.mode)) radio.addEventListener('change', () => this.syncMode());
    this.syncMode();
  }

  /** A real libzmq socket is only offered for real TCP sessions. */
  syncMode() {
    const tcp = this.mode.tcp.checked;
    for (const c of Object.values(this.peers)) c.libzmqField.hidden = !tcp;
  }

  peerFields(role, type) {
    const d = this.doc;
    const c = {
      type: select(d, SOCKET_TYPES, type),
      version: select(d, VERSIONS, '3.1'),
      mechanism: select(d, MECHANISMS, 'NULL'),
      identity: h(d, 'input', { type: 'text', tPlaceholder: this.i18n.message('ui.form.optional'), autocomplete: 'off' }),
      username: h(d, 'input', { type: 'text', tPlaceholder: this.i18n.message('ui.form.plainOnly'), autocomplete: 'off' }),
      password: h(d, 'input', { type: 'text', tPlaceholder: this.i18n.message('ui.form.plainOnly'), autocomplete: 'off' }),
      libzmq: h(d, 'input', { type: 'checkbox', name: `${role}-libzmq` }),
      greeting: h(d, 'select', { name: `${role}-greeting`, tTitle: this.i18n.message('ui.form.greeting.help') }),
      subscribe: h(d, 'input', { type: 'text', name: `${role}-subscribe`, tPlaceholder: this.i18n.message('ui.form.topic.hint'), autocomplete: 'off' }),
      // The empty prefix, every message: on by default (the playground's PUB/SUB shows its messages); off with no
      // topic, the SUB subscribes to nothing and receives nothing, as a libzmq SUB that never subscribed.
      every: h(d, 'input', { type: 'checkbox', name: `${role}-subscribe-every`, checked: true }),
    };
    for (const g of GREETINGS) c.greeting.appendChild(h(d, 'option', { value: g, t: this.i18n.message(GREETING_LABELS[g]) }));
    c.greeting.value = 'libzmq';
    const none = h(d, 'p', { class: 'hint topic-none', t: this.i18n.message('ui.form.topic.none') });
    const topic = h(d, 'div', { class: 'topic' }, field(d, this.i18n.message('ui.form.topic'), c.subscribe),
      h(d, 'label', { class: 'check' }, c.every, ' ', h(d, 'span', { t: this.i18n.message('ui.form.topic.every') })), none);
    const syncType = () => {
      topic.hidden = c.type.value !== 'SUB';
      none.hidden = c.every.checked || !!c.subscribe.value;
    };
    c.type.addEventListener('change', syncType);
    c.every.addEventListener('change', () => {
      if (c.every.checked) c.subscribe.value = ''; // (a two-peer SUB has one subscription: this one, or a prefix)
      syncType();
    });
    c.subscribe.addEventListener('input', () => {
      if (c.subscribe.value) c.every.checked = false;
      syncType();
    });
    syncType();
    const creds = h(d, 'div', { class: 'creds' }, field(d, this.i18n.message('ui.form.username'), c.username), field(d, this.i18n.message('ui.form.password'), c.password));
    const sync = () => {
      creds.hidden = c.mechanism.value !== 'PLAIN';
    };
    c.mechanism.addEventListener('change', sync);
    sync();
    c.root = h(
      d,
      'fieldset',
      { class: `peer peer-${role}` },
      h(d, 'legend', { t: this.i18n.message(role === 'server' ? 'ui.form.server' : 'ui.form.client') }),
      h(d, 'div', { class: 'row3' }, field(d, this.i18n.message('ui.form.socket'), c.type), field(d, { text: 'ZMTP' }, c.version), field(d, this.i18n.message('ui.form.mechanism'), c.mechanism)),
      field(d, this.i18n.message('ui.form.identity'), c.identity),
      topic,
      creds,
      field(d, this.i18n.message('ui.form.greeting'), c.greeting),
      (c.libzmqField = h(d, 'label', { class: 'check', tTitle: this.i18n.message('ui.form.libzmq.help') }, c.libzmq, ' ', h(d, 'span', { t: this.i18n.message('ui.form.libzmq') }))),
    );
    return c;
  }

  values(c) {
    return { type: c.type.value, version: c.version.value, mechanism: c.mechanism.value, identity: c.identity.value, username: c.username.value, password: c.password.value, libzmq: c.libzmq.checked, greeting: c.greeting.value, subscribe: c.subscribe.value || (c.every.checked ? '' : null) };
  }

  onSubmit(e) {
    e.preventDefault();
    const mode = this.mode.tcp.checked ? 'tcp' : 'simulated';
    this.onCreate(sessionRequest(mode, this.values(this.peers.server), this.values(this.peers.client), { autoplay: this.autoplay.checked }));
  }

  setBusy(busy) {
    this.submit.disabled = !!busy;
    tr(this.submit, this.i18n.message(busy ? 'ui.form.starting' : 'ui.form.start'));
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }

  /** The peers' socket types, for the lifeline labels. */
  describe() {
    const s = this.values(this.peers.server);
    const c = this.values(this.peers.client);
    return { server: `${this.i18n.t('ui.peer.server')} ${s.type}${s.identity ? ' "' + s.identity + '"' : ''}`, client: `${this.i18n.t('ui.peer.client')} ${c.type}${c.identity ? ' "' + c.identity + '"' : ''}` };
  }
}

const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16];

/**
 * Player: play/pause, step back/forward, speed, reset, and the position.
 * new PlayControls(container, { onCommand(name, value) }) ; .setState(state) ; .setEnabled(bool)
 */
export class PlayControls {
  constructor(container, { i18n, onCommand }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onCommand = onCommand;
    this.playing = false;
    const btn = (text, title, cmd) => h(d, 'button', { type: 'button', class: 'ctl', t: this.i18n.message(text), tTitle: this.i18n.message(title), on: { click: () => this.onCommand(cmd) } });
    this.back = btn('ui.player.back', 'ui.player.back.title', 'step_back');
    this.play = h(d, 'button', { type: 'button', class: 'ctl primary', t: this.i18n.message('ui.player.play'), tTitle: this.i18n.message('ui.player.play.title'), on: { click: () => this.onCommand(this.playing ? 'pause' : 'play') } });
    this.fwd = btn('ui.player.step', 'ui.player.step.title', 'step');
    this.reset = btn('ui.player.reset', 'ui.player.reset.title', 'reset');
    this.speed = h(d, 'input', { type: 'range', min: 0, max: SPEEDS.length - 1, step: 1, value: 2, tTitle: this.i18n.message('ui.player.speed.title') });
    this.speedText = h(d, 'span', { class: 'speed-text', text: '1×' });
    this.speed.addEventListener('input', () => {
      const v = SPEEDS[Number(this.speed.value)];
      this.speedText.textContent = `${v}×`;
    });
    this.speed.addEventListener('change', () => this.onCommand('speed', SPEEDS[Number(this.speed.value)]));
    this.status = h(d, 'div', { class: 'play-status', attrs: { 'aria-live': 'polite' }, t: this.i18n.message('ui.player.noSession') });
    const root = h(d, 'div', { class: 'controls' }, h(d, 'div', { class: 'ctl-row' }, this.back, this.play, this.fwd, this.reset), h(d, 'div', { class: 'ctl-row' }, h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.player.speed') }), this.speed, this.speedText)), this.status);
    clear(container);
    container.appendChild(root);
    this.setEnabled(false);
  }

  setEnabled(on) {
    this.enabled = on;
    for (const b of [this.back, this.play, this.fwd, this.reset, this.speed]) b.disabled = !on;
  }

  setState(s) {
    this.playing = !!s.playing;
    // Back only where it can undo something: never in a real (tcp) session, not at the start. At the end, the
    // player is not "playing" anything: it waits for a message, a fault or a read, and says so.
    this.back.disabled = !this.enabled || s.mode === 'tcp' || s.can_step_back === false;
    const end = !!s.at_end && !s.closed;
    this.play.classList.toggle('primary', !end);
    tr(this.play, this.i18n.message(this.playing ? 'ui.player.pause' : 'ui.player.play'));
    if (typeof s.speed === 'number') {
      const k = SPEEDS.indexOf(s.speed);
      if (k >= 0) this.speed.value = String(k);
      this.speedText.textContent = `${s.speed}×`;
    }
    const pos = typeof s.position === 'number' ? s.position : '?';
    const total = typeof s.total === 'number' ? s.total : '?';
    const id = s.closed ? 'ui.player.state.closed' : end ? 'ui.player.state.end' : 'ui.player.state';
    tr(this.status, this.i18n.message(id, { state: this.i18n.t(this.playing ? 'ui.player.playing' : 'ui.player.paused'), pos, total }));
  }

  /** The line under the player: a Message. */
  setStatus(message) {
    tr(this.status, message);
  }
}

/**
 * Compose a message frame by frame and send it from the server or the client.
 * new Composer(container, { onSend(command) }) ; .setEnabled(bool) ; .setError(text)
 */
export class Composer {
  constructor(container, { i18n, onSend }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onSend = onSend;
    this.frames = [newFrame('My Message')];
    this.types = { server: '', client: '' };
    this.from = select(d, ['server', 'client'], 'server', {}, messages(this.i18n, PEER_LABELS));
    this.from.addEventListener('change', () => this.describe());
    this.note = h(d, 'p', { class: 'composer-note', attrs: { 'aria-live': 'polite' }, hidden: true });
    this.list = h(d, 'ol', { class: 'composer-frames' });
    this.summary = h(d, 'p', { class: 'composer-summary' });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.send = h(d, 'button', { type: 'button', class: 'primary', t: this.i18n.message('ui.composer.send'), on: { click: () => this.doSend() } });
    const add = h(d, 'button', { type: 'button', t: this.i18n.message('ui.composer.add'), on: { click: () => this.addFrame() } });
    const root = h(d, 'div', { class: 'composer' }, field(d, this.i18n.message('ui.composer.from'), this.from, 'inline'), this.list, h(d, 'div', { class: 'ctl-row' }, add, this.send), this.note, this.summary, this.error);
    clear(container);
    container.appendChild(root);
    this.renderFrames();
    this.i18n.onChange(() => this.describe());
  }

  addFrame() {
    this.frames.push(newFrame(''));
    this.renderFrames();
  }

  removeFrame(i) {
    this.frames.splice(i, 1);
    if (!this.frames.length) this.frames.push(newFrame(''));
    this.renderFrames();
  }

  renderFrames() {
    const d = this.doc;
    this.infos = [];
    setChildren(
      this.list,
      this.frames.map((f, i) => {
        const text = h(d, 'textarea', { rows: 1, value: f.text, spellcheck: false, tLabel: this.i18n.message('ui.composer.frame', { n: i + 1 }) });
        const mode = select(d, ['text', 'hex'], f.mode, { tLabel: this.i18n.message('ui.composer.encoding', { n: i + 1 }) }, messages(this.i18n, { text: 'ui.composer.text', hex: 'ui.composer.hex' }));
        const info = h(d, 'span', { class: 'frame-info' });
        this.infos.push(info);
        text.addEventListener('input', () => {
          f.text = text.value;
          this.describe();
        });
        mode.addEventListener('change', () => {
          f.mode = mode.value;
          this.describe();
        });
        const remove = h(d, 'button', { type: 'button', class: 'small', text: '✕', tTitle: this.i18n.message('ui.composer.remove'), on: { click: () => this.removeFrame(i) } });
        return h(d, 'li', { class: 'composer-frame' }, h(d, 'div', { class: 'frame-edit' }, text, mode, remove), info);
      }),
    );
    this.describe();
  }

  /**
   * The session's nodes and their socket types ({ server, client } in a two-peer session, one key per
   * node in a topology): who may send, and a ROUTER's first frame is its routing id.
   */
  setSocketTypes(types) {
    const names = Object.keys(types);
    const current = [...this.from.childNodes].map((o) => o.value);
    if (names.length && names.join('\n') !== current.join('\n')) {
      const was = this.from.value;
      clear(this.from);
      for (const name of names) this.from.appendChild(h(this.doc, 'option', { value: name, text: name }));
      this.from.value = names.includes(was) ? was : names[0];
    }
    this.types = Object.fromEntries(Object.entries(types).map(([k, v]) => [k, v || '']));
    this.describe();
  }

  routing() {
    return this.types[this.from.value] === 'ROUTER';
  }

  describe() {
    const routing = this.routing();
    const desc = describeFrames(this.i18n, this.frames, { routing });
    desc.forEach((f, i) => {
      const info = this.infos[i];
      info.classList.toggle('bad', !!f.error);
      info.classList.toggle('routing', !!f.routing);
      info.textContent = f.error ? f.error : f.routing ? this.i18n.tn('ui.composer.routingId', f.size) : this.i18n.t(f.more ? 'ui.composer.frameInfo.more' : 'ui.composer.frameInfo.last', { octets: this.i18n.tn('ui.octets', f.size, { n: f.size }), size: this.i18n.t(f.long ? 'ui.composer.long' : 'ui.composer.short') });
    });
    const totals = wireTotals(desc);
    this.summary.textContent = this.i18n.tn(routing ? 'ui.composer.summaryRouter' : 'ui.composer.summary', totals.frames, { octets: totals.octets });
  }

  /** A line under the Send button (e.g. that the message waits for the next step); '' hides it. */
  setNote(text) {
    this.note.textContent = text || '';
    this.note.hidden = !text;
  }

  doSend() {
    try {
      const cmd = buildSendCommand(this.i18n, this.from.value, this.frames);
      this.setError('');
      this.onSend(cmd);
    } catch (err) {
      this.setError(err.message);
    }
  }

  setEnabled(on) {
    this.send.disabled = !on;
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }
}

/**
 * Fault menu: pick a fault, the peer whose output it affects, and (for delay) seconds.
 * new FaultMenu(container, { onFault(fault, args) }) ; .setTable(faults) (GET /api/sessions/faults's list) ;
 * .setMode(mode) ; .setEnabled(bool)
 */
export class FaultMenu {
  constructor(container, { i18n, onFault }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.kind = h(d, 'select', { tLabel: this.i18n.message('ui.fault.fault') });
    this.peer = select(d, ['server', 'client'], 'server', {}, messages(this.i18n, PEER_LABELS));
    // In a topology the peer is a node, and the connection one of its links (by default its newest open one).
    this.conn = h(d, 'select', { tLabel: this.i18n.message('ui.fault.conn') });
    this.connField = field(d, this.i18n.message('ui.fault.conn'), this.conn, 'inline');
    this.connField.hidden = true;
    this.topology = null;
    this.peer.addEventListener('change', () => this.syncConns());
    this.seconds = h(d, 'input', { type: 'number', min: 0, max: 60, step: 0.5, value: 2 });
    this.secondsField = field(d, this.i18n.message('ui.fault.seconds'), this.seconds, 'inline');
    this.help = h(d, 'p', { class: 'hint' });
    this.inject = h(d, 'button', { type: 'button', t: this.i18n.message('ui.fault.inject'), on: { click: () => onFault(this.kind.value, this.args()) } });
    this.kind.addEventListener('change', () => this.sync());
    this.table = null; // the server's faults, once known
    this.setMode('simulated');
    this.i18n.onChange(() => this.setMode(this.mode));
    clear(container);
    container.appendChild(h(d, 'div', { class: 'faults' }, h(d, 'div', { class: 'ctl-row' }, field(d, this.i18n.message('ui.fault.fault'), this.kind, 'inline'), field(d, this.i18n.message('ui.fault.peer'), this.peer, 'inline')), this.connField, this.secondsField, this.help, this.inject));
  }

  /**
   * The session's topology (its `topology` message, null for a two-peer session): the peer is one of its nodes,
   * the connection one of that node's (`conns`), so a fault strikes where the teacher points.
   */
  setTopology(topology) {
    const d = this.doc;
    const nodes = topology && Array.isArray(topology.nodes) ? topology.nodes.map((n) => n.name) : [];
    const twoPeer = !nodes.length; // (a two-peer session sends no topology: the playground's socket does not ask)
    this.topology = twoPeer ? null : topology;
    const was = this.peer.value;
    clear(this.peer);
    if (twoPeer) {
      for (const p of ['server', 'client']) this.peer.appendChild(h(d, 'option', { value: p, t: this.i18n.message(PEER_LABELS[p]) }));
    } else for (const name of nodes) this.peer.appendChild(h(d, 'option', { value: name, text: name }));
    const names = [...this.peer.options].map((o) => o.value);
    this.peer.value = names.includes(was) ? was : names[0] || '';
    this.syncConns();
  }

  /** The chosen node's connections: its newest open one (the default), or one of them. */
  syncConns() {
    const d = this.doc;
    const topo = this.topology;
    this.connField.hidden = !topo;
    if (!topo) return;
    const node = this.peer.value;
    const was = this.conn.value;
    clear(this.conn);
    this.conn.appendChild(h(d, 'option', { value: '', t: this.i18n.message('ui.fault.conn.newest') }));
    for (const c of topo.conns || []) {
      if (c.client !== node && c.server !== node) continue;
      this.conn.appendChild(h(d, 'option', { value: String(c.conn), t: this.i18n.message('ui.fault.conn.one', { conn: c.conn, client: c.client, server: c.server }) }));
    }
    if ([...this.conn.options].some((o) => o.value === was)) this.conn.value = was;
  }

  /** The faults the server says sessions take ({fault, modes} each). */
  setTable(table) {
    this.table = table;
    this.setMode(this.mode);
  }

  /** Offer the faults a session of this mode ('simulated' or 'tcp') can inject. */
  setMode(mode) {
    const d = this.doc;
    const was = this.kind.value;
    this.mode = mode;
    this.faults = faultsFor(this.i18n, mode, this.table);
    clear(this.kind);
    for (const f of this.faults) this.kind.appendChild(h(d, 'option', { value: f.fault, text: f.label, title: f.help || undefined }));
    if (this.faults.some((f) => f.fault === was)) this.kind.value = was;
    this.sync();
  }

  sync() {
    const f = this.faults.find((x) => x.fault === this.kind.value);
    this.help.textContent = f ? f.help : '';
    this.secondsField.hidden = this.kind.value !== 'delay';
  }

  args() {
    const a = { peer: this.peer.value };
    if (this.topology && this.conn.value !== '') a.conn = this.conn.value;
    if (this.kind.value === 'delay') a.seconds = Number(this.seconds.value) || 0;
    return a;
  }

  setEnabled(on) {
    this.inject.disabled = !on;
  }
}
