// The capture viewer's two views of a capture file: its Elements (one connection's, the workbench) or its
// Overview (topology, findings, flows, drawn by views/overview.js from the server's analysis, asked for
// once per capture).

import { OverviewView } from '../../views/overview.js';

export class CaptureViews {
  /**
   * file: the CaptureFile (its `id` and `summary`).
   * page: { api, updateUrl(), open(conn, index): show an element (or a connection) in the Elements view }
   */
  constructor(doc, file, page) {
    this.i18n = page.i18n;
    const $ = (id) => doc.getElementById(id);
    this.$ = $;
    this.file = file;
    this.page = page;
    this.view = 'elements'; // or 'overview': the capture as a whole
    this.analysis = null; // { id, promise } of the analysis asked for
    this.overview = new OverviewView($('overview'), {
      i18n: this.i18n,
      onOpenEvent: (conn, index) => this.openFrom(conn, index),
      onOpenConnection: (conn) => this.openFrom(conn),
      onCurveCheck: (secret) => page.api.captureCurveCheck(file.id, [secret]),
    });
    $('view-elements').addEventListener('click', () => this.set('elements'));
    $('view-overview').addEventListener('click', () => this.set('overview'));
  }

  get overviewShown() {
    return this.view === 'overview';
  }

  /** A summary came: the analysis asked for belongs to another capture, or to a dissection not done. */
  summaryChanged(summary) {
    if (this.analysis?.id !== summary.id || summary.state === 'dissecting') this.analysis = null;
  }

  /** Another language: the analysis (its findings are sentences) is asked for again when shown. */
  languageChanged() {
    this.analysis = null;
  }

  /** Elements or Overview, shown. */
  set(view) {
    const { $ } = this;
    this.view = view === 'overview' ? 'overview' : 'elements';
    const over = this.view === 'overview';
    for (const [id, on] of [['view-elements', !over], ['view-overview', over]]) {
      $(id).setAttribute('aria-selected', on ? 'true' : 'false');
      $(id).classList.toggle('on', on);
    }
    const any = (this.file.summary?.connections || []).length > 0;
    $('overview').hidden = !over;
    $('workbench').hidden = over || !any;
    $('connections').hidden = over || !any;
    if (over) this.load();
    this.page.updateUrl();
  }

  async load() {
    const { file, overview } = this;
    const id = file.id;
    if (!id || !file.summary) return;
    if (file.summary.state === 'dissecting') {
      overview.setMessage(this.i18n.t('ui.overview.wait'));
      return;
    }
    if (this.analysis?.id !== id) {
      overview.setMessage(this.i18n.t('ui.overview.loading'));
      this.analysis = { id, promise: this.page.api.captureAnalysis(id) };
    }
    try {
      const analysis = await this.analysis.promise;
      if (file.id === id) overview.setAnalysis(analysis);
    } catch (err) {
      this.analysis = null;
      if (file.id === id) overview.setMessage(this.i18n.t('ui.overview.failed', { error: err.message }));
    }
  }

  openFrom(conn, index) {
    this.set('elements');
    this.page.open(String(conn), index);
  }
}
