// The Corpus page's finished run: its tabs (the report, then the events, connections and errors tables
// with their counts), the pane shown, and the URL that says the run and tab.
//
// URL: corpus.html?run=<id>&tab=report|events|connections|errors

import { TABLES } from '../../core/corpus-tables.js';
import { ReportView } from '../../views/corpus.js';
import { formatCount } from '../../core/bytes.js';
import { tr } from '../../views/dom.js';

const TABS = ['report', ...TABLES];
const TAB_IDS = { events: 'ui.corpus.tab.eventsN', connections: 'ui.corpus.tab.connectionsN', errors: 'ui.corpus.tab.errorsN' };

export class RunTabs {
  /** doc: the document (#run-tabs, #tab-*, #pane-report, #pane-table); win: the window (its URL); corpus: the corpus API client; tables: the RunTables. */
  constructor(doc, win, { i18n, corpus, tables }) {
    this.i18n = i18n;
    this.doc = doc;
    this.win = win;
    this.corpus = corpus;
    this.tables = tables;
    this.run = null; // the run shown
    this.tab = 'report';
    this.report = new ReportView(doc.getElementById('pane-report'), { i18n: this.i18n });
    for (const tab of TABS) doc.getElementById(`tab-${tab}`).addEventListener('click', () => this.setTab(tab));
  }

  /** Another run is opened: its tables start from their first page, unfiltered, and the report is another. */
  forget() {
    this.tables.reset();
    this.report.clear();
  }

  /** Another language: the report and the table's headers and filters come again in it. */
  relabel() {
    if (this.run && this.run.state === 'done') this.setTab(this.tab);
  }

  /** Show a run (null: none): a finished one's tabs, at `tab`. */
  show(run, tab) {
    const $ = (id) => this.doc.getElementById(id);
    this.run = run;
    if (!run) {
      this.setUrl({});
      return;
    }
    const done = run.state === 'done';
    $('run-tabs').hidden = !done;
    $('pane-report').hidden = true;
    $('pane-table').hidden = true;
    if (done) {
      const s = run.summary || {};
      const counts = { events: s.events, connections: s.connections, errors: s.errors };
      for (const name of TABLES) tr($(`tab-${name}`), this.i18n.message(TAB_IDS[name], { n: formatCount(Number(counts[name] || 0)) }));
      this.setTab(TABS.includes(tab) ? tab : 'report');
    } else {
      this.setUrl({ run: run.id });
    }
  }

  setTab(tab) {
    const $ = (id) => this.doc.getElementById(id);
    const run = this.run;
    this.tab = tab;
    for (const t of TABS) {
      const on = t === tab;
      $(`tab-${t}`).setAttribute('aria-selected', on ? 'true' : 'false');
      $(`tab-${t}`).classList.toggle('on', on);
    }
    if (!run || run.state !== 'done') return;
    this.setUrl({ run: run.id, tab });
    $('pane-report').hidden = tab !== 'report';
    $('pane-table').hidden = tab === 'report';
    if (tab === 'report') {
      this.report.show(this.corpus.reportUrl(run.id));
      return;
    }
    this.tables.show(run, tab);
  }

  setUrl(params) {
    const win = this.win;
    const url = new win.URL(win.location.href);
    url.search = '';
    for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
    win.history.replaceState(null, '', url.pathname + url.search);
  }
}
