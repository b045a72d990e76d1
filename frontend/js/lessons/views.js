// The lesson page's own views: the lesson list, the lesson panel (step controls,
// narration, highlighted fields, question, what crossed the wire) and the class
// bar (presenter or student). They build DOM with views/dom.js only; lesson data
// and payload bytes are text.

import { h, clear, setChildren, tr } from '../views/dom.js';
import { dirName, fieldName } from '../core/labels.js';
import { renderNarration, allowedLink } from './narration.js';
import { ExerciseBox, exerciseLink } from './exercise.js';

// ---------------------------------------------------------------- lesson list

export class LessonList {
  constructor(container, { i18n, onOpen }) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.onOpen = onOpen;
    this.root = h(this.doc, 'ol', { class: 'lesson-list' });
    this.problems = h(this.doc, 'div', { class: 'lesson-problems', hidden: true, attrs: { role: 'status' } });
    this.current = null;
    this.buttons = new Map();
    clear(container);
    container.append(h(this.doc, 'h2', { t: this.i18n.message('ui.nav.lessons') }), this.root, this.problems);
  }

  /** Lesson files the server could not load (a teacher's own): each named, with what is wrong. */
  setProblems(problems) {
    const d = this.doc;
    const list = Array.isArray(problems) ? problems : [];
    this.problems.hidden = !list.length;
    setChildren(this.problems, h(d, 'h3', { t: this.i18n.message('ui.lesson.problems') }),
      h(d, 'ul', {}, list.map((p) => h(d, 'li', {}, h(d, 'strong', { text: String(p.file || '') }), h(d, 'pre', { class: 'problem', text: String(p.error || '') })))));
  }

  setLessons(lessons) {
    const d = this.doc;
    clear(this.root);
    this.buttons.clear();
    (lessons || []).forEach((l, i) => {
      const btn = h(
        d,
        'button',
        { type: 'button', class: 'lesson-item', on: { click: () => this.onOpen(l.id) } },
        h(d, 'span', { class: 'lesson-num', text: String(i + 1) }),
        h(d, 'span', { class: 'lesson-text' }, h(d, 'strong', { text: l.title }), h(d, 'span', { class: 'lesson-summary', text: l.summary }), h(d, 'span', { class: 'lesson-meta', text: this.i18n.t('ui.lesson.meta', { steps: this.i18n.tn('ui.lesson.steps', l.step_count), level: levelName(this.i18n, l.level) }) })),
      );
      btn.dataset.lesson = l.id;
      this.buttons.set(l.id, btn);
      this.root.appendChild(h(d, 'li', {}, btn));
    });
    this.setCurrent(this.current);
  }

  setCurrent(id) {
    this.current = id;
    for (const [k, b] of this.buttons) {
      b.classList.toggle('current', k === id);
      if (k === id) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  }
}

// ---------------------------------------------------------------- lesson panel

// The lessons' levels (lessons/*.yaml `level`), by name.
const LEVEL_IDS = { beginner: 'ui.lesson.level.beginner', intermediate: 'ui.lesson.level.intermediate', advanced: 'ui.lesson.level.advanced' };
const levelName = (i18n, level) => (LEVEL_IDS[level] ? i18n.t(LEVEL_IDS[level]) : String(level ?? ''));

function sourceText(i18n, source) {
  if (!source) return '';
  const peer = (p) => (p ? [p.type, p.version, p.mechanism, p.identity ? i18n.t('ui.lesson.identity', { identity: p.identity }) : '', p.role || ''].filter(Boolean).join(' ') : '?');
  if (source.type === 'session') return i18n.t('ui.lesson.source.session', { server: peer(source.server), client: peer(source.client) });
  if (source.type === 'wire') return i18n.t('ui.lesson.source.wire', { server: peer(source.server), client: peer(source.client) });
  if (source.type === 'capture') return i18n.t('ui.lesson.source.capture', { file: source.file });
  if (source.type === 'topology') {
    const nodes = (source.nodes || []).map((n) => `${n.name} ${n.type}`).join(' · ');
    return source.preset ? i18n.t('ui.lesson.source.topologyPreset', { preset: source.preset, nodes }) : i18n.t('ui.lesson.source.topology', { nodes });
  }
  return '';
}

/** Who wrote a write: "client → server", or on a topology the nodes of its connection ("w1 → vent"). */
function writeText(i18n, w, topology) {
  const conn = topology && (topology.conns || []).find((c) => String(c.conn) === String(w.conn));
  if (conn) return w.dir === 'c2s' ? `${conn.client} → ${conn.server}` : `${conn.server} → ${conn.client}`;
  return dirName(i18n, w.dir);
}

/** A peer's name: the two-peer scenes call them client and server (a topology's nodes have names of their own). */
function roleName(i18n, peer) {
  if (peer === 'client') return i18n.t('ui.peer.client');
  if (peer === 'server') return i18n.t('ui.peer.server');
  return String(peer ?? '');
}

function framesText(frames) {
  return `[${(frames || []).map((f) => JSON.stringify(String(f))).join(', ')}]`;
}

export class LessonPanel {
  /**
   * handlers: { onBack(), onStep(n), onChip(field), onHighlights(on), onCheck(), onChoice(choice), onDecision(index),
   * onExercise(body) -> Promise of the server's verdict on the step's exercise }
   */
  constructor(container, handlers) {
    this.i18n = handlers.i18n;
    const d = (this.doc = container.ownerDocument);
    this.handlers = handlers;
    this.lesson = null;
    this.number = 1;
    this.titleEl = h(d, 'h1', { class: 'lesson-title' });
    this.counter = h(d, 'span', { class: 'step-counter', attrs: { 'aria-live': 'polite' } });
    this.prevBtn = h(d, 'button', { type: 'button', t: this.i18n.message('ui.lesson.back'), tTitle: this.i18n.message('ui.lesson.back.title'), on: { click: () => handlers.onStep(this.number - 1) } });
    this.nextBtn = h(d, 'button', { type: 'button', class: 'primary', t: this.i18n.message('ui.lesson.next'), tTitle: this.i18n.message('ui.lesson.next.title'), on: { click: () => handlers.onStep(this.number + 1) } });
    this.dots = h(d, 'ol', { class: 'step-dots', tLabel: this.i18n.message('ui.lesson.stepsLabel') });
    this.stepTitle = h(d, 'h2', { class: 'step-title' });
    this.sourceEl = h(d, 'p', { class: 'step-source muted' });
    this.narration = h(d, 'div', { class: 'narration' });
    this.chips = h(d, 'div', { class: 'hl-chips' });
    this.hlToggle = h(d, 'button', { type: 'button', class: 'small toggle-button', attrs: { 'aria-pressed': 'true' }, t: this.i18n.message('ui.lesson.highlightsOn'), on: { click: () => handlers.onHighlights(this.hlToggle.getAttribute('aria-pressed') !== 'true') } });
    this.hlBox = h(d, 'section', { class: 'box hl-box' }, h(d, 'div', { class: 'hl-head' }, h(d, 'h3', { t: this.i18n.message('ui.lesson.highlighted') }), this.hlToggle), this.chips);
    // A topology step's socket decisions (the events it points at besides its element): click one to select it.
    this.decisions = h(d, 'ol', { class: 'plain-list decision-list' });
    this.decisionBox = h(d, 'section', { class: 'box decision-box', hidden: true }, h(d, 'h3', { t: this.i18n.message('ui.lesson.decisions') }), this.decisions);
    this.question = h(d, 'section', { class: 'box question', attrs: { 'aria-live': 'polite' } });
    this.exerciseSlot = h(d, 'div', { class: 'exercise-slot', hidden: true }); // (hidden when empty: no gap)
    this.wire = h(d, 'ol', { class: 'wire-list' });
    this.received = h(d, 'ul', { class: 'plain-list' });
    this.log = h(d, 'ul', { class: 'plain-list log-list' });
    this.refs = h(d, 'ul', { class: 'plain-list' });
    this.wireBox = h(d, 'details', { class: 'box', open: true }, h(d, 'summary', { t: this.i18n.message('ui.lesson.wire') }), this.wire);
    this.receivedBox = h(d, 'details', { class: 'box', open: true }, h(d, 'summary', { t: this.i18n.message('ui.lesson.received') }), this.received);
    this.logBox = h(d, 'details', { class: 'box' }, h(d, 'summary', { t: this.i18n.message('ui.lesson.log') }), this.log);
    this.refsBox = h(d, 'details', { class: 'box' }, h(d, 'summary', { t: this.i18n.message('ui.lesson.references') }), this.refs);
    this.exportLink = h(d, 'a', { class: 'button small', attrs: { download: '' }, t: this.i18n.message('ui.illustrated.export'), tTitle: this.i18n.message('ui.illustrated.title') });
    this.scriptLink = h(d, 'a', { class: 'button small script-link', attrs: { download: '' }, t: this.i18n.message('ui.illustrated.script'), tTitle: this.i18n.message('ui.illustrated.script.title') });
    this.errorEl = h(d, 'p', { class: 'error', hidden: true });
    const head = h(
      d,
      'section',
      { class: 'box lesson-head' },
      h(d, 'div', { class: 'lesson-head-row' }, h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.lesson.all'), on: { click: () => handlers.onBack() } }), this.titleEl, this.exportLink, this.scriptLink),
      this.dots,
      h(d, 'div', { class: 'step-nav' }, this.prevBtn, this.counter, this.nextBtn),
    );
    const body = h(d, 'section', { class: 'box step-box' }, this.stepTitle, this.sourceEl, this.narration, this.errorEl);
    clear(container);
    container.append(head, body, this.hlBox, this.decisionBox, this.question, this.exerciseSlot, this.wireBox, this.receivedBox, this.logBox, this.refsBox);
  }

  setLesson(lesson) {
    const d = this.doc;
    this.lesson = lesson;
    this.titleEl.textContent = lesson.title;
    clear(this.dots);
    this.dotButtons = lesson.steps.map((s) => {
      const b = h(d, 'button', { type: 'button', class: 'dot', text: String(s.number), title: s.title, on: { click: () => this.handlers.onStep(s.number) } });
      b.dataset.step = String(s.number);
      this.dots.appendChild(h(d, 'li', {}, b));
      return b;
    });
    clear(this.refs);
    for (const r of lesson.references || []) {
      const link = r.href && allowedLink(r.href) ? h(d, 'a', { href: r.href, target: '_blank', rel: 'noopener noreferrer', text: r.title }) : h(d, 'span', { text: `${r.title} (${r.url})` });
      this.refs.appendChild(h(d, 'li', {}, link));
    }
    this.refsBox.hidden = !(lesson.references || []).length;
  }

  /** Where the lesson's illustrated page is (the export link). */
  setExportUrl(url, scriptUrl = null) {
    this.exportLink.href = url;
    this.scriptLink.hidden = !scriptUrl;
    if (scriptUrl) this.scriptLink.href = scriptUrl;
  }

  /** Show step `number` of the lesson: its narration and (once loaded) its scene. */
  setStep(number, scene) {
    const d = this.doc;
    const lesson = this.lesson;
    if (!lesson) return;
    const step = lesson.steps[number - 1];
    this.number = number;
    tr(this.counter, this.i18n.message('ui.lesson.counter', { n: number, total: lesson.steps.length }));
    this.prevBtn.disabled = number <= 1;
    this.nextBtn.disabled = number >= lesson.steps.length;
    (this.dotButtons || []).forEach((b, i) => {
      b.classList.toggle('current', i + 1 === number);
      b.classList.toggle('done', i + 1 < number);
      if (i + 1 === number) b.setAttribute('aria-current', 'step');
      else b.removeAttribute('aria-current');
    });
    this.stepTitle.textContent = step ? step.title : '';
    setChildren(this.narration, ...renderNarration(d, step ? step.narration_tree : []));
    this.sourceEl.textContent = scene ? sourceText(this.i18n, scene.source) : this.i18n.t('ui.loading');
    this.setError('');
    this.renderScene(scene);
  }

  renderScene(scene) {
    const d = this.doc;
    clear(this.chips);
    clear(this.wire);
    clear(this.received);
    clear(this.log);
    this.chipButtons = [];
    const hls = scene ? scene.highlights || [] : [];
    this.hlBox.hidden = !hls.length;
    for (const hl of hls) {
      // (a chip the lesson did not label is named as the page names its field: "frame 1" in the page's language)
      const label = hl.label && hl.label !== hl.name ? hl.label : fieldName(this.i18n, hl);
      const b = h(d, 'button', { type: 'button', class: 'chip', title: `${fieldName(this.i18n, hl)} = ${String(hl.value)}`, on: { click: () => this.handlers.onChip(hl.field) } }, h(d, 'span', { class: 'chip-label', text: label }));
      b.dataset.field = String(hl.field);
      this.chipButtons.push(b);
      this.chips.appendChild(b);
    }
    this.renderDecisions(scene);
    this.renderQuestion(scene ? scene.question : null);
    this.renderExercise(scene ? scene.exercise : null);
    const writes = scene ? scene.writes || [] : [];
    this.wireBox.hidden = !writes.length;
    const shown = writes.slice(-40);
    if (writes.length > shown.length) this.wire.appendChild(h(d, 'li', { class: 'muted', text: this.i18n.t('ui.lesson.earlier', { n: writes.length - shown.length }) }));
    for (const w of shown) {
      this.wire.appendChild(h(d, 'li', { class: `wire ${w.dir}` }, h(d, 'span', { class: 'wire-dir', text: writeText(this.i18n, w, scene && scene.topology) }), h(d, 'span', { class: 'wire-len', text: this.i18n.tn('ui.octets', w.length, { n: w.length }) }), h(d, 'span', { class: 'wire-at muted', text: this.i18n.t('ui.lesson.writeAt', { offset: w.offset, t: Number(w.t).toFixed(3) }) })));
    }
    const received = scene ? scene.received || [] : [];
    this.receivedBox.hidden = !received.length;
    for (const r of received) this.received.appendChild(h(d, 'li', {}, h(d, 'strong', { text: this.i18n.t('ui.tree.name', { name: roleName(this.i18n, r.peer) }) }), h(d, 'code', { text: framesText(r.frames) })));
    const log = scene ? scene.log || [] : [];
    this.logBox.hidden = !log.length;
    for (const e of log) this.log.appendChild(h(d, 'li', { class: e.error ? 'log-error' : '' }, h(d, 'span', { class: 'muted', text: `t=${Number(e.t).toFixed(3)} ` }), h(d, 'strong', { text: this.i18n.t('ui.tree.name', { name: roleName(this.i18n, e.peer) }) }), e.text));
  }

  renderDecisions(scene) {
    const d = this.doc;
    clear(this.decisions);
    this.decisionButtons = [];
    const events = (scene && scene.events) || [];
    const picked = ((scene && scene.decisions) || []).filter((i) => Number.isInteger(i) && events[i]);
    this.decisionBox.hidden = !picked.length;
    for (const i of picked) {
      const ev = events[i];
      const b = h(d, 'button', { type: 'button', class: 'decision', title: ev.rule ? this.i18n.t('ui.lesson.rule', { rule: ev.rule }) : '', on: { click: () => this.handlers.onDecision && this.handlers.onDecision(i) } }, h(d, 'strong', { text: this.i18n.t('ui.tree.name', { name: ev.node }) }), String(ev.text || ev.what || ''), ev.rule ? h(d, 'span', { class: 'muted', text: ` (${ev.rule})` }) : null);
      b.dataset.index = String(i);
      this.decisionButtons.push(b);
      this.decisions.appendChild(h(d, 'li', {}, b));
    }
  }

  /** Mark the decision that is selected (an event index), if it is one of the step's. */
  setSelectedDecision(index) {
    for (const b of this.decisionButtons || []) b.classList.toggle('selected', Number(b.dataset.index) === index);
  }

  renderQuestion(q) {
    const d = this.doc;
    clear(this.question);
    this.question.hidden = !q;
    this.resultEl = null;
    this.selectedEl = null;
    if (!q) return;
    this.question.append(h(d, 'h3', { t: this.i18n.message('ui.lesson.question') }), h(d, 'p', { class: 'prompt', text: q.prompt }));
    if (q.kind === 'choice') {
      const row = h(d, 'div', { class: 'choices' });
      for (const c of q.choices || []) row.appendChild(h(d, 'button', { type: 'button', class: 'choice', text: c, on: { click: () => this.handlers.onChoice(c) } }));
      this.question.appendChild(row);
    } else {
      this.selectedEl = h(d, 'span', { class: 'muted', text: this.i18n.t('ui.answer.nothing') });
      this.question.append(
        h(d, 'p', { class: 'hint', t: this.i18n.message(q.kind === 'byte' ? 'ui.lesson.hint.byte' : 'ui.lesson.hint.field') }),
        h(d, 'div', { class: 'check-row' }, h(d, 'button', { type: 'button', class: 'primary', t: this.i18n.message('ui.lesson.check'), on: { click: () => this.handlers.onCheck() } }), this.selectedEl),
      );
    }
    this.resultEl = h(d, 'div', { class: 'answer-result', hidden: true });
    this.classEl = h(d, 'div', { class: 'class-answers', hidden: true, attrs: { 'aria-live': 'polite' } });
    this.questionShown = q;
    this.question.append(this.resultEl, this.classEl);
  }

  /** The step's exercise (a typed answer, or a topology to build in the playground), checked by the server. */
  renderExercise(exercise) {
    this.exerciseBox = null;
    this.exerciseSlot.hidden = !exercise || !this.lesson;
    if (this.exerciseSlot.hidden) return setChildren(this.exerciseSlot);
    const link = exercise.kind === 'topology' ? exerciseLink(this.lesson.id, this.number) : null;
    this.exerciseBox = new ExerciseBox(this.doc, exercise, { i18n: this.i18n, check: (body) => this.handlers.onExercise(body), link });
    setChildren(this.exerciseSlot, this.exerciseBox.root);
  }

  /**
   * A class's answers to this step's question (presenter mode, the class socket's `answers`): how many answered
   * and, once revealed (or to a teacher who asks), what. view: { answered, students, revealed, tally: [{answer,
   * count, correct}], teacher (the page is the teacher's), onReveal() }.
   */
  setClassAnswers(view) {
    const d = this.doc;
    const el = this.classEl;
    if (!el) return;
    el.hidden = !view;
    if (!view) return;
    const q = this.questionShown;
    const label = (a) => (a.choice !== undefined ? String((q && q.choices && q.choices[a.choice]) ?? a.choice)
      : a.field !== undefined ? fieldName(this.i18n, { name: a.field }) : this.i18n.t('ui.answers.offset', { n: a.offset }));
    const parts = [h(d, 'h4', { t: this.i18n.message('ui.answers.title') }), h(d, 'p', { class: 'answers-count', t: this.i18n.message('ui.answers.count', { answered: view.answered, students: view.students }) })];
    if (view.revealed) {
      const most = Math.max(1, ...view.tally.map((r) => r.count));
      parts.push(h(d, 'ol', { class: 'tally' }, view.tally.map((r) =>
        h(d, 'li', { class: `tally-row${r.correct ? ' right' : ''}` },
          h(d, 'span', { class: 'tally-label', text: label(r.answer) }),
          h(d, 'span', { class: 'tally-bar', style: { width: `${Math.round((100 * r.count) / most)}%` } }),
          h(d, 'span', { class: 'tally-count', text: r.correct ? `${r.count} ✔` : String(r.count) })))));
    } else if (view.teacher) {
      parts.push(h(d, 'p', { class: 'hint', t: this.i18n.message('ui.answers.hidden') }),
        h(d, 'button', { type: 'button', class: 'primary reveal-answers', t: this.i18n.message('ui.answers.reveal'), disabled: !view.answered, on: { click: () => view.onReveal() } }));
    }
    setChildren(el, ...parts);
  }

  setSelectedText(text) {
    if (this.selectedEl) this.selectedEl.textContent = text;
  }

  setResult(result) {
    if (!this.resultEl) return;
    const d = this.doc;
    this.resultEl.hidden = false;
    this.resultEl.className = `answer-result ${result.correct ? 'right' : 'wrong'}`;
    setChildren(this.resultEl, h(d, 'p', { class: 'verdict', text: result.correct ? `✔ ${result.message}` : `✘ ${result.message}` }), ...renderNarration(d, result.explain || []));
  }

  /** Mark which chips are lit (a Set of field indexes) and whether highlights are on. */
  setLit(fields, on) {
    for (const b of this.chipButtons || []) b.classList.toggle('lit', on && fields.has(Number(b.dataset.field)));
    this.hlToggle.setAttribute('aria-pressed', on ? 'true' : 'false');
    tr(this.hlToggle, this.i18n.message(on ? 'ui.lesson.highlightsOn' : 'ui.lesson.highlightsOff'));
  }

  setFocused(field) {
    for (const b of this.chipButtons || []) b.classList.toggle('focused', Number(b.dataset.field) === field);
  }

  setError(text) {
    this.errorEl.textContent = text || '';
    this.errorEl.hidden = !text;
  }
}

// ---------------------------------------------------------------- class bar

export class ClassBar {
  /** handlers: { onPresent(), onEnd(), onJoin(code), onFollow(), onLeave() } */
  constructor(container, handlers) {
    this.i18n = handlers.i18n;
    const d = (this.doc = container.ownerDocument);
    this.container = container;
    this.handlers = handlers;
    this.codeInput = h(d, 'input', { type: 'text', class: 'code-input', tPlaceholder: this.i18n.message('ui.class.codePlaceholder'), tLabel: this.i18n.message('ui.class.code'), attrs: { maxlength: '8', autocomplete: 'off', spellcheck: 'false' } });
    this.mode = null;
    this.idle();
  }

  idle(error = '') {
    const d = this.doc;
    this.mode = 'idle';
    const form = h(d, 'form', { class: 'join-form', on: { submit: (e) => { e.preventDefault(); this.handlers.onJoin(this.codeInput.value); } } }, h(d, 'label', {}, h(d, 'span', { t: this.i18n.message('ui.class.join.label') }), this.codeInput), h(d, 'button', { type: 'submit', t: this.i18n.message('ui.class.join') }));
    setChildren(
      this.container,
      h(d, 'div', { class: 'class-bar-row' }, h(d, 'button', { type: 'button', id: 'present-button', class: 'primary', t: this.i18n.message('ui.class.present'), tTitle: this.i18n.message('ui.class.present.title'), on: { click: () => this.handlers.onPresent() } }), form, error ? h(d, 'span', { class: 'error', text: error }) : null),
    );
    this.container.className = 'class-bar idle';
  }

  teacher({ code, joinUrl, count = 0, following = 0, connected = false }) {
    const d = this.doc;
    this.mode = 'teacher';
    setChildren(
      this.container,
      h(
        d,
        'div',
        { class: 'class-bar-row' },
        h(d, 'span', { class: 'role-badge teacher', t: this.i18n.message('ui.class.presenting') }),
        h(d, 'span', { class: 'join-label', t: this.i18n.message('ui.class.code') }),
        h(d, 'strong', { id: 'join-code', class: 'join-code', text: code }),
        h(d, 'span', { class: 'join-url muted', text: joinUrl }),
        h(d, 'span', { id: 'student-count', class: 'student-count', t: this.i18n.message(count === 1 ? 'ui.class.students.one' : 'ui.class.students.other', { count, following }) }),
        h(d, 'span', { class: `conn-state ${connected ? 'on' : 'off'}`, t: this.i18n.message(connected ? 'ui.class.live' : 'ui.class.reconnecting') }),
        h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.class.end'), on: { click: () => this.handlers.onEnd() } }),
      ),
    );
    this.container.className = 'class-bar teacher';
  }

  student({ code, following = true, teacherPresent = true, connected = false }) {
    const d = this.doc;
    this.mode = 'student';
    const state = !connected ? 'ui.class.connecting' : following ? 'ui.class.following' : 'ui.class.exploring';
    setChildren(
      this.container,
      h(
        d,
        'div',
        { class: 'class-bar-row' },
        h(d, 'span', { class: 'role-badge student', t: this.i18n.message('ui.class.badge', { code }) }),
        h(d, 'span', { id: 'follow-state', class: `follow-state ${following ? 'following' : 'wandering'}`, t: this.i18n.message(state) }),
        connected && !teacherPresent ? h(d, 'span', { class: 'muted', t: this.i18n.message('ui.class.away') }) : null,
        h(d, 'button', { type: 'button', id: 'follow-button', class: following ? 'small' : 'primary', t: this.i18n.message('ui.class.follow'), disabled: following, on: { click: () => this.handlers.onFollow() } }),
        h(d, 'button', { type: 'button', class: 'small', t: this.i18n.message('ui.class.leave'), on: { click: () => this.handlers.onLeave() } }),
      ),
    );
    this.container.className = `class-bar student ${following ? 'following' : 'wandering'}`;
  }

  ended(text) {
    this.idle(text);
  }
}
