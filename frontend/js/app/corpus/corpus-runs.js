// The Corpus page's runs: the list of runs, starting one over the ticked captures, and the run opened:
// its head, its progress followed while it runs (polling when the stream breaks), cancel and delete.
// What a finished run shows (the report, the tables) is corpus-tabs.js's.

import { FINAL_STATES } from '../../core/corpus-api.js';
import { RunList, RunHead } from '../../views/corpus.js';

export class RunsPanel {
  /**
   * doc: the document (#runs, #run-head, #empty, #run-section); corpus: the corpus API client; status: the
   * status line; picker: the CapturePicker (busy while a run runs); tabs: the RunTabs; gen: the page's
   * generation counter (stale replies are dropped).
   */
  constructor(doc, { i18n, corpus, status, picker, tabs, gen }) {
    this.i18n = i18n;
    this.doc = doc;
    Object.assign(this, { corpus, status, picker, tabs, gen });
    this.runs = [];
    this.run = null; // the open run
    this.stopProgress = null;
    this.list = new RunList(doc.getElementById('runs'), { i18n: this.i18n, onOpen: (id) => this.open(id) });
    this.head = new RunHead(doc.getElementById('run-head'), { i18n: this.i18n, onCancel: () => this.cancel(), onDelete: () => this.delete() });
  }

  /** Another language: the run's head and the list are words. */
  relabel() {
    if (this.run) this.head.setRun(this.run);
    this.list.setRuns(this.runs, this.run && this.run.id);
  }

  async load() {
    try {
      this.runs = (await this.corpus.runs()).runs;
    } catch (err) {
      this.status(this.i18n.t('ui.corpus.listRunsFailed', { error: err.message }), 'error');
      return;
    }
    this.list.setRuns(this.runs, this.run && this.run.id);
    this.picker.setBusy(this.runs.some((r) => r.state === 'running'));
  }

  /** Start a run over these captures and open it. */
  async start(ids) {
    if (!ids.length) return;
    const { picker } = this;
    picker.setBusy(true);
    let res;
    try {
      res = await this.corpus.startRun(ids);
    } catch (err) {
      picker.setNote(this.i18n.t('ui.corpus.startFailed', { error: err.message }), 'error');
      picker.setBusy(false);
      return;
    }
    picker.setNote('');
    this.tabs.tables.reset();
    await this.open(res.id, 'report');
    await this.load();
  }

  /** Open a run at a tab (the tab shown when none is given). */
  async open(id, tab) {
    if (this.stopProgress) this.stopProgress();
    this.stopProgress = null;
    const gen = this.gen.next();
    let run;
    try {
      run = await this.corpus.run(id);
    } catch (err) {
      if (!this.gen.is(gen)) return;
      this.status(err.status === 404 ? this.i18n.t('ui.corpus.runGone') : this.i18n.t('ui.corpus.openFailed', { error: err.message }), 'error');
      this.show(null);
      return;
    }
    if (!this.gen.is(gen)) return;
    if (!this.run || this.run.id !== run.id) this.tabs.forget();
    this.show(run, tab || this.tabs.tab);
    if (run.state === 'running') this.follow(run.id, gen);
  }

  /** Follows a running run's progress stream (polling when the stream breaks) until it ends. */
  follow(id, gen) {
    const onMessage = (msg) => {
      if (!this.gen.is(gen)) return;
      this.head.setProgress(msg);
      if (FINAL_STATES.includes(msg.state)) this.finished(id, gen);
    };
    this.stopProgress = this.corpus.followProgress(id, onMessage, () => this.poll(id, gen, onMessage));
  }

  async poll(id, gen, onMessage) {
    while (this.gen.is(gen)) {
      try {
        const run = await this.corpus.run(id);
        onMessage(run);
        if (FINAL_STATES.includes(run.state)) return;
      } catch (err) {
        this.status(this.i18n.t('ui.corpus.progressLost', { error: err.message }), 'error');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  async finished(id, gen) {
    try {
      const run = await this.corpus.run(id);
      if (this.gen.is(gen)) this.show(run, this.tabs.tab);
    } catch {
      // deleted meanwhile: the list below says so
    }
    await this.load();
  }

  /** Show a run (null: none) at a tab. */
  show(run, tab = this.tabs.tab) {
    const $ = (id) => this.doc.getElementById(id);
    this.run = run;
    this.list.setRuns(this.runs, run && run.id);
    $('empty').hidden = !!run;
    $('run-section').hidden = !run;
    if (run) this.head.setRun(run);
    this.tabs.show(run, tab);
  }

  async cancel() {
    if (!this.run) return;
    try {
      this.head.setProgress(await this.corpus.cancelRun(this.run.id));
    } catch (err) {
      this.status(this.i18n.t('ui.corpus.cancelFailed', { error: err.message }), 'error');
    }
  }

  async delete() {
    if (!this.run) return;
    const id = this.run.id;
    if (this.stopProgress) this.stopProgress();
    this.gen.next();
    try {
      await this.corpus.deleteRun(id);
    } catch (err) {
      if (err.status !== 404) {
        this.status(this.i18n.t('ui.corpus.deleteFailed', { error: err.message }), 'error');
        return;
      }
    }
    this.show(null);
    this.status(this.i18n.t('ui.corpus.deleted'));
    await this.load();
  }
}
