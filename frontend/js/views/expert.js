// Expert panel: the expert events (notes, warnings, errors) with severity
// filters; clicking one jumps to it.
//
// new ExpertView(container, { onJump(index) })
//   .setItems([{ index, event }], { total, counts })

import { h, clear, panel } from './dom.js';
import { safeClass } from './sequence.js';
import { severityName } from '../core/labels.js';

const SEVERITY_IDS = { error: 'ui.severity.error', warn: 'ui.severity.warn', note: 'ui.severity.note' };

export const SEVERITIES = ['error', 'warn', 'note'];

export class ExpertView {
  constructor(container, { i18n, onJump = () => {} } = {}) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.onJump = onJump;
    this.items = [];
    this.total = 0;
    this.counts = null;
    this.show = { error: true, warn: true, note: true };
    const d = this.doc;
    const p = panel(d, this.i18n.message('ui.panel.expert'), 'expert-panel');
    this.body = p.body;
    this.checks = {};
    for (const sev of SEVERITIES) {
      const box = h(d, 'input', { type: 'checkbox', checked: true, on: { change: () => this.toggle(sev, box.checked) } });
      this.checks[sev] = { box, count: h(d, 'span', { class: 'count' }) };
      p.tools.append(h(d, 'label', { class: `check sev-${sev}` }, box, ' ', h(d, 'span', { t: this.i18n.message(SEVERITY_IDS[sev]) }), ' ', this.checks[sev].count));
    }
    clear(container);
    container.appendChild(p.root);
    this.i18n.onChange(() => this.render());
    this.render();
  }

  toggle(sev, on) {
    this.show[sev] = on;
    this.render();
  }

  /** items: [{ index, event }]; opts.total: all expert events (when only some are loaded); opts.counts: {note, warn, error}. */
  setItems(items, { total = items.length, counts = null } = {}) {
    this.items = items;
    this.total = total;
    this.counts = counts;
    this.render();
  }

  render() {
    const d = this.doc;
    const counts = this.counts || { error: 0, warn: 0, note: 0 };
    if (!this.counts) for (const { event } of this.items) counts[event.severity in counts ? event.severity : 'note'] += 1;
    for (const sev of SEVERITIES) this.checks[sev].count.textContent = `(${counts[sev] || 0})`;
    clear(this.body);
    const shown = this.items.filter(({ event }) => this.show[event.severity in this.show ? event.severity : 'note']);
    if (!this.items.length) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.expert.none') }));
      return;
    }
    const list = h(d, 'ul', { class: 'expert-list' });
    for (const { index, event } of shown) {
      const sev = safeClass(event.severity || 'note');
      const li = h(
        d,
        'li',
        { class: `expert-item sev-${sev}`, tabIndex: 0, title: this.i18n.t('ui.expert.jump') },
        h(d, 'span', { class: 'sev-badge', text: severityName(this.i18n, sev) }),
        h(d, 'span', { class: 'expert-msg', text: event.text || '' }),
        h(d, 'span', { class: 'expert-where', text: `${event.dir} @${event.offset}` }),
      );
      li.addEventListener('click', () => this.onJump(index, event));
      li.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') this.onJump(index, event);
      });
      list.appendChild(li);
    }
    this.body.appendChild(list);
    if (!shown.length) {
      const n = this.items.length;
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.tn('ui.expert.hidden', n) }));
    }
    if (this.total > this.items.length) this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.expert.first', { shown: this.items.length, total: this.total }) }));
  }
}
