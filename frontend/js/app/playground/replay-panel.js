// A capture replayed in the playground (issue 35, index.html?replay=CAPTURE_ID, the capture viewer's "Open in
// playground"): the server's replay of the capture (POST /api/captures/{id}/replay) started as a normal topology
// session, beside it the fidelity check, the notes, an options panel (NODE.OPTION=VALUE changes, re-run) and the
// diff against the unchanged replay; the replay saved as a topology file or a lesson draft.

import { h } from '../../views/dom.js';

// The options a change may set, as `zmtplab replay --set` names them.
export const REPLAY_OPTIONS = ['connect_at', 'subscribe_at', 'subscribe', 'sndhwm', 'rcvhwm', 'heartbeat_ivl',
  'heartbeat_timeout', 'heartbeat_ttl', 'version', 'mechanism', 'recv_every', 'identity'];

/** "NODE.OPTION=VALUE" from its parts (the value trimmed); null when a part is missing. */
export function changeText(node, option, value) {
  const v = String(value ?? '').trim();
  if (!node || !REPLAY_OPTIONS.includes(option) || (v === '' && option !== 'subscribe')) return null;
  return `${node}.${option}=${v}`;
}

export class ReplayPanel {
  /**
   * container: the panel's element. captureId: the capture replayed.
   * page: { i18n: the page's language, api, start(topology) -> Promise: starts the topology as a session,
   *         saveTopology(topology): the topology box's Save, lessonUrl() -> the session's lesson draft URL or null }
   */
  constructor(doc, container, captureId, page) {
    this.doc = doc;
    this.root = container;
    this.captureId = captureId;
    this.page = page;
    this.i18n = page.i18n;
    this.changes = [];
    this.result = null;
    this.busy = false;
    this.i18n.onChange(() => this.result && this.load({ start: false })); // (the server's sentences, in the new language)
  }

  /**
   * Asks the server for the replay with the changes; starts its topology as a session unless `start` is false. The
   * result is shown once its session has started: its summary speaks of the session on screen, and a Play pressed
   * on reading it plays that session, not the one it replaces.
   */
  async load({ start = true } = {}) {
    this.busy = true;
    this.render();
    let result = null;
    try {
      result = await this.page.api.captureReplay(this.captureId, this.changes);
      this.error = '';
    } catch (err) {
      this.error = this.i18n.t('ui.replay.failed', { error: err.message });
    }
    if (start && result && !result.playground.length) {
      try {
        await this.page.start(result.topology);
      } catch (err) {
        this.error = this.i18n.t('ui.replay.failed', { error: err.message });
      }
    }
    if (result) this.result = result;
    this.busy = false;
    this.render();
  }

  render() {
    const { doc } = this;
    const r = this.result;
    const parts = [];
    if (this.busy) parts.push(h(doc, 'p', { class: 'hint replay-busy', t: this.i18n.message('ui.replay.running') }));
    if (this.error) parts.push(h(doc, 'p', { class: 'error replay-error', text: this.error }));
    if (r) {
      const fid = r.fidelity;
      parts.push(h(doc, 'p', { class: 'replay-fidelity' + (fid.same ? ' same' : ' differs'),
        t: this.i18n.message('ui.replay.fidelity', { same: fid.same_directions, total: fid.directions }) }));
      const odd = fid.connections.filter((c) => !c.same);
      if (odd.length) {
        parts.push(h(doc, 'ul', { class: 'replay-mismatches' }, ...odd.map((c) => h(doc, 'li', {},
          h(doc, 'span', { t: this.i18n.message('ui.replay.mismatch', { from: c.from, to: c.to, captured: c.captured, replayed: c.replayed }) }),
          ...c.why.map((w) => h(doc, 'span', { class: 'muted', text: ` ${w}` }))))));
      }
      const notes = [...r.notes, ...r.topology_notes];
      if (notes.length) parts.push(h(doc, 'ul', { class: 'replay-notes' }, ...notes.map((n) => h(doc, 'li', { class: 'muted', text: n.text }))));
      if (r.playground.length) {
        parts.push(h(doc, 'p', { class: 'error', t: this.i18n.message('ui.replay.tooLarge', { why: r.playground.join('; ') }) }));
      }
      parts.push(this.optionsForm(r));
      if (r.diff) parts.push(this.diffView(r.diff));
      parts.push(this.actions(r));
    }
    this.root.replaceChildren(...parts);
  }

  optionsForm(r) {
    const { doc } = this;
    const sockets = r.nodes.filter((n) => !n.proxy);
    const node = h(doc, 'select', { class: 'replay-node', tLabel: this.i18n.message('ui.replay.node') },
      ...sockets.map((n) => h(doc, 'option', { attrs: { value: n.name }, text: `${n.name} (${n.type})` })));
    const option = h(doc, 'select', { class: 'replay-option', tLabel: this.i18n.message('ui.replay.option') },
      ...REPLAY_OPTIONS.map((o) => h(doc, 'option', { attrs: { value: o }, text: o })));
    const value = h(doc, 'input', { class: 'replay-value', tLabel: this.i18n.message('ui.replay.value'), tPlaceholder: this.i18n.message('ui.replay.valueHint'), attrs: { type: 'text', size: 8 } });
    const add = h(doc, 'button', { class: 'small replay-add', attrs: { type: 'button' }, t: this.i18n.message('ui.replay.add') });
    add.addEventListener('click', () => {
      const text = changeText(node.value, option.value, value.value);
      if (text === null) return;
      this.changes = [...this.changes.filter((c) => !c.startsWith(`${node.value}.${option.value}=`)), text];
      this.render();
    });
    const list = h(doc, 'ul', { class: 'replay-changes' }, ...this.changes.map((c) => {
      const remove = h(doc, 'button', { class: 'small', attrs: { type: 'button' }, text: '×', tTitle: this.i18n.message('ui.replay.remove') });
      remove.addEventListener('click', () => {
        this.changes = this.changes.filter((x) => x !== c);
        this.render();
      });
      return h(doc, 'li', {}, h(doc, 'code', { text: c }), ' ', remove);
    }));
    const rerun = h(doc, 'button', { class: 'replay-rerun', attrs: { type: 'button', disabled: this.busy }, t: this.i18n.message(this.changes.length ? 'ui.replay.rerun' : 'ui.replay.rerunNone') });
    rerun.addEventListener('click', () => this.load());
    return h(doc, 'fieldset', { class: 'replay-options' }, h(doc, 'legend', { t: this.i18n.message('ui.replay.options') }),
      h(doc, 'div', { class: 'row' }, node, option, value, add), list, rerun);
  }

  diffView(diff) {
    const { doc } = this;
    const rows = diff.nodes.filter((n) => n.before !== n.after || n.lost || n.gained);
    return h(doc, 'section', { class: 'replay-diff' },
      h(doc, 'h3', { t: this.i18n.message('ui.replay.diff', { changes: diff.changes.join(', ') }) }),
      h(doc, 'ul', { class: 'replay-summary' }, ...diff.summary.map((line) => h(doc, 'li', { text: line }))),
      rows.length ? h(doc, 'table', { class: 'replay-counts' },
        h(doc, 'tr', {}, h(doc, 'th', { t: this.i18n.message('ui.replay.socket') }), h(doc, 'th', { t: this.i18n.message('ui.replay.before') }), h(doc, 'th', { t: this.i18n.message('ui.replay.after') })),
        ...rows.map((n) => h(doc, 'tr', {}, h(doc, 'td', { text: n.name }), h(doc, 'td', { text: String(n.before) }),
          h(doc, 'td', { text: String(n.after) })))) : '');
  }

  actions(r) {
    const { doc } = this;
    const save = h(doc, 'button', { class: 'small replay-save', attrs: { type: 'button' }, t: this.i18n.message('ui.replay.saveTopology') });
    save.addEventListener('click', () => this.page.saveTopology(r.topology));
    const lessonUrl = this.page.lessonUrl();
    const lesson = h(doc, 'a', { class: 'replay-lesson', attrs: { href: lessonUrl || undefined, download: 'replay-lesson.yaml', 'aria-disabled': lessonUrl ? undefined : 'true' },
      t: this.i18n.message('ui.replay.saveLesson'), tTitle: this.i18n.message('ui.replay.saveLesson.title') });
    return h(doc, 'p', { class: 'replay-actions' }, save, ' ', lesson);
  }
}
