// Playground controls: the session form, the player (play/pause/step/speed/reset),
// the message composer and the fault menu.

import { h, clear, setChildren } from './dom.js';
import { SOCKET_TYPES, VERSIONS, MECHANISMS, sessionRequest } from '../core/links.js';
import { newFrame, describeFrames, buildSendCommand } from '../core/composer.js';
import { FAULTS } from '../core/session.js';

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
      this.error,
      this.submit,
    );
    clear(container);
    container.appendChild(form);
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
      libzmq: h(d, 'input', { type: 'checkbox' }),
    };
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
      creds,
      h(d, 'label', { class: 'check', title: 'Behave like libzmq 4.3: greeting in three writes, padding = identity length + 1' }, c.libzmq, ' libzmq-style greeting'),
    );
    return c;
  }

  values(c) {
    return { type: c.type.value, version: c.version.value, mechanism: c.mechanism.value, identity: c.identity.value, username: c.username.value, password: c.password.value, libzmq: c.libzmq.checked };
  }

  onSubmit(e) {
    e.preventDefault();
    const mode = this.mode.tcp.checked ? 'tcp' : 'simulated';
    this.onCreate(sessionRequest(mode, this.values(this.peers.server), this.values(this.peers.client)));
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
    this.from = select(d, ['server', 'client'], 'server');
    this.list = h(d, 'ol', { class: 'composer-frames' });
    this.summary = h(d, 'p', { class: 'composer-summary' });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.send = h(d, 'button', { type: 'button', class: 'primary', text: 'Send message', on: { click: () => this.doSend() } });
    const add = h(d, 'button', { type: 'button', text: '+ Frame', on: { click: () => this.addFrame() } });
    const root = h(d, 'div', { class: 'composer' }, field(d, 'Send from', this.from, 'inline'), this.list, h(d, 'div', { class: 'ctl-row' }, add, this.send), this.summary, this.error);
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

  describe() {
    const desc = describeFrames(this.frames);
    desc.forEach((f, i) => {
      const info = this.infos[i];
      info.classList.toggle('bad', !!f.error);
      info.textContent = f.error ? f.error : `${f.size} octet${f.size === 1 ? '' : 's'} · ${f.long ? 'LONG (8-octet size)' : 'short (1-octet size)'}${f.more ? ' · MORE' : ' · last'}`;
    });
    const total = desc.reduce((n, f) => n + f.size + f.header, 0);
    this.summary.textContent = `${desc.length} frame${desc.length === 1 ? '' : 's'}, ${total} octets on the wire. MORE is set on all frames but the last; frames over 255 octets use the long size.`;
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
 * new FaultMenu(container, { onFault(fault, args) }) ; .setEnabled(bool)
 */
export class FaultMenu {
  constructor(container, { onFault }) {
    const d = (this.doc = container.ownerDocument);
    this.kind = h(d, 'select', {});
    for (const f of FAULTS) this.kind.appendChild(h(d, 'option', { value: f.fault, text: f.label, title: f.help }));
    this.peer = select(d, ['server', 'client'], 'server');
    this.seconds = h(d, 'input', { type: 'number', min: 0, max: 60, step: 0.5, value: 2 });
    this.secondsField = field(d, 'Seconds', this.seconds, 'inline');
    this.help = h(d, 'p', { class: 'hint' });
    this.inject = h(d, 'button', { type: 'button', text: 'Inject fault', on: { click: () => onFault(this.kind.value, this.args()) } });
    const sync = () => {
      const f = FAULTS.find((x) => x.fault === this.kind.value);
      this.help.textContent = f ? f.help : '';
      this.secondsField.hidden = this.kind.value !== 'delay';
    };
    this.kind.addEventListener('change', sync);
    sync();
    clear(container);
    container.appendChild(h(d, 'div', { class: 'faults' }, h(d, 'div', { class: 'ctl-row' }, field(d, 'Fault', this.kind, 'inline'), field(d, 'Peer', this.peer, 'inline')), this.secondsField, this.help, this.inject));
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
