// The lessons page's questions: what is selected, in words (down to the byte clicked in the hex dump),
// and the answer the selection gives, checked by the server.

import { tableName } from '../../core/labels.js';

export class AnswerChecker {
  /**
   * hexEl: the hex dump's container; wb: the workbench; panel: the LessonPanel; api: the lessons API;
   * where(): { lessonId, step } of the lesson shown; reveal(field): a click question answered right shows its
   * answer's field (the scene never selects it beforehand: that would give it away); answered(lesson, step, body):
   * every answer given, as it goes to the lessons API.
   */
  constructor(hexEl, { i18n, wb, panel, api, where, reveal = () => {}, answered = () => {} }) {
    this.i18n = i18n;
    this.reveal = reveal;
    this.answered = answered; // (a student's answer goes to the class too: presenter mode counts them)
    this.wb = wb;
    this.panel = panel;
    this.api = api;
    this.where = where;
    this.lastByte = null; // { index, dir, offset } of the last byte clicked in the hex dump
    // A click in the hex dump: remember the exact byte (a byte question needs it, not just its field).
    hexEl.addEventListener(
      'click',
      (e) => {
        let n = e.target;
        let k = null;
        while (n && n !== hexEl) {
          if (k === null && n.dataset && n.dataset.k !== undefined) k = Number(n.dataset.k);
          if (n.dataset && n.dataset.line !== undefined) break;
          n = n.parentNode;
        }
        if (!n || n === hexEl || k === null || !wb.hex.lines) return;
        const line = wb.hex.lines.line(Number(n.dataset.line));
        if (line && line.kind === 'bytes') this.lastByte = { index: line.index, dir: line.dir, offset: line.offset + k };
      },
      true,
    );
  }

  /** A new step: the byte clicked before belongs to another scene. */
  forgetByte() {
    this.lastByte = null;
  }

  /** The byte clicked, when it lies in the selected element (and field); else null. */
  byteInSelection() {
    const s = this.wb.selection.get();
    const f = this.wb.selection.fieldObject();
    const b = this.lastByte;
    if (!b || b.index !== s.index) return null;
    if (f && !(b.offset >= f.offset && b.offset < f.offset + f.length)) return null;
    return b.offset;
  }

  /** "Selected: frame 2 (offset 6)" under the question, the field named as the octet table names it. */
  updateSelectedText() {
    const s = this.wb.selection.get();
    const f = this.wb.selection.fieldObject();
    if (!s.event) return this.panel.setSelectedText(this.i18n.t('ui.answer.nothing'));
    const byte = this.byteInSelection();
    const rel = (o) => o - s.event.offset;
    const name = f && tableName(this.i18n, s.event, f);
    let text = !f ? this.i18n.t('ui.answer.element') : f.length > 1 ? this.i18n.t('ui.answer.octets', { name, from: rel(f.offset), to: rel(f.offset) + f.length - 1 }) : this.i18n.t('ui.answer.octet', { name, at: rel(f.offset) });
    if (byte !== null && (!f || f.length > 1)) text += this.i18n.t('ui.answer.byte', { at: rel(byte) });
    this.panel.setSelectedText(text);
  }

  async submit(body) {
    const { lessonId, step } = this.where();
    if (!lessonId) return;
    try {
      this.answered(lessonId, step, body);
      const result = await this.api.answer(lessonId, step, body);
      const now = this.where();
      if (now.lessonId !== lessonId || now.step !== step) return; // (the page moved on meanwhile)
      this.panel.setResult(result);
      if (result.correct && Array.isArray(result.fields) && result.fields.length) this.reveal(result.fields[0]);
    } catch (err) {
      this.panel.setResult({ correct: false, message: err.message, explain: [] });
    }
  }

  /** The selection as the answer: an element, its field, the byte clicked. */
  check() {
    const s = this.wb.selection.get();
    if (s.index === null) return this.panel.setResult({ correct: false, message: this.i18n.t('ui.answer.selectFirst'), explain: [] });
    const body = { index: s.index };
    if (Number.isInteger(s.field)) body.field = s.field;
    const byte = this.byteInSelection();
    if (byte !== null) body.offset = byte;
    this.submit(body);
  }
}
