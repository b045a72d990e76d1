// The lessons page's player: what is shown of a lesson and its step (the list or the lesson panel, the
// step's scene in the workbench, its selection and highlights), loaded from the lessons API.

export class LessonPlayer {
  /**
   * doc: the document (its #lesson-list and #lesson-panel); api: the lessons API; list: the LessonList;
   * panel: the LessonPanel; bench: the LessonWorkbench; highlights: the LessonHighlights;
   * answers(): the AnswerChecker; status: the status line; changed(): after a step is shown (the URL, the class).
   */
  constructor(doc, { api, list, panel, bench, highlights, answers, status, changed }) {
    this.listEl = doc.getElementById('lesson-list');
    this.panelEl = doc.getElementById('lesson-panel');
    Object.assign(this, { api, list, panel, bench, highlights, answers, status, changed });
    this.lessonId = null;
    this.lesson = null;
    this.step = 1;
    this.scene = null; // the step's scene as the API gave it
    this.applying = 0; // > 0 while the page (not the user) changes the selection
    this.loadSeq = 0;
    this.hinting = false; // the status line shows the teacher's "open a lesson" hint
  }

  /** The lesson list (on) or the lesson panel. */
  showList(on) {
    this.listEl.hidden = !on && !!this.lesson;
    this.panelEl.hidden = on || !this.lesson;
  }

  /** Draw the highlights lit on the scene's element. */
  applyHighlights() {
    const scene = this.scene;
    this.highlights.apply(scene, scene ? this.bench.event(scene.element) : null);
  }

  /** Run fn as the page's own change of the selection (not the user's). */
  async applied(fn) {
    this.applying++;
    try {
      return await fn();
    } finally {
      this.applying--;
    }
  }

  /** The status line says "open a lesson" until one is. */
  hintOpenLesson(text) {
    this.status(text);
    this.hinting = true;
  }

  /** Forget the lesson and scene loaded (another language): the next show() loads them again. */
  forget() {
    this.lesson = null;
    this.scene = null;
  }

  /**
   * Show a lesson at a step; `at` (from a teacher) overrides the step's element, field and highlights.
   * Returns once the scene is shown (or a newer show() took over).
   */
  async show(lessonId, number, at = null) {
    if (!lessonId) return;
    const { api, panel, bench, highlights } = this;
    const wb = bench.wb;
    const seq = ++this.loadSeq;
    try {
      let lesson = this.lesson;
      if (this.lessonId !== lessonId || !lesson) {
        lesson = await api.lesson(lessonId);
        if (seq !== this.loadSeq) return;
        this.lessonId = lessonId;
        this.lesson = lesson;
        if (this.hinting) {
          // The "open a lesson" hint has done its job: it must not linger over the lesson.
          this.hinting = false;
          this.status('');
        }
        this.scene = null;
        panel.setLesson(lesson);
        panel.setExportUrl(api.illustratedUrl(lesson.id), api.scriptUrl(lesson.id));
        this.list.setCurrent(lessonId);
      }
      const n = Math.min(Math.max(1, Number(number) || 1), lesson.steps.length);
      let scene = this.scene;
      const sameStep = scene && this.step === n && scene.lesson === lessonId;
      if (!sameStep) {
        this.step = n;
        panel.setStep(n, null);
        this.showList(false);
        scene = await api.step(lessonId, n);
        if (seq !== this.loadSeq) return;
        this.scene = scene;
        this.answers().forgetByte();
        this.applying++;
        try {
          bench.setEvents(scene.events || [], scene.topology || null);
          panel.setStep(n, scene);
        } finally {
          this.applying--;
        }
      }
      this.showList(false);
      this.applying++;
      try {
        const element = at && 'element' in at ? at.element : sameStep && !at ? wb.selection.get().index : scene.element;
        const field = at && 'field' in at ? at.field : sameStep && !at ? wb.selection.get().field : scene.field;
        bench.select(element, field);
        if (at && Array.isArray(at.highlights)) highlights.reset(at.highlights);
        else if (!sameStep) highlights.reset((scene.highlights || []).map((h) => h.field));
        this.applyHighlights();
        this.answers().updateSelectedText();
      } finally {
        this.applying--;
      }
      this.changed();
    } catch (err) {
      if (seq === this.loadSeq) {
        panel.setError(err.message);
        this.status(err.message, 'error');
      }
    }
  }
}
