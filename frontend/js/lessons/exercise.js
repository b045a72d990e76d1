// A lesson step's exercise (issue 32.11), as the lessons page and the playground show it: the task, then a box
// for a typed answer, or for a topology exercise the nodes it needs, a link that opens it in the playground and
// (on the lessons page) a saved topology file to check; the server's verdict under it. The server checks
// (POST /api/lessons/{id}/steps/{n}/exercise): nothing here knows the answer.

import { h, setChildren } from '../views/dom.js';
import { buildLink } from '../core/links.js';
import { parseTopologyFile } from '../core/topology-edit.js';
import { renderNarration } from './narration.js';

/** The playground's link to a lesson's exercise: index.html?exercise=ID&step=N (the editor opens with its start). */
export function exerciseLink(lessonId, step) {
  return `index.html${buildLink({ exercise: lessonId, step })}`;
}

export class ExerciseBox {
  /**
   * doc: the page's document; handlers: { check(body) -> Promise<{correct, message, problems, explain}>, topology()
   * (the playground: the topology being edited; absent on the lessons page), link (the lessons page: where the
   * playground opens the exercise), header (extra nodes above the task: the playground's way back) }.
   */
  constructor(doc, exercise, { i18n, check, topology = null, link = null, header = null }) {
    this.i18n = i18n;
    this.doc = doc;
    this.exercise = exercise;
    this.check = check;
    const d = doc;
    this.result = h(d, 'div', { class: 'exercise-result', hidden: true, attrs: { 'aria-live': 'polite' } });
    const parts = [h(d, 'h3', { t: this.i18n.message('ui.exercise.title') }), header, h(d, 'div', { class: 'exercise-task' }, ...renderNarration(d, exercise.task_tree))];
    if (exercise.kind === 'answer') {
      this.input = h(d, 'input', { type: 'text', class: 'exercise-answer', maxLength: 200, tLabel: this.i18n.message('ui.exercise.answer'), tPlaceholder: this.i18n.message('ui.exercise.answer') });
      this.input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') this.submitAnswer();
      });
      parts.push(h(d, 'div', { class: 'check-row' }, this.input, h(d, 'button', { type: 'button', class: 'primary exercise-check', t: this.i18n.message('ui.lesson.check'), on: { click: () => this.submitAnswer() } })));
    } else {
      const nodes = Object.entries(exercise.nodes || {}).map(([name, type]) => `${name} (${type})`).join(', ');
      parts.push(h(d, 'p', { class: 'hint exercise-nodes', t: this.i18n.message('ui.exercise.nodes', { nodes }) }));
      const row = h(d, 'div', { class: 'check-row' });
      if (topology) {
        row.appendChild(h(d, 'button', { type: 'button', class: 'primary exercise-check', t: this.i18n.message('ui.exercise.checkTopology'), on: { click: () => this.submit({ topology: topology() }) } }));
      }
      if (link) {
        row.appendChild(h(d, 'a', { class: 'button exercise-open', href: link, target: '_blank', rel: 'noopener', t: this.i18n.message('ui.exercise.open'), tTitle: this.i18n.message('ui.exercise.open.title') }));
        this.file = h(d, 'input', { type: 'file', accept: '.json,application/json', hidden: true });
        this.file.addEventListener('change', () => {
          const f = this.file.files && this.file.files[0];
          if (f) this.submitFile(f);
          this.file.value = '';
        });
        row.append(h(d, 'button', { type: 'button', class: 'exercise-file', t: this.i18n.message('ui.exercise.file'), tTitle: this.i18n.message('ui.exercise.file.title'), on: { click: () => this.file.click() } }), this.file);
      }
      parts.push(row);
    }
    parts.push(this.result);
    this.root = h(d, 'section', { class: 'box exercise' }, ...parts);
    this.root.dataset.kind = exercise.kind;
  }

  submitAnswer() {
    const answer = this.input.value.trim();
    if (!answer) return this.show({ correct: false, message: this.i18n.t('ui.exercise.empty'), problems: [], explain: [] });
    return this.submit({ answer });
  }

  async submitFile(file) {
    let topology;
    try {
      topology = parseTopologyFile(this.i18n, await file.text());
    } catch (err) {
      return this.show({ correct: false, message: this.i18n.t('ui.exercise.badFile', { name: file.name, error: err.message }), problems: [], explain: [] });
    }
    return this.submit({ topology });
  }

  async submit(body) {
    try {
      this.show(await this.check(body));
    } catch (err) {
      this.show({ correct: false, message: err.message, problems: [], explain: [] });
    }
  }

  /** The verdict, what the topology does not do (each problem), and the explanation once right. */
  show(result) {
    const d = this.doc;
    this.result.hidden = false;
    this.result.className = `exercise-result answer-result ${result.correct ? 'right' : 'wrong'}`;
    const problems = Array.isArray(result.problems) ? result.problems : [];
    setChildren(this.result,
      h(d, 'p', { class: 'verdict', text: result.correct ? `✔ ${result.message}` : `✘ ${result.message}` }),
      problems.length ? h(d, 'ul', { class: 'exercise-problems' }, problems.map((p) => h(d, 'li', { text: String(p) }))) : null,
      ...renderNarration(d, result.explain || []));
  }
}
