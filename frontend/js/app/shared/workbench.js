// The views both pages share, wired to one selection store, plus the page shell
// (large-font toggle). Everything from the environment arrives in `host`.

import { createSelection } from '../../core/store.js';
import { fieldAt } from '../../core/octets.js';
import { SequenceView } from '../../views/sequence.js';
import { OctetView } from '../../views/octets.js';
import { ExplainView } from '../../views/explain.js';
import { TreeView } from '../../views/tree.js';
import { HexView } from '../../views/hexview.js';
import { ExpertView } from '../../views/expert.js';

const SIZES = { normal: { row: 30, line: 20 }, large: { row: 40, line: 28 } };

/**
 * slots: { sequence, octets, explain, tree, hex, expert } container elements.
 * opts: { i18n, onSelect(row), onPick(index, dir, offset), onJump(index, event), context(event), copyText(text) }
 *   i18n: the page's language (the host's), which every view says its words in
 *   onSelect gets a row of the sequence list; onPick (a byte clicked in the hex
 *   dump) and onJump (an expert item) get the element's index in the
 *   connection's unfiltered element list, which is what selection.index holds.
 */
export function createWorkbench(slots, opts) {
  const { i18n } = opts;
  const selection = createSelection();
  const sequence = new SequenceView(slots.sequence, { i18n, onSelect: opts.onSelect, rowHeight: SIZES.normal.row });
  const octets = new OctetView(slots.octets, { i18n, selection });
  const explain = new ExplainView(slots.explain, { i18n, selection, context: opts.context });
  const tree = new TreeView(slots.tree, { i18n, selection });
  const hex = new HexView(slots.hex, {
    i18n,
    selection,
    copyText: opts.copyText,
    title: 'ui.panel.hex',
    onPick(index, dir, offset) {
      // A click on a byte selects its element, then the field holding that byte.
      if (selection.get().index !== index) opts.onPick(index, dir, offset);
      const ev = selection.get().event;
      if (ev && ev.dir === dir && Array.isArray(ev.fields)) {
        const fi = fieldAt(ev, offset);
        selection.selectField(fi >= 0 ? fi : null);
      }
    },
  });
  const expert = new ExpertView(slots.expert, { i18n, onJump: opts.onJump });
  return {
    selection,
    sequence,
    octets,
    explain,
    tree,
    hex,
    expert,
    setLarge(on) {
      const s = on ? SIZES.large : SIZES.normal;
      sequence.setRowHeight(s.row);
      hex.setLineHeight(s.line);
      octets.render(); // its rows wrap at a width counted in characters, which the font size changes
    },
  };
}

/**
 * Page shell: the large-font toggle and the projector view (each stored in localStorage; `?projector=1`
 * turns the projector view on too). The projector view is large text, the controls a class does not need
 * hidden and the octet table and sequence given the room (html.projector, in the CSS). onLarge(on) is
 * told whether the text is large.
 * host: { document, window }
 */
export function initShell(host, onLarge) {
  const doc = host.document;
  const storage = safeStorage(host.window);
  const buttons = { large: doc.getElementById('large-toggle'), projector: doc.getElementById('projector-toggle') };
  const search = host.window && host.window.location ? host.window.location.search || '' : '';
  const asked = new URLSearchParams(search).get('projector');
  if (asked === '1' || asked === '0') storage.set('zmtplab.projector', asked); // (a link's choice stays: the page rewrites its URL)
  const state = { large: storage.get('zmtplab.large') === '1', projector: storage.get('zmtplab.projector') === '1' };
  const apply = () => {
    const large = state.large || state.projector;
    doc.documentElement.classList.toggle('large', large);
    doc.documentElement.classList.toggle('projector', state.projector);
    // The projector view folds the set-up boxes beside the player (opened, they float over the page).
    if (state.projector && doc.querySelectorAll) for (const box of doc.querySelectorAll('#pane-session > details[open]')) box.open = false;
    if (buttons.large) {
      buttons.large.setAttribute('aria-pressed', large ? 'true' : 'false');
      buttons.large.disabled = state.projector; // (the projector view is always large)
    }
    if (buttons.projector) buttons.projector.setAttribute('aria-pressed', state.projector ? 'true' : 'false');
    onLarge(large);
  };
  apply();
  for (const key of ['large', 'projector']) {
    if (!buttons[key]) continue;
    buttons[key].addEventListener('click', () => {
      state[key] = !state[key];
      storage.set(`zmtplab.${key}`, state[key] ? '1' : '0');
      apply();
    });
  }
}

/** The window's localStorage as { get, set }, or one that keeps nothing where storage is refused. */
export function safeStorage(win) {
  try {
    const s = win.localStorage;
    return { get: (k) => s.getItem(k), set: (k, v) => s.setItem(k, v) };
  } catch {
    return { get: () => null, set: () => {} };
  }
}

/** Show a transient status message in #status. */
export function statusLine(doc) {
  const el = doc.getElementById('status');
  let timer = null;
  return (text, kind = 'info') => {
    if (!el) return;
    el.textContent = text || '';
    el.className = `status ${kind}`;
    el.hidden = !text;
    clearTimeout(timer);
    if (text && kind !== 'error') timer = setTimeout(() => (el.hidden = true), 6000);
  };
}
