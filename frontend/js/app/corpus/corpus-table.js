// The Corpus page's tables: the events, connections or errors table of a finished run, a page at a time,
// each with its own query (offset and filters), the stale pages dropped.

import { PAGE_SIZE, TABLES } from '../../core/corpus-tables.js';
import { TableView } from '../../views/corpus.js';

const TABLE_ERROR_IDS = { events: 'ui.corpus.tableFailed.events', connections: 'ui.corpus.tableFailed.connections', errors: 'ui.corpus.tableFailed.errors' };
const EMPTY_QUERY = { offset: 0, capture: '', kind: '', dir: '', conn: '' };

export class RunTables {
  /**
   * container: the table's pane; corpus: the corpus API client; gen: the page's generation counter;
   * current(): { run, table } shown now (a page asked for another is dropped).
   */
  constructor(container, { i18n, corpus, gen, current }) {
    this.i18n = i18n;
    this.corpus = corpus;
    this.gen = gen;
    this.current = current;
    this.queries = Object.fromEntries(TABLES.map((name) => [name, { ...EMPTY_QUERY }]));
    this.view = new TableView(container, { i18n: this.i18n, onQuery: (changes) => this.change(changes) });
  }

  /** Every table back to its first page, unfiltered. */
  reset() {
    for (const q of Object.values(this.queries)) Object.assign(q, EMPTY_QUERY);
  }

  /** Show a finished run's table, at its query. */
  show(run, table) {
    this.view.configure(table, run.captures, this.queries[table]);
    this.load();
  }

  change(changes) {
    Object.assign(this.queries[this.current().table], changes);
    this.load();
  }

  async load() {
    const { run, table } = this.current();
    if (!run || !TABLES.includes(table)) return;
    const gen = this.gen.next();
    const q = this.queries[table];
    try {
      const page = await this.corpus.table(run.id, table, { ...q, limit: PAGE_SIZE });
      if (!this.gen.is(gen)) return;
      const names = new Map(run.captures.map((c) => [c.id, c.name]));
      this.view.setPage(table, page, { names });
    } catch (err) {
      if (this.gen.is(gen)) this.view.setError(this.i18n.t(TABLE_ERROR_IDS[table], { error: err.message }));
    }
  }
}
