// Explanation panel: the selected field's note, its ABNF rule and definition,
// and a link to the spec section that defines it.
//
// new ExplainView(container, { selection, context(event) -> {version, mechanism} })

import { h, clear, panel } from './dom.js';
import { specFor, ruleColor } from '../core/rules.js';
import { infoLabel, fieldValueText } from '../core/labels.js';
import { rangeLabel } from '../core/octets.js';

/** "octet 8", "octets 9 - 19 (11)", "empty, at octet 43" — relative to the element. */
function where(start, length) {
  if (length <= 0) return `empty, at octet ${start}`;
  return length === 1 ? `octet ${start}` : `octets ${rangeLabel(start, length)} (${length})`;
}

export class ExplainView {
  constructor(container, { selection, context = () => ({}) }) {
    this.doc = container.ownerDocument;
    this.selection = selection;
    this.context = context;
    const p = panel(this.doc, 'Explanation', 'explain-panel');
    this.body = p.body;
    clear(container);
    container.appendChild(p.root);
    selection.subscribe(() => this.render());
    this.render();
  }

  render() {
    const d = this.doc;
    const { event } = this.selection.get();
    const field = this.selection.fieldObject();
    clear(this.body);
    if (!event) {
      this.body.appendChild(h(d, 'p', { class: 'hint', text: 'Select an element, then a field, to see what the spec says about it.' }));
      return;
    }
    if (!field) {
      if (event.kind === 'expert') {
        this.body.append(h(d, 'p', { class: `expert-text sev-${event.severity || 'note'}` }, h(d, 'strong', { text: `${event.severity || 'note'}: ` }), event.text || ''));
        this.body.append(h(d, 'p', { class: 'hint', text: `About ${event.dir} stream offset ${event.offset}.` }));
        return;
      }
      this.body.append(h(d, 'p', { class: 'explain-element', text: infoLabel(event) }));
      this.body.append(h(d, 'p', { class: 'hint', text: 'Click a field in the octet table, the hex dump or the details tree.' }));
      return;
    }
    const spec = specFor(field.rule, this.context(event) || {});
    const color = ruleColor(field.rule);
    const title = h(d, 'h3', { class: 'explain-name' }, h(d, 'span', { class: 'swatch', style: { backgroundColor: color.strong } }), field.name);
    const value = h(d, 'p', { class: 'explain-value' }, h(d, 'span', { class: 'muted', text: 'value ' }), h(d, 'code', { text: fieldValueText(field) }), h(d, 'span', { class: 'muted', text: `  ·  ${where(field.offset - event.offset, field.length)}` }));
    const note = h(d, 'p', { class: 'explain-note', text: field.note || 'No note for this field.' });
    const rule = h(d, 'p', { class: 'explain-rule' }, h(d, 'span', { class: 'muted', text: 'ABNF rule ' }), h(d, 'code', { text: field.rule || '(none)' }), h(d, 'span', { class: 'muted', text: ` in ${spec.title}` }));
    const parts = [title, value, note, rule];
    if (spec.definition) parts.push(h(d, 'pre', { class: 'abnf', text: spec.definition }));
    const link = h(d, 'a', { href: spec.url, target: '_blank', rel: 'noopener noreferrer', text: `${spec.title}${spec.section ? ' — ' + spec.section : ''}` });
    parts.push(h(d, 'p', { class: 'explain-link' }, h(d, 'span', { class: 'muted', text: 'Spec: ' }), link));
    this.body.append(...parts);
  }
}
