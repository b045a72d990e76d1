// Explanation panel: the selected field's note, its ABNF rule and definition,
// and a link to the spec section that defines it.
//
// new ExplainView(container, { selection, context(event) -> {version, mechanism} })

import { h, clear, panel } from './dom.js';
import { specFor, ruleColor } from '../core/rules.js';
import { infoLabel, fieldValueText, fieldName } from '../core/labels.js';
import { rangeLabel } from '../core/octets.js';
import { severityName } from '../core/labels.js';

/** "octet 8", "octets 9 - 19 (11)", "empty, at octet 43" — relative to the element. */
function where(i18n, start, length) {
  if (length <= 0) return i18n.t('ui.explain.empty', { start });
  return length === 1 ? i18n.t('ui.explain.octet', { start }) : i18n.t('ui.explain.octets', { range: rangeLabel(start, length), length });
}

export class ExplainView {
  constructor(container, { i18n, selection, context = () => ({}) }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.selection = selection;
    this.context = context;
    const p = panel(this.doc, this.i18n.message('ui.panel.explain'), 'explain-panel');
    this.body = p.body;
    clear(container);
    container.appendChild(p.root);
    selection.subscribe(() => this.render());
    this.i18n.onChange(() => this.render());
    this.render();
  }

  render() {
    const d = this.doc;
    const { event } = this.selection.get();
    const field = this.selection.fieldObject();
    clear(this.body);
    if (!event) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.explain.select') }));
      return;
    }
    if (!field) {
      if (event.kind === 'expert') {
        this.body.append(h(d, 'p', { class: `expert-text sev-${event.severity || 'note'}` }, h(d, 'strong', { text: this.i18n.t('ui.explain.severity', { severity: severityName(this.i18n, event.severity) }) }), event.text || ''));
        this.body.append(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.explain.about', { dir: event.dir, offset: event.offset }) }));
        return;
      }
      this.body.append(h(d, 'p', { class: 'explain-element', text: infoLabel(this.i18n, event) }));
      this.body.append(h(d, 'p', { class: 'hint', text: this.i18n.t('ui.explain.click') }));
      return;
    }
    const spec = specFor(field.rule, this.context(event) || {});
    const color = ruleColor(field.rule);
    const title = h(d, 'h3', { class: 'explain-name' }, h(d, 'span', { class: 'swatch', style: { backgroundColor: color.strong } }), fieldName(this.i18n, field));
    const value = h(d, 'p', { class: 'explain-value' }, h(d, 'span', { class: 'muted', text: this.i18n.t('ui.explain.value') }), h(d, 'code', { text: fieldValueText(this.i18n, field) }), h(d, 'span', { class: 'muted', text: `  ·  ${where(this.i18n, field.offset - event.offset, field.length)}` }));
    const note = h(d, 'p', { class: 'explain-note', text: field.note || this.i18n.t('ui.explain.noNote') });
    const rule = h(d, 'p', { class: 'explain-rule' }, h(d, 'span', { class: 'muted', text: this.i18n.t('ui.explain.rule') }), h(d, 'code', { text: field.rule || this.i18n.t('ui.explain.noRule') }), h(d, 'span', { class: 'muted', text: this.i18n.t('ui.explain.in', { spec: spec.title }) }));
    const parts = [title, value, note, rule];
    if (spec.definition) parts.push(h(d, 'pre', { class: 'abnf', text: spec.definition }));
    const link = h(d, 'a', { href: spec.url, target: '_blank', rel: 'noopener noreferrer', text: `${spec.title}${spec.section ? ' — ' + spec.section : ''}` });
    parts.push(h(d, 'p', { class: 'explain-link' }, h(d, 'span', { class: 'muted', text: this.i18n.t('ui.explain.spec') }), link));
    this.body.append(...parts);
  }
}
