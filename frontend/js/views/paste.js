// Paste mode: a textarea for hex (plain, Wireshark's Follow TCP Stream hex
// dump, xxd, hexdump -C, or a packet hex dump), a live reading of what was
// pasted, and a Decode button.
//
// new PasteView(container, { onDecode(parsed), onInvalid(message) }) ; .setBusy(bool) ; .setError(text) ; .setText(text)
//   parsed: core/hexparse.js parseHexInput(this.i18n) result (plain pastes and one-direction
//   dumps take the direction chosen in the form). onInvalid: Decode was pressed on
//   text that does not parse (what was decoded before no longer stands).

import { h, clear, tr } from './dom.js';
import { parseHexInput } from '../core/hexparse.js';
import { toFollowText } from '../core/hexdump.js';
import { hexToBytes } from '../core/bytes.js';

// The example: a PUSH server and a PULL client, greetings, READYs, one message.
const GREETING = 'ff00000000000000017f0301' + '4e554c4c' + '00'.repeat(16) + '00' + '00'.repeat(31);
const ready = (type) => {
  const body = '05' + '5245414459' + '0b' + '536f636b65742d54797065' + (type.length).toString(16).padStart(8, '0') + Array.from(type, (c) => c.charCodeAt(0).toString(16)).join('');
  return '04' + (body.length / 2).toString(16).padStart(2, '0') + body;
};
const EXAMPLE = toFollowText([
  { dir: 'c2s', offset: 0, hex: GREETING },
  { dir: 's2c', offset: 0, hex: GREETING },
  { dir: 'c2s', offset: 64, hex: ready('PULL') },
  { dir: 's2c', offset: 64, hex: ready('PUSH') },
  { dir: 's2c', offset: 92, hex: '000a4d79204d657373616765' },
].map((c) => ({ ...c, bytes: hexToBytes(c.hex) })));

export class PasteView {
  constructor(container, { i18n, onDecode, onInvalid = () => {} }) {
    this.i18n = i18n;
    const d = (this.doc = container.ownerDocument);
    this.onDecode = onDecode;
    this.onInvalid = onInvalid;
    this.text = h(d, 'textarea', {
      class: 'paste-text',
      rows: 12,
      spellcheck: false,
      tPlaceholder: this.i18n.message('ui.paste.placeholder'),
      tLabel: this.i18n.message('ui.paste.label'),
      attrs: { wrap: 'off' },
    });
    this.dir = h(d, 'select', {}, h(d, 'option', { value: 'c2s', t: this.i18n.message('ui.paste.byClient') }), h(d, 'option', { value: 's2c', t: this.i18n.message('ui.paste.byServer') }));
    this.dirField = h(d, 'label', { class: 'field inline' }, h(d, 'span', { class: 'field-label', t: this.i18n.message('ui.paste.sentBy') }), this.dir);
    this.reading = h(d, 'p', { class: 'paste-reading', attrs: { 'aria-live': 'polite' } });
    this.error = h(d, 'p', { class: 'error', hidden: true, attrs: { role: 'alert' } });
    this.button = h(d, 'button', { type: 'button', class: 'primary', t: this.i18n.message('ui.paste.decode'), on: { click: () => this.decode() } });
    const example = h(d, 'button', { type: 'button', t: this.i18n.message('ui.paste.example'), tTitle: this.i18n.message('ui.paste.example.title'), on: { click: () => this.setText(EXAMPLE) } });
    this.text.addEventListener('input', () => this.read());
    clear(container);
    container.appendChild(
      h(
        d,
        'div',
        { class: 'paste' },
        h(d, 'p', { class: 'hint', t: this.i18n.message('ui.paste.hint') }),
        this.text,
        this.dirField,
        this.reading,
        this.error,
        h(d, 'div', { class: 'ctl-row' }, this.button, example),
      ),
    );
    this.read();
    this.i18n.onChange(() => this.read());
  }

  parse() {
    const parsed = parseHexInput(this.i18n, this.text.value);
    if (parsed.format === 'plain' || parsed.format === 'dump') {
      const dir = this.dir.value === 's2c' ? 's2c' : 'c2s';
      parsed.directions[0].dir = dir;
      parsed.segments[0].dir = dir;
    }
    return parsed;
  }

  read() {
    if (!this.text.value.trim()) {
      this.reading.textContent = '';
      this.dirField.hidden = false;
      this.setError('');
      return null;
    }
    try {
      const parsed = this.parse();
      this.dirField.hidden = parsed.format !== 'plain' && parsed.format !== 'dump';
      const dirs = parsed.directions.map((x) => this.i18n.t('ui.paste.dirOctets', { n: x.bytes.length, dir: x.dir })).join(this.i18n.t('ui.list.comma'));
      const what = parsed.format === 'follow' ? this.i18n.t('ui.paste.follow') : parsed.format === 'plain' ? this.i18n.t('ui.paste.plain') : parsed.label || this.i18n.t('ui.paste.dump');
      const n = parsed.warnings.length;
      const reading = this.i18n.t('ui.paste.reading', { what: `${what.charAt(0).toUpperCase()}${what.slice(1)}`, dirs });
      this.reading.textContent = n ? `${reading}${this.i18n.tn('ui.paste.warnings', n, { list: parsed.warnings.slice(0, 3).join(this.i18n.t('ui.list.semicolon')) })}` : reading;
      this.setError('');
      return parsed;
    } catch (err) {
      this.reading.textContent = '';
      this.setError(err.message);
      return null;
    }
  }

  decode() {
    const parsed = this.read();
    if (parsed) this.onDecode(parsed);
    else this.onInvalid(this.error.textContent || this.i18n.t('ui.hexparse.nothing'));
  }

  setText(text) {
    this.text.value = text;
    this.read();
  }

  setBusy(busy) {
    this.button.disabled = !!busy;
    tr(this.button, this.i18n.message(busy ? 'ui.paste.decoding' : 'ui.paste.decode'));
  }

  setError(text) {
    this.error.textContent = text || '';
    this.error.hidden = !text;
  }
}
