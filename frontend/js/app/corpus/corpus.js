// The Corpus page (corpus.html): pick uploaded captures (or upload more), start
// a Spark pipeline run over them, watch its progress, cancel it, then browse
// its report and its events / connections / errors tables a page at a time.
// host = { i18n, document, window, fetch, XMLHttpRequest, EventSource, FormData }
//
// The page is a few parts with one job each: the captures (corpus-captures.js), the runs list and the
// run opened with its progress (corpus-runs.js), a finished run's tabs, report and URL (corpus-tabs.js)
// and its tables (corpus-table.js); here they are wired, with the language change and the start.
//
// URL: corpus.html?run=<id>&tab=report|events|connections|errors

import { createApi } from '../../core/api.js';
import { createCorpusApi } from '../../core/corpus-api.js';
import { initShell, statusLine } from '../shared/workbench.js';
import { createCaptureSearchApi } from '../../core/capture-search.js';
import { CaptureShelf } from './corpus-captures.js';
import { RunsPanel } from './corpus-runs.js';
import { RunTabs } from './corpus-tabs.js';
import { RunTables } from './corpus-table.js';

export function startCorpus(host) {
  const { i18n } = host;
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createApi(host);
  const corpus = createCorpusApi(host);
  const searchApi = createCaptureSearchApi(host);
  const status = statusLine(doc);
  initShell(host, () => {});

  // Bumps when another run or page is asked for; stale replies are dropped.
  const gen = {
    n: 0,
    next() {
      return ++this.n;
    },
    is(g) {
      return g === this.n;
    },
  };

  const shelf = new CaptureShelf($('picker'), { i18n, api, corpus, searchApi, onStart: (ids) => runs.start(ids) });
  const tables = new RunTables($('pane-table'), { i18n, corpus, gen, current: () => ({ run: tabs.run, table: tabs.tab }) });
  const tabs = new RunTabs(doc, win, { i18n, corpus, tables });
  const runs = new RunsPanel(doc, { i18n, corpus, status, picker: shelf.picker, tabs, gen });
  // Whether this server can run Spark at all (pyspark, Java): said before anyone ticks a capture, with what
  // to install (in the page's language); a start could only fail.
  async function checkSpark() {
    let answer;
    try {
      answer = await corpus.status();
    } catch {
      return; // (a start says what is wrong then)
    }
    shelf.picker.setUnavailable(answer.available ? null : i18n.t('ui.corpus.unavailable', { problem: answer.problem }));
  }

  // Another language: the run's head and the table's headers and filters are words (the rest relabels).
  i18n.onChange(() => {
    runs.relabel();
    tabs.relabel(); // (the report, too, comes in the new language)
    checkSpark();
  });

  async function init() {
    const params = new win.URL(win.location.href).searchParams;
    await Promise.all([shelf.load(), runs.load(), checkSpark()]);
    const id = params.get('run');
    if (id) await runs.open(id, params.get('tab') || 'report');
    else runs.show(null);
  }

  init();
}
