// The Corpus page (corpus.html): pick uploaded captures (or upload more), start
// a Spark pipeline run over them, watch its progress, cancel it, then browse
// its report and its events / connections / errors tables a page at a time.
// host = { document, window, fetch, XMLHttpRequest, EventSource, FormData }
//
// URL: corpus.html?run=<id>&tab=report|events|connections|errors

import { createApi } from '../core/api.js';
import { createCorpusApi, FINAL_STATES } from '../core/corpus-api.js';
import { PAGE_SIZE, TABLES } from '../core/corpus-tables.js';
import { RunList, RunHead, ReportView, TableView } from '../views/corpus.js';
import { initShell, statusLine } from './workbench.js';
import { createCaptureSearchApi } from '../core/capture-search.js';
import { CaptureShelf } from './corpus-captures.js';
import { i18n, t } from '../core/i18n.js';
import { formatCount } from '../core/bytes.js';
import { tr } from '../views/dom.js';

const TABS = ['report', ...TABLES];
const TAB_IDS = { events: 'ui.corpus.tab.eventsN', connections: 'ui.corpus.tab.connectionsN', errors: 'ui.corpus.tab.errorsN' };
const TABLE_ERROR_IDS = { events: 'ui.corpus.tableFailed.events', connections: 'ui.corpus.tableFailed.connections', errors: 'ui.corpus.tableFailed.errors' };
const EMPTY_QUERY = { offset: 0, capture: '', kind: '', dir: '', conn: '' };

export function startCorpus(host) {
  const doc = host.document;
  const win = host.window;
  const $ = (id) => doc.getElementById(id);
  const api = createApi(host);
  const corpus = createCorpusApi(host);
  const searchApi = createCaptureSearchApi(host);
  const status = statusLine(doc);
  initShell(host, () => {});

  const st = {
    runs: [],
    run: null, // the open run
    tab: 'report',
    queries: Object.fromEntries(TABLES.map((t) => [t, { ...EMPTY_QUERY }])),
    gen: 0, // bumps when another run or page is asked for; stale replies are dropped
  };
  let stopProgress = null;

  const shelf = new CaptureShelf($('picker'), { api, corpus, searchApi, onStart: (ids) => startRun(ids) });
  const { picker } = shelf;
  const runList = new RunList($('runs'), { onOpen: (id) => openRun(id) });
  const head = new RunHead($('run-head'), { onCancel: () => cancelRun(), onDelete: () => deleteRun() });
  const report = new ReportView($('pane-report'));
  const tableView = new TableView($('pane-table'), { onQuery: (changes) => changeQuery(changes) });
  // Another language: the run's head and the table's headers and filters are words (the rest relabels).
  i18n.onChange(() => {
    if (st.run) head.setRun(st.run);
    if (st.run && st.run.state === 'done') setTab(st.tab); // (the report, too, comes in the new language)
    runList.setRuns(st.runs, st.run && st.run.id);
  });
  for (const tab of TABS) $(`tab-${tab}`).addEventListener('click', () => setTab(tab));

  // ---- runs (the captures are the shelf's: corpus-captures.js) ---------------------

  async function loadRuns() {
    try {
      st.runs = (await corpus.runs()).runs;
    } catch (err) {
      status(t('ui.corpus.listRunsFailed', { error: err.message }), 'error');
      return;
    }
    runList.setRuns(st.runs, st.run && st.run.id);
    picker.setBusy(st.runs.some((r) => r.state === 'running'));
  }

  async function startRun(ids) {
    if (!ids.length) return;
    picker.setBusy(true);
    let res;
    try {
      res = await corpus.startRun(ids);
    } catch (err) {
      picker.setNote(t('ui.corpus.startFailed', { error: err.message }), 'error');
      picker.setBusy(false);
      return;
    }
    picker.setNote('');
    for (const q of Object.values(st.queries)) Object.assign(q, EMPTY_QUERY);
    await openRun(res.id, 'report');
    await loadRuns();
  }

  async function openRun(id, tab) {
    if (stopProgress) stopProgress();
    stopProgress = null;
    const gen = ++st.gen;
    let run;
    try {
      run = await corpus.run(id);
    } catch (err) {
      if (gen !== st.gen) return;
      status(err.status === 404 ? t('ui.corpus.runGone') : t('ui.corpus.openFailed', { error: err.message }), 'error');
      showRun(null);
      return;
    }
    if (gen !== st.gen) return;
    if (!st.run || st.run.id !== run.id) {
      for (const q of Object.values(st.queries)) Object.assign(q, EMPTY_QUERY);
      report.clear();
    }
    showRun(run, tab || st.tab);
    if (run.state === 'running') follow(run.id, gen);
  }

  /** Follows a running run's progress stream (polling when the stream breaks) until it ends. */
  function follow(id, gen) {
    const onMessage = (msg) => {
      if (gen !== st.gen) return;
      head.setProgress(msg);
      if (FINAL_STATES.includes(msg.state)) finished(id, gen);
    };
    stopProgress = corpus.followProgress(id, onMessage, () => poll(id, gen, onMessage));
  }

  async function poll(id, gen, onMessage) {
    while (gen === st.gen) {
      try {
        const run = await corpus.run(id);
        onMessage(run);
        if (FINAL_STATES.includes(run.state)) return;
      } catch (err) {
        status(t('ui.corpus.progressLost', { error: err.message }), 'error');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  async function finished(id, gen) {
    try {
      const run = await corpus.run(id);
      if (gen === st.gen) showRun(run, st.tab);
    } catch {
      // deleted meanwhile: the list below says so
    }
    await loadRuns();
  }

  function showRun(run, tab = st.tab) {
    st.run = run;
    runList.setRuns(st.runs, run && run.id);
    $('empty').hidden = !!run;
    $('run-section').hidden = !run;
    if (!run) {
      setUrl({});
      return;
    }
    head.setRun(run);
    const done = run.state === 'done';
    $('run-tabs').hidden = !done;
    $('pane-report').hidden = true;
    $('pane-table').hidden = true;
    if (done) {
      const s = run.summary || {};
      const counts = { events: s.events, connections: s.connections, errors: s.errors };
      for (const name of TABLES) tr($(`tab-${name}`), [TAB_IDS[name], { n: formatCount(Number(counts[name] || 0)) }]);
      setTab(TABS.includes(tab) ? tab : 'report');
    } else {
      setUrl({ run: run.id });
    }
  }

  async function cancelRun() {
    if (!st.run) return;
    try {
      head.setProgress(await corpus.cancelRun(st.run.id));
    } catch (err) {
      status(t('ui.corpus.cancelFailed', { error: err.message }), 'error');
    }
  }

  async function deleteRun() {
    if (!st.run) return;
    const id = st.run.id;
    if (stopProgress) stopProgress();
    st.gen++;
    try {
      await corpus.deleteRun(id);
    } catch (err) {
      if (err.status !== 404) {
        status(t('ui.corpus.deleteFailed', { error: err.message }), 'error');
        return;
      }
    }
    showRun(null);
    status(t('ui.corpus.deleted'));
    await loadRuns();
  }

  // ---- report and tables -----------------------------------------------------------

  function setTab(tab) {
    st.tab = tab;
    for (const t of TABS) {
      const on = t === tab;
      $(`tab-${t}`).setAttribute('aria-selected', on ? 'true' : 'false');
      $(`tab-${t}`).classList.toggle('on', on);
    }
    if (!st.run || st.run.state !== 'done') return;
    setUrl({ run: st.run.id, tab });
    $('pane-report').hidden = tab !== 'report';
    $('pane-table').hidden = tab === 'report';
    if (tab === 'report') {
      report.show(corpus.reportUrl(st.run.id));
      return;
    }
    tableView.configure(tab, st.run.captures, st.queries[tab]);
    loadPage();
  }

  function changeQuery(changes) {
    Object.assign(st.queries[st.tab], changes);
    loadPage();
  }

  async function loadPage() {
    const run = st.run;
    const table = st.tab;
    if (!run || !TABLES.includes(table)) return;
    const gen = ++st.gen;
    const q = st.queries[table];
    try {
      const page = await corpus.table(run.id, table, { ...q, limit: PAGE_SIZE });
      if (gen !== st.gen) return;
      const names = new Map(run.captures.map((c) => [c.id, c.name]));
      tableView.setPage(table, page, { names });
    } catch (err) {
      if (gen === st.gen) tableView.setError(t(TABLE_ERROR_IDS[table], { error: err.message }));
    }
  }

  // ---- URL ---------------------------------------------------------------------------

  function setUrl(params) {
    const url = new win.URL(win.location.href);
    url.search = '';
    for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
    win.history.replaceState(null, '', url.pathname + url.search);
  }

  async function init() {
    const params = new win.URL(win.location.href).searchParams;
    await Promise.all([shelf.load(), loadRuns()]);
    const id = params.get('run');
    if (id) await openRun(id, params.get('tab') || 'report');
    else showRun(null);
  }

  init();
}
