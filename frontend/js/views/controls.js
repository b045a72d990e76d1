// Playground controls: the session form, the player (play/pause/step/speed/reset),
// the message composer and the fault menu.

import { h, clear, setChildren } from './dom.js';
import { SOCKET_TYPES, VERSIONS, MECHANISMS, GREETINGS, sessionRequest } from '../core/links.js';
import { newFrame, describeFrames, wireTotals, buildSendCommand } from '../core/composer.js';
import { faultsFor } from '../core/session.js';
import { TEXT } from '../core/playground-text.js';

function select(d, options, value, props = {}) {
  const sel = h(d, 'select', props);
  for (const o of options) sel.appendChild(h(d, 'option', { value: o, text: o }));
  sel.value = value;
  return sel;
}

function field(d, label, control, className = '') {
  return h(d, 'label', { class: `field ${className}`.trim() }, h(d, 'span', { class: 'field-label', text: label }), control);
}

/**
 * The form that creates a session: mode, then server and client peers.
 * new SessionForm(container, { onCreate(request) }) ; .setBusy(bool) ; .setError(text)
 */
export class SessionForm {
  constructor(container, { onCreate }) {
    const d = (this.doc = container.ownerDocument);
    this.onCreate = onCreate;
    this.mode = { simulated: h(d, 'input', { type: 'radio', name: 'mode', value: 'simulated', checked: true }), tcp: h(d, 'input', { type: 'radio', name: 'mode', value: 'tcp' }) };
    this.peers = { server: this.peerFields('server', 'PUSH'), client: this.peerFields('client', 'PULL') };
    this.autoplay = h(d, 'input', { type: 'checkbox', name: 'autoplay' });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.submit = h(d, 'button', { type: 'submit', class: 'primary', text: 'Start session' });
    const form = h(
      d,
      'form',
      { class: 'session-form', on: { submit: (e) => this.onSubmit(e) } },
      h(
        d,
        'fieldset',
        { class: 'mode' },
        h(d, 'legend', { text: 'Peers' }),
        h(d, 'label', { class: 'check', title: 'Two engines talk through a simulated duplex with a virtual clock: step, rewind, inject faults' }, this.mode.simulated, ' simulated'),
        h(d, 'label', { class: 'check', title: 'Two real asyncio TCP peers on 127.0.0.1' }, this.mode.tcp, ' real TCP'),
      ),
      this.peers.server.root,
      this.peers.client.root,
      h(d, 'label', { class: 'check autoplay' }, this.autoplay, ` ${TEXT.form.autoplay}`),
      this.error,
      this.submit,
    );
    clear(container);
    container.appendChild(form);
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
      identity: h(d, 'input', { type: 'text', placeholder: 'optional', autocomplete: 'off' }),
      username: h(d, 'input', { type: 'text', placeholder: 'PLAIN only', autocomplete: 'off' }),
      password: h(d, 'input', { type: 'text', placeholder: 'PLAIN only', autocomplete: 'off' }),
      libzmq: h(d, 'input', { type: 'checkbox', name: `${role}-libzmq` }),
      greeting: h(d, 'select', { name: `${role}-greeting`, title: TEXT.form.greetingHelp }),
      subscribe: h(d, 'input', { type: 'text', name: `${role}-subscribe`, placeholder: TEXT.form.topicHint, autocomplete: 'off' }),
    };
    for (const g of GREETINGS) c.greeting.appendChild(h(d, 'option', { value: g, text: TEXT.form.greetingOptions[g] }));
    c.greeting.value = 'libzmq';
    const topic = field(d, TEXT.form.topic, c.subscribe, 'topic');
    const syncType = () => {
      topic.hidden = c.type.value !== 'SUB';
    };
    c.type.addEventListener('change', syncType);
    syncType();
    const creds = h(d, 'div', { class: 'creds' }, field(d, 'Username', c.username), field(d, 'Password', c.password));
    const sync = () => {
      creds.hidden = c.mechanism.value !== 'PLAIN';
    };
    c.mechanism.addEventListener('change', sync);
    sync();
    c.root = h(
      d,
      'fieldset',
      { class: `peer peer-${role}` },
      h(d, 'legend', { text: role === 'server' ? 'Server (binds)' : 'Client (connects)' }),
      h(d, 'div', { class: 'row3' }, field(d, 'Socket', c.type), field(d, 'ZMTP', c.version), field(d, 'Mechanism', c.mechanism)),
      field(d, 'Identity', c.identity),
      topic,
      creds,
      field(d, TEXT.form.greeting, c.greeting),
      (c.libzmqField = h(d, 'label', { class: 'check', title: TEXT.form.realLibzmqHelp }, c.libzmq, ` ${TEXT.form.realLibzmq}`)),
    );
    return c;
  }

  values(c) {
    return { type: c.type.value, version: c.version.value, mechanism: c.mechanism.value, identity: c.identity.value, username: c.username.value, password: c.password.value, libzmq: c.libzmq.checked, greeting: c.greeting.value, subscribe: c.subscribe.value };
  }

  onSubmit(e) {
    e.preventDefault();
    const mode = this.mode.tcp.checked ? 'tcp' : 'simulated';
    this.onCreate(sessionRequest(mode, this.values(this.peers.server), this.values(this.peers.client), { autoplay: this.autoplay.checked }));
  }

  setBusy(busy) {
    this.submit.disabled = !!busy;
    this.submit.textContent = busy ? 'Starting…' : 'Start session';
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }

  /** The peers' socket types, for the lifeline labels. */
  describe() {
    const s = this.values(this.peers.server);
    const c = this.values(this.peers.client);
    return { server: `server ${s.type}${s.identity ? ' "' + s.identity + '"' : ''}`, client: `client ${c.type}${c.identity ? ' "' + c.identity + '"' : ''}` };
  }
}

const SPEEDS = [0.25, 0.5, 1, 2, 4, 8, 16];

/**
 * Player: play/pause, step back/forward, speed, reset, and the position.
 * new PlayControls(container, { onCommand(name, value) }) ; .setState(state) ; .setEnabled(bool)
 */
export class PlayControls {
  constructor(container, { onCommand }) {
    const d = (this.doc = container.ownerDocument);
    this.onCommand = onCommand;
    this.playing = false;
    const btn = (text, title, cmd) => h(d, 'button', { type: 'button', class: 'ctl', text, title, on: { click: () => this.onCommand(cmd) } });
    this.back = btn('« Back', 'Step back one element (← or p)', 'step_back');
    this.play = h(d, 'button', { type: 'button', class: 'ctl primary', text: '▶ Play', title: 'Play / pause (space)', on: { click: () => this.onCommand(this.playing ? 'pause' : 'play') } });
    this.fwd = btn('Step »', 'Step forward one element (→ or n)', 'step');
    this.reset = btn('↺ Reset', 'Start the session again from the beginning', 'reset');
    this.speed = h(d, 'input', { type: 'range', min: 0, max: SPEEDS.length - 1, step: 1, value: 2, title: 'Playback speed' });
    this.speedText = h(d, 'span', { class: 'speed-text', text: '1×' });
    this.speed.addEventListener('input', () => {
      const v = SPEEDS[Number(this.speed.value)];
      this.speedText.textContent = `${v}×`;
    });
    this.speed.addEventListener('change', () => this.onCommand('speed', SPEEDS[Number(this.speed.value)]));
    this.status = h(d, 'div', { class: 'play-status', attrs: { 'aria-live': 'polite' }, text: 'No session.' });
    const root = h(d, 'div', { class: 'controls' }, h(d, 'div', { class: 'ctl-row' }, this.back, this.play, this.fwd, this.reset), h(d, 'div', { class: 'ctl-row' }, h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', text: 'Speed' }), this.speed, this.speedText)), this.status);
    clear(container);
    container.appendChild(root);
    this.setEnabled(false);
  }

  setEnabled(on) {
    for (const b of [this.back, this.play, this.fwd, this.reset, this.speed]) b.disabled = !on;
  }

  setState(s) {
    this.playing = !!s.playing;
    this.play.textContent = this.playing ? '❚❚ Pause' : '▶ Play';
    if (typeof s.speed === 'number') {
      const k = SPEEDS.indexOf(s.speed);
      if (k >= 0) this.speed.value = String(k);
      this.speedText.textContent = `${s.speed}×`;
    }
    const pos = typeof s.position === 'number' ? s.position : '?';
    const total = typeof s.total === 'number' ? s.total : '?';
    this.status.textContent = `${s.closed ? 'Connection closed · ' : ''}${this.playing ? 'playing' : 'paused'} · element ${pos} of ${total}`;
  }

  setStatus(text) {
    this.status.textContent = text;
  }
}

/**
 * Compose a message frame by frame and send it from the server or the client.
 * new Composer(container, { onSend(command) }) ; .setEnabled(bool) ; .setError(text)
 */
export class Composer {
  constructor(container, { onSend }) {
    const d = (this.doc = container.ownerDocument);
    this.onSend = onSend;
    this.frames = [newFrame('My Message')];
    this.types = { server: '', client: '' };
    this.from = select(d, ['server', 'client'], 'server');
    this.from.addEventListener('change', () => this.describe());
    this.note = h(d, 'p', { class: 'composer-note', attrs: { 'aria-live': 'polite' }, hidden: true });
    this.list = h(d, 'ol', { class: 'composer-frames' });
    this.summary = h(d, 'p', { class: 'composer-summary' });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.send = h(d, 'button', { type: 'button', class: 'primary', text: 'Send message', on: { click: () => this.doSend() } });
    const add = h(d, 'button', { type: 'button', text: '+ Frame', on: { click: () => this.addFrame() } });
    const root = h(d, 'div', { class: 'composer' }, field(d, 'Send from', this.from, 'inline'), this.list, h(d, 'div', { class: 'ctl-row' }, add, this.send), this.note, this.summary, this.error);
    clear(container);
    container.appendChild(root);
    this.renderFrames();
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
        const text = h(d, 'textarea', { rows: 1, value: f.text, spellcheck: false, attrs: { 'aria-label': `Frame ${i + 1}` } });
        const mode = select(d, ['text', 'hex'], f.mode, { attrs: { 'aria-label': `Frame ${i + 1} encoding` } });
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
        const remove = h(d, 'button', { type: 'button', class: 'small', text: '✕', title: 'Remove this frame', on: { click: () => this.removeFrame(i) } });
        return h(d, 'li', { class: 'composer-frame' }, h(d, 'div', { class: 'frame-edit' }, text, mode, remove), info);
      }),
    );
    this.describe();
  }

  /** The sessions' socket types ({ server, client }): a ROUTER's first frame is its routing id. */
  setSocketTypes(types) {
    this.types = { server: types.server || '', client: types.client || '' };
    this.describe();
  }

  routing() {
    return this.types[this.from.value] === 'ROUTER';
  }

  describe() {
    const routing = this.routing();
    const desc = describeFrames(this.frames, { routing });
    desc.forEach((f, i) => {
      const info = this.infos[i];
      info.classList.toggle('bad', !!f.error);
      info.classList.toggle('routing', !!f.routing);
      info.textContent = f.error ? f.error : f.routing ? TEXT.composer.routingId({ size: f.size }) : `${f.size} octet${f.size === 1 ? '' : 's'} · ${f.long ? 'LONG (8-octet size)' : 'short (1-octet size)'}${f.more ? ' · MORE' : ' · last'}`;
    });
    this.summary.textContent = (routing ? TEXT.composer.summaryRouter : TEXT.composer.summary)(wireTotals(desc));
  }

  /** A line under the Send button (e.g. that the message waits for the next step); '' hides it. */
  setNote(text) {
    this.note.textContent = text || '';
    this.note.hidden = !text;
  }

  doSend() {
    try {
      const cmd = buildSendCommand(this.from.value, this.frames);
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
  constructor(container, { onFault }) {
    const d = (this.doc = container.ownerDocument);
    this.kind = h(d, 'select', { attrs: { 'aria-label': 'Fault' } });
    this.peer = select(d, ['server', 'client'], 'server');
    this.seconds = h(d, 'input', { type: 'number', min: 0, max: 60, step: 0.5, value: 2 });
    this.secondsField = field(d, 'Seconds', this.seconds, 'inline');
    this.help = h(d, 'p', { class: 'hint' });
    this.inject = h(d, 'button', { type: 'button', text: 'Inject fault', on: { click: () => onFault(this.kind.value, this.args()) } });
    this.kind.addEventListener('change', () => this.sync());
    this.table = null; // the server's faults, once known
    this.setMode('simulated');
    clear(container);
    container.appendChild(h(d, 'div', { class: 'faults' }, h(d, 'div', { class: 'ctl-row' }, field(d, 'Fault', this.kind, 'inline'), field(d, 'Peer', this.peer, 'inline')), this.secondsField, this.help, this.inject));
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
    this.faults = faultsFor(mode, this.table);
    clear(this.kind);
    for (const f of this.faults) this.kind.appendChild(h(d, 'option', { value: f.fault, text: f.label, title: f.help }));
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
    if (this.kind.value === 'delay') a.seconds = Number(this.seconds.value) || 0;
    return a;
  }

  setEnabled(on) {
    this.inject.disabled = !on;
  }
}
