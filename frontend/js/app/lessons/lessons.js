// The lessons page (lessons.html): a lesson player that drives the same views as
// the playground (sequence, octets, explanation, tree, hex dump, expert list),
// and presenter mode: a teacher's lesson, step, selection and highlights are
// mirrored live to every student of the class.
//
// The page is a few parts with one job each: what is shown of the lesson and step (lesson-player.js),
// the scene's events in the workbench (lesson-workbench.js), the highlights (lesson-highlights.js), the
// keyboard and the URL (lesson-navigation.js), the questions (lesson-answers.js) and presenter mode
// (classroom-client.js); here they are wired, with the user's own actions and the start.
//
// host = { i18n, document, window, fetch, WebSocket, clipboard } — the only place the environment comes from
// (main-lessons.js).

import { parseLink, buildLink } from '../../core/links.js';
import { frameThrottle } from '../../views/dom.js';
import { createWorkbench, initShell, statusLine } from '../shared/workbench.js';
import { createLessonsApi } from '../../lessons/api.js';
import { LessonList, LessonPanel } from '../../lessons/views.js';
import { teacherState } from '../../lessons/classroom.js';
import { ClassroomClient } from '../shared/classroom-client.js';
import { AnswerChecker } from './lesson-answers.js';
import { LessonWorkbench } from './lesson-workbench.js';
import { LessonHighlights } from './lesson-highlights.js';
import { LessonPlayer } from './lesson-player.js';
import { LessonNavigation } from './lesson-navigation.js';

export function startLessons(host) {
  const { i18n } = host;
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createLessonsApi(host);
  const status = statusLine(doc);
  // (the selected field is scrolled to in the page's one frame, after the views drew it: core/frames.js)
  const revealSoon = frameThrottle(win, () => bench.revealField());

  // ---- the parts ------------------------------------------------------------------------------
  const wb = createWorkbench(
    { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
    {
      i18n,
      onSelect: (index) => userSelect(index),
      onPick: (index) => userSelect(index),
      onJump: (index) => userSelect(index),
      context: (ev) => bench.log.context(ev.dir),
      copyText: (text) => host.clipboard && host.clipboard.writeText(text).catch(() => {}),
    },
  );
  initShell(host, (on) => wb.setLarge(on));
  const bench = new LessonWorkbench(wb, $('topology'), $('octets'), { i18n, onPick: (index) => userSelect(index) });

  const list = new LessonList($('lesson-list'), { i18n, onOpen: (id) => userNav(() => player.show(id, 1)) });
  const panel = new LessonPanel($('lesson-panel'), {
    i18n,
    onBack: () => player.showList(true),
    onStep: (n) => userNav(() => player.show(player.lessonId, n)),
    onChip: (field) => focusField(field),
    onHighlights: (on) => {
      highlights.on = on;
      player.applyHighlights();
      broadcast();
    },
    onCheck: () => answers.check(),
    onChoice: (choice) => answers.submit({ choice }),
    onExercise: (body) => api.exercise(player.lessonId, player.step, body),
    onDecision: (index) => userSelect(index),
  });
  const highlights = new LessonHighlights(win, { octets: $('octets'), tree: $('tree'), hex: $('hex') }, { wb, panel });
  const player = new LessonPlayer(doc, {
    api,
    list,
    panel,
    bench,
    highlights,
    answers: () => answers,
    status,
    changed: () => {
      nav.updateUrl();
      broadcast();
      showClassAnswers();
    },
  });

  wb.selection.subscribe((s, prev) => {
    if (s.field !== prev.field || s.index !== prev.index) {
      panel.setFocused(s.index === (player.scene && player.scene.element) ? s.field : null);
      panel.setSelectedDecision(s.index);
      answers.updateSelectedText();
      broadcast();
      revealSoon();
    }
  });

  const answers = new AnswerChecker($('hex'), {
    i18n,
    wb,
    panel,
    api,
    where: () => ({ lessonId: player.lessonId, step: player.step }),
    answered: (lesson, step, body) => classroom.answer(lesson, step, body, i18n.lang),
    reveal: (field) => {
      const scene = player.scene;
      if (!scene || !Number.isInteger(scene.element)) return;
      if (wb.selection.get().index !== scene.element) bench.select(scene.element);
      wb.selection.selectField(field);
    },
  });
  const nav = new LessonNavigation(win, {
    player,
    classroom: () => classroom,
    go: (n) => userNav(() => player.show(player.lessonId, n)),
    move: (delta) => wb.sequence.move(delta),
  });

  // ---- presenter mode (classroom-client.js) ---------------------------------------------------
  const classroom = new ClassroomClient(host, api, {
    status,
    teacherState: () => {
      if (!player.lessonId || player.applying) return null;
      const s = wb.selection.get();
      return teacherState({ lesson: player.lessonId, step: player.step, element: s.index, field: s.field, highlights: highlights.shown() });
    },
    follow: (state) => {
      // (the teacher presents the playground: the class watches its session there)
      if (state.page === 'playground') return win.location.assign(`index.html${buildLink({ join: classroom.classCode })}`);
      return player.applied(() =>
        player.show(state.lesson, state.step, { element: state.selection ? state.selection.element : null, field: state.selection ? state.selection.field : null, highlights: state.highlights || [] }),
      );
    },
    hasLesson: () => !!player.lesson,
    hintOpenLesson() {
      if (!player.lessonId) player.hintOpenLesson(i18n.t('ui.class.openLesson'));
    },
    urlChanged: () => nav.updateUrl(),
    showList: () => userNav(() => player.showList(true)),
    answers: (msg, teacher) => {
      classAnswers.set(`${msg.lesson}/${msg.step}`, { ...msg, teacher });
      showClassAnswers();
    },
  });

  // The class's answers to each question seen (the latest tally of each), shown with the step they are about.
  const classAnswers = new Map();
  function showClassAnswers() {
    const msg = classAnswers.get(`${player.lessonId}/${player.step}`);
    if (msg && player.scene && player.scene.question) panel.setClassAnswers({ ...msg, onReveal: () => classroom.reveal(msg.lesson, msg.step) });
  }

  function broadcast() {
    classroom.broadcast();
  }

  // ---- the user's own actions ---------------------------------------------------------------
  function userNav(fn) {
    classroom.wander();
    return fn();
  }

  function userSelect(index) {
    classroom.wanderTo(index, wb.selection.get().index);
    bench.select(index);
  }

  function focusField(field) {
    const scene = player.scene;
    if (!scene || !Number.isInteger(scene.element)) return;
    if (wb.selection.get().index !== scene.element) userSelect(scene.element);
    highlights.light(field);
    wb.selection.selectField(field);
    player.applyHighlights();
    broadcast();
  }

  // ---- start ----------------------------------------------------------------------------------
  function loadList() {
    api.lessons().then(
      (res) => {
        list.setLessons(res.lessons || []);
        list.setProblems(res.problems || []);
      },
      (err) => status(i18n.t('ui.lesson.listFailed', { error: err.message }), 'error'),
    );
  }
  loadList();
  // Another language: the list, the lesson and its scene come again in it (the server translates
  // them), at the same step with the same selection and highlights.
  i18n.onChange(() => {
    loadList();
    if (!player.lessonId) return;
    const s = wb.selection.get();
    const at = { element: s.index, field: s.field, highlights: highlights.shown() };
    player.forget();
    player.show(player.lessonId, player.step, at);
  });
  const link = parseLink(win.location.search);
  classroom.resume(link);
  if (link.lesson && !link.join) player.show(link.lesson, Number.parseInt(link.step, 10) || 1);
  else player.showList(true);

  return { wb, player, show: (...args) => player.show(...args), get role() { return classroom.role; }, get follower() { return classroom.follower; } };
}
