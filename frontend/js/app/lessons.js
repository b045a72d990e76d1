// The lessons page (lessons.html): a lesson player that drives the same views as
// the playground (sequence, octets, explanation, tree, hex dump, expert list),
// and presenter mode: a teacher's lesson, step, selection and highlights are
// mirrored live to every student of the class.
//
// URLs: lessons.html?lesson=greeting&step=3   a lesson at a step (steps count from 1)
//       lessons.html?join=CODE                join a class as a student
//       lessons.html?present=CODE&lesson=...  (set by the page) a teacher's class, resumed after a reload
//
// host = { document, window, fetch, WebSocket, clipboard } — the only place the environment comes from
// (main-lessons.js).

import { peerLabel } from '../core/eventlog.js';
import { parseLink, buildLink } from '../core/links.js';
import { isTyping } from '../views/dom.js';
import { createWorkbench, initShell, statusLine } from './workbench.js';
import { createLessonsApi } from '../lessons/api.js';
import { createHighlighter } from '../lessons/highlights.js';
import { LessonList, LessonPanel } from '../lessons/views.js';
import { teacherState } from '../lessons/classroom.js';
import { ClassroomClient } from './classroom-client.js';
import { AnswerChecker } from './lesson-answers.js';
import { Dataset } from './dataset.js';
import { TopologyPanel } from './topology-panel.js';
import { i18n, t } from '../core/i18n.js';

export function startLessons(host) {
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createLessonsApi(host);
  const status = statusLine(doc);
  const raf = win.requestAnimationFrame ? (f) => win.requestAnimationFrame(f) : (f) => setTimeout(f, 16);

  // ---- the shared views ---------------------------------------------------------------------
  const data = new Dataset(); // the scene's elements
  const { log, source } = data;
  const wb = createWorkbench(
    { sequence: $('sequence'), octets: $('octets'), explain: $('explain'), tree: $('tree'), hex: $('hex'), expert: $('expert') },
    {
      onSelect: (index) => userSelect(index),
      onPick: (index) => userSelect(index),
      onJump: (index) => userSelect(index),
      context: (ev) => log.context(ev.dir),
      copyText: (text) => host.clipboard && host.clipboard.writeText(text).catch(() => {}),
    },
  );
  initShell(host, (on) => wb.setLarge(on));
  wb.sequence.setSource(source);
  // A topology step: the playground's diagram above the sequence, one lifeline per node, a message's path.
  const topo = new TopologyPanel($('topology'), { sequence: wb.sequence, onPick: (index) => userSelect(index) });
  const highlighter = createHighlighter({ win, slots: { octets: $('octets'), tree: $('tree'), hex: $('hex') }, selection: wb.selection, hex: wb.hex });

  // ---- what is shown ------------------------------------------------------------------------
  const view = { lessonId: null, lesson: null, step: 1, scene: null, lit: new Set(), highlightsOn: true };
  let applying = 0; // > 0 while the page (not the user) changes the selection
  let loadSeq = 0;

  const list = new LessonList($('lesson-list'), { onOpen: (id) => userNav(() => show(id, 1)) });
  const panel = new LessonPanel($('lesson-panel'), {
    onBack: () => showList(true),
    onStep: (n) => userNav(() => show(view.lessonId, n)),
    onChip: (field) => focusField(field),
    onHighlights: (on) => {
      view.highlightsOn = on;
      applyHighlights();
      broadcast();
    },
    onCheck: () => answers.check(),
    onChoice: (choice) => answers.submit({ choice }),
    onDecision: (index) => userSelect(index),
  });

  function showList(on) {
    $('lesson-list').hidden = !on && !!view.lesson;
    $('lesson-panel').hidden = on || !view.lesson;
  }

  function setEvents(events, topology = null) {
    data.clear();
    log.addAll(events);
    topo.forget();
    if (topology) {
      topo.setTopology(topology);
      topo.sync(log.events);
      data.setChunkConn(topo.hexConn(null)); // many connections: the hex dump follows one
    }
    source.set(log.events);
    wb.hex.setChunks(data.chunks());
    wb.expert.setItems(log.experts.map((i) => ({ index: i, event: log.events[i] })));
    wb.sequence.setLabels({ client: peerLabel('client', log.peer('c2s')), server: peerLabel('server', log.peer('s2c')) });
    // Captures carry absolute timestamps: count from the first one.
    const first = log.events.find((ev) => typeof ev.ts === 'number');
    wb.sequence.setTimeBase(first ? first.ts : null);
    wb.tree.setTimeBase(first ? first.ts : null); // the details count time as the sequence does
  }

  function selectIndex(index, field) {
    const ev = Number.isInteger(index) ? log.events[index] : undefined;
    if (!ev) {
      wb.sequence.setSelected(null);
      wb.selection.clear();
      return;
    }
    wb.sequence.setSelected(index);
    wb.selection.selectElement(index, ev);
    if (topo.active) {
      topo.selected(ev);
      if (data.setChunkConn(topo.hexConn(ev))) wb.hex.setChunks(data.chunks()); // the element's connection
    }
    if (field !== undefined) wb.selection.selectField(Number.isInteger(field) && Array.isArray(ev.fields) && field < ev.fields.length ? field : null);
  }

  function applyHighlights() {
    const scene = view.scene;
    const hls = scene ? scene.highlights || [] : [];
    const ev = scene && Number.isInteger(scene.element) ? log.events[scene.element] : null;
    const on = view.highlightsOn ? hls.filter((h) => view.lit.has(h.field)) : [];
    highlighter.set(ev ? scene.element : null, on.map((h) => ({ ...h, dir: ev.dir })), ev ? ev.dir : 'c2s');
    panel.setLit(view.lit, view.highlightsOn);
  }

  /**
   * Show a lesson at a step; `at` (from a teacher) overrides the step's element, field and highlights.
   * Returns once the scene is shown (or a newer show() took over).
   */
  let hinting = false; // the status line shows the teacher's "open a lesson" hint

  async function show(lessonId, number, at = null) {
    if (!lessonId) return;
    const seq = ++loadSeq;
    try {
      let lesson = view.lesson;
      if (view.lessonId !== lessonId || !lesson) {
        lesson = await api.lesson(lessonId);
        if (seq !== loadSeq) return;
        view.lessonId = lessonId;
        view.lesson = lesson;
        if (hinting) {
          // The "open a lesson" hint has done its job: it must not linger over the lesson.
          hinting = false;
          status('');
        }
        view.scene = null;
        panel.setLesson(lesson);
        panel.setExportUrl(api.illustratedUrl(lesson.id));
        list.setCurrent(lessonId);
      }
      const n = Math.min(Math.max(1, Number(number) || 1), lesson.steps.length);
      let scene = view.scene;
      const sameStep = scene && view.step === n && scene.lesson === lessonId;
      if (!sameStep) {
        view.step = n;
        panel.setStep(n, null);
        showList(false);
        scene = await api.step(lessonId, n);
        if (seq !== loadSeq) return;
        view.scene = scene;
        answers.forgetByte();
        applying++;
        try {
          setEvents(scene.events || [], scene.topology || null);
          panel.setStep(n, scene);
        } finally {
          applying--;
        }
      }
      showList(false);
      applying++;
      try {
        const element = at && 'element' in at ? at.element : sameStep && !at ? wb.selection.get().index : scene.element;
        const field = at && 'field' in at ? at.field : sameStep && !at ? wb.selection.get().field : scene.field;
        selectIndex(element, field);
        if (at && Array.isArray(at.highlights)) {
          view.lit = new Set(at.highlights);
          view.highlightsOn = true;
        } else if (!sameStep) {
          view.lit = new Set((scene.highlights || []).map((h) => h.field));
          view.highlightsOn = true;
        }
        applyHighlights();
        answers.updateSelectedText();
      } finally {
        applying--;
      }
      updateUrl();
      broadcast();
    } catch (err) {
      if (seq === loadSeq) {
        panel.setError(err.message);
        status(err.message, 'error');
      }
    }
  }

  // ---- the user's own actions ---------------------------------------------------------------
  function userNav(fn) {
    classroom.wander();
    return fn();
  }

  function userSelect(index) {
    classroom.wanderTo(index, wb.selection.get().index);
    selectIndex(index);
  }

  function focusField(field) {
    const scene = view.scene;
    if (!scene || !Number.isInteger(scene.element)) return;
    if (wb.selection.get().index !== scene.element) userSelect(scene.element);
    view.lit.add(field);
    view.highlightsOn = true;
    wb.selection.selectField(field);
    applyHighlights();
    broadcast();
  }

  wb.selection.subscribe((s, prev) => {
    if (s.field !== prev.field || s.index !== prev.index) {
      panel.setFocused(s.index === (view.scene && view.scene.element) ? s.field : null);
      panel.setSelectedDecision(s.index);
      answers.updateSelectedText();
      broadcast();
      raf(revealField);
    }
  });

  // The octet table does not scroll by itself: bring the selected field's box into view.
  function revealField() {
    const box = $('octets').querySelector('.oct-box.selected');
    if (box && box.scrollIntoView) box.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }

  const answers = new AnswerChecker($('hex'), { wb, panel, api, where: () => ({ lessonId: view.lessonId, step: view.step }) });

  win.addEventListener('keydown', (e) => {
    if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey || !view.lesson) return;
    if (e.key === 'ArrowRight' || e.key === 'n') {
      e.preventDefault();
      if (view.step < view.lesson.steps.length) userNav(() => show(view.lessonId, view.step + 1));
    } else if (e.key === 'ArrowLeft' || e.key === 'p') {
      e.preventDefault();
      if (view.step > 1) userNav(() => show(view.lessonId, view.step - 1));
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      wb.sequence.move(e.key === 'ArrowDown' ? 1 : -1);
    }
  });

  // ---- the URL --------------------------------------------------------------------------------
  function updateUrl() {
    if (!win.history || !win.history.replaceState) return;
    const { role, classCode } = classroom;
    const params = {};
    if (role === 'student' && classCode) params.join = classCode;
    if (role === 'teacher' && classCode) params.present = classCode;
    if (view.lessonId && role !== 'student') {
      params.lesson = view.lessonId;
      params.step = view.step;
    }
    win.history.replaceState(null, '', `${win.location.pathname}${buildLink(params, ['lesson', 'step', 'join', 'present'])}`);
  }

  // ---- presenter mode (classroom-client.js) ---------------------------------------------------
  const classroom = new ClassroomClient(host, api, {
    status,
    raf,
    teacherState: () => {
      if (!view.lessonId || applying) return null;
      const s = wb.selection.get();
      return teacherState({ lesson: view.lessonId, step: view.step, element: s.index, field: s.field, highlights: view.highlightsOn ? [...view.lit] : [] });
    },
    async follow(state) {
      applying++;
      try {
        await show(state.lesson, state.step, { element: state.selection ? state.selection.element : null, field: state.selection ? state.selection.field : null, highlights: state.highlights || [] });
      } finally {
        applying--;
      }
    },
    hasLesson: () => !!view.lesson,
    hintOpenLesson() {
      if (!view.lessonId) {
        status(t('ui.class.openLesson'));
        hinting = true;
      }
    },
    urlChanged: () => updateUrl(),
  });

  function broadcast() {
    classroom.broadcast();
  }

  // ---- start ----------------------------------------------------------------------------------
  function loadList() {
    api.lessons().then(
      (res) => list.setLessons(res.lessons || []),
      (err) => status(t('ui.lesson.listFailed', { error: err.message }), 'error'),
    );
  }
  loadList();
  // Another language: the list, the lesson and its scene come again in it (the server translates
  // them), at the same step with the same selection and highlights.
  i18n.onChange(() => {
    loadList();
    if (!view.lessonId) return;
    const s = wb.selection.get();
    const at = { element: s.index, field: s.field, highlights: view.highlightsOn ? [...view.lit] : [] };
    view.lesson = null;
    view.scene = null;
    show(view.lessonId, view.step, at);
  });
  const link = parseLink(win.location.search);
  classroom.resume(link);
  if (link.lesson && !link.join) show(link.lesson, Number.parseInt(link.step, 10) || 1);
  else showList(true);

  return { wb, view, show, get role() { return classroom.role; }, get follower() { return classroom.follower; } };
}
