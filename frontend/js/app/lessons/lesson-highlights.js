// The lessons page's highlights: which of the step's highlighted fields are lit (the step's own, a
// teacher's, the chips the user clicked), whether highlights are on, and drawing them over the
// octet table, the details and the hex dump.

import { createHighlighter } from '../../lessons/highlights.js';

export class LessonHighlights {
  /** win: the window; slots: { octets, tree, hex } elements; wb: the workbench; panel: the LessonPanel (its chips). */
  constructor(win, slots, { wb, panel }) {
    this.panel = panel;
    this.highlighter = createHighlighter({ win, slots, selection: wb.selection, hex: wb.hex });
    this.lit = new Set(); // the fields lit
    this.on = true; // the Highlights switch
  }

  /** Light these fields, highlights on. */
  reset(fields) {
    this.lit = new Set(fields);
    this.on = true;
  }

  /** Light one more field, highlights on. */
  light(field) {
    this.lit.add(field);
    this.on = true;
  }

  /** The fields lit, as a teacher's state says them: none while highlights are off. */
  shown() {
    return this.on ? [...this.lit] : [];
  }

  /** Draw the scene's lit highlights on its element (`ev`, the scene's element shown, or null). */
  apply(scene, ev) {
    const hls = scene ? scene.highlights || [] : [];
    const on = this.on ? hls.filter((h) => this.lit.has(h.field)) : [];
    this.highlighter.set(ev ? scene.element : null, on.map((h) => ({ ...h, dir: ev.dir })), ev ? ev.dir : 'c2s');
    this.panel.setLit(this.lit, this.on);
  }
}
