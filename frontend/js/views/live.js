// The live source picker: capture on a server interface (+ port) or a tap proxy
// (target host:port + optional listen port), start/stop, the listen address to
// point clients at, and the status line (state, packets, events, dropped).
//
// new LivePanel(container, { onStart(form), onStop() })
//   form: { source, interface, port, target, listenPort }
//   .setInterfaces(names) .setRunning(bool) .setBusy(bool) .setListen(address|null)
//   .setStatus(statusMessage|null, text) .setError(text) .setSource(source) .values()

import { h, clear, tr } from './dom.js';

/** A labelled control (label: a catalog id). */
function field(d, label, control, className = '') {
  return h(d, 'label', { class: `field ${className}`.trim() }, h(d, 'span', { class: 'field-label', t: label }), control);
}

export class LivePanel {
  constructor(container, { i18n, onStart, onStop }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.kind = {
      capture: h(d, 'input', { type: 'radio', name: 'live-source', value: 'capture', checked: true, attrs: { id: 'live-kind-capture' } }),
      tap: h(d, 'input', { type: 'radio', name: 'live-source', value: 'tap', attrs: { id: 'live-kind-tap' } }),
    };
    this.iface = h(d, 'select', { tLabel: this.i18n.message('ui.live.iface'), attrs: { id: 'live-interface' } });
    this.port = h(d, 'input', { type: 'text', value: '5555', inputMode: 'numeric', autocomplete: 'off', attrs: { id: 'live-port', size: 6 } });
    this.target = h(d, 'input', { type: 'text', value: '127.0.0.1:5555', autocomplete: 'off', attrs: { id: 'live-target', size: 22 } });
    this.listenPort = h(d, 'input', { type: 'text', tPlaceholder: this.i18n.message('ui.live.any'), inputMode: 'numeric', autocomplete: 'off', attrs: { id: 'live-listen-port', size: 6 } });
    this.captureFields = h(
      d,
      'div',
      { class: 'live-fields' },
      field(d, this.i18n.message('ui.live.iface'), this.iface),
      field(d, this.i18n.message('ui.live.port'), this.port),
      h(d, 'p', { class: 'hint', t: this.i18n.message('ui.live.captureHint') }),
    );
    this.tapFields = h(
      d,
      'div',
      { class: 'live-fields', hidden: true },
      field(d, this.i18n.message('ui.live.target'), this.target),
      field(d, this.i18n.message('ui.live.listenPort'), this.listenPort),
      h(d, 'p', { class: 'hint', t: this.i18n.message('ui.live.tapHint') }),
    );
    this.start = h(d, 'button', { type: 'submit', class: 'primary', t: this.i18n.message('ui.live.start'), attrs: { id: 'live-start' } });
    this.stop = h(d, 'button', { type: 'button', t: this.i18n.message('ui.live.stop'), disabled: true, attrs: { id: 'live-stop' }, on: { click: () => onStop() } });
    this.listen = h(d, 'p', { class: 'live-listen', hidden: true, attrs: { id: 'live-listen' } });
    this.state = h(d, 'span', { class: 'live-state', attrs: { id: 'live-state' } });
    this.detail = h(d, 'span', { class: 'muted', attrs: { id: 'live-detail' } });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert', id: 'live-error' } });
    for (const r of Object.values(this.kind)) r.addEventListener('change', () => this.showKind());
    const form = h(
      d,
      'form',
      {
        class: 'live-form',
        on: {
          submit: (e) => {
            e.preventDefault();
            onStart(this.values());
          },
        },
      },
      h(
        d,
        'fieldset',
        { class: 'live-kind' },
        h(d, 'legend', { t: this.i18n.message('ui.live.source') }),
        h(d, 'label', { class: 'check' }, this.kind.capture, ' ', h(d, 'span', { t: this.i18n.message('ui.live.kindCapture') })),
        h(d, 'label', { class: 'check' }, this.kind.tap, ' ', h(d, 'span', { t: this.i18n.message('ui.live.kindTap') })),
      ),
      this.captureFields,
      this.tapFields,
      h(d, 'div', { class: 'ctl-row' }, this.start, this.stop),
    );
    clear(container);
    container.appendChild(
      h(d, 'div', { class: 'live-panel' }, form, h(d, 'div', { class: 'live-info' }, this.listen, h(d, 'p', { class: 'live-status', attrs: { role: 'status' } }, this.state, ' ', this.detail), this.error)),
    );
    this.setStatus(null, this.i18n.t('ui.live.notStarted'));
  }

  showKind() {
    const tap = this.kind.tap.checked;
    this.tapFields.hidden = !tap;
    this.captureFields.hidden = tap;
  }

  values() {
    return {
      source: this.kind.tap.checked ? 'tap' : 'capture',
      interface: this.iface.value,
      port: this.port.value,
      target: this.target.value,
      listenPort: this.listenPort.value,
    };
  }

  /** Only interfaces the server has; `lo` first choice when present. */
  setInterfaces(names) {
    const d = this.doc;
    clear(this.iface);
    const list = Array.isArray(names) ? names.map(String) : [];
    for (const n of list) this.iface.appendChild(h(d, 'option', { value: n, text: n }));
    const wanted = this.wantedIface && list.includes(this.wantedIface) ? this.wantedIface : 'lo';
    if (list.includes(wanted)) this.iface.value = wanted;
    this.iface.disabled = !list.length;
  }

  /** Show a running source's settings in the form (a page opened by link). source: the status's `source`. */
  setSource(src) {
    if (!src || typeof src !== 'object') return;
    const tap = src.kind === 'tap';
    this.kind.tap.checked = tap;
    this.kind.capture.checked = !tap;
    if (tap && typeof src.target === 'string') this.target.value = src.target;
    if (!tap && typeof src.interface === 'string') {
      this.wantedIface = src.interface;
      this.iface.value = src.interface;
    }
    if (!tap && src.port !== undefined) this.port.value = String(src.port);
    this.showKind();
  }

  setRunning(on) {
    this.running = !!on;
    this.stop.disabled = !on;
    tr(this.start, this.i18n.message(on ? 'ui.live.restart' : 'ui.live.start'));
  }

  setBusy(on) {
    this.start.disabled = !!on;
  }

  setListen(address) {
    this.listen.textContent = address ? this.i18n.t('ui.live.pointAt', { address }) : '';
    this.listen.hidden = !address;
  }

  /** status: the websocket's status message (or null); text: what to show instead/besides. */
  setStatus(status, text = '') {
    this.state.textContent = text || '';
    this.state.className = `live-state state-${status && status.state ? String(status.state).replace(/[^a-z]/g, '') : 'none'}`;
    this.detail.textContent = status && status.detail ? `— ${status.detail}` : '';
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }
}
