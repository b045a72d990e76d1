// A lesson's highlighted fields, drawn on top of the shared views: octet boxes,
// tree rows and hex bytes of the step's element get the class `lesson-hl`.
// The views own their DOM and redraw it whenever they like, so a
// MutationObserver re-applies the classes after every redraw (the classes
// are attributes, so applying them never triggers the observer again).
//
// createHighlighter({ win, slots: {octets, tree, hex}, selection, hex: HexView })
//   .set(index, fields)   fields: [{field, offset, length, dir}] of element `index`
//   .clear()

import { frameQueue } from '../core/frames.js';

export const HL = 'lesson-hl';

/** Byte ranges per direction of highlighted fields: {c2s: [[start, end], ...], s2c: [...]} */
export function rangesOf(fields, dir) {
  const out = { c2s: [], s2c: [] };
  for (const f of fields || []) {
    if (typeof f.offset !== 'number' || typeof f.length !== 'number') continue;
    (out[f.dir || dir] || out.c2s).push([f.offset, f.offset + f.length]);
  }
  return out;
}

export function inRanges(list, offset) {
  for (const [a, b] of list) if (offset >= a && offset < b) return true;
  return false;
}

export function createHighlighter({ win, slots, selection, hex }) {
  let active = null; // { index, fieldSet: Set<number>, ranges }
  // (in the page's one frame, after the views' redraws it lights up: core/frames.js)
  const schedule = frameQueue(win).throttle(apply);

  function toggleAll(root, selector, on) {
    if (!root) return;
    for (const el of root.querySelectorAll(selector)) el.classList.toggle(HL, on(el));
  }

  function apply() {
    const sel = selection.get();
    const live = active && sel.index === active.index && sel.event;
    const fieldOn = (el) => !!live && active.fieldSet.has(Number(el.dataset.field));
    toggleAll(slots.octets, '.oct-box[data-field], .oct-name[data-field]', fieldOn);
    toggleAll(slots.tree, '.tree-field[data-field]', fieldOn);
    if (!slots.hex) return;
    for (const lineEl of slots.hex.querySelectorAll('.hex-line[data-line]')) {
      let line = null;
      if (live && hex && hex.lines && lineEl.dataset.line !== undefined) line = hex.lines.line(Number(lineEl.dataset.line));
      const list = line && line.kind === 'bytes' ? active.ranges[line.dir] || [] : [];
      for (const b of lineEl.querySelectorAll('.b[data-k]')) {
        b.classList.toggle(HL, list.length > 0 && inRanges(list, line.offset + Number(b.dataset.k)));
      }
    }
  }

  const observer = win && win.MutationObserver ? new win.MutationObserver(schedule) : null;
  if (observer) {
    for (const el of [slots.octets, slots.tree, slots.hex]) if (el) observer.observe(el, { childList: true, subtree: true });
  }
  selection.subscribe(schedule);

  return {
    set(index, fields, dir) {
      if (!Number.isInteger(index) || !Array.isArray(fields) || !fields.length) {
        active = null;
      } else {
        active = { index, fieldSet: new Set(fields.map((f) => f.field)), ranges: rangesOf(fields, dir) };
      }
      schedule();
    },
    clear() {
      active = null;
      schedule();
    },
    get active() {
      return active;
    },
    refresh: schedule,
  };
}
