// The playground's Paste hex tab: a hex dump decoded by the server into the paste Dataset.

import { interleaveBySegments } from '../../core/hexparse.js';
import { PasteView } from '../../views/paste.js';

export class PastePanel {
  /** data: the paste's Dataset. page: { api, status(text, kind), reset(data), redraw(), select(index) }. */
  constructor(container, data, page) {
    this.i18n = page.i18n;
    this.data = data;
    this.page = page;
    this.view = new PasteView(container, { i18n: this.i18n, onDecode: (parsed) => this.decode(parsed), onInvalid: () => this.clear() });
  }

  async decode(parsed) {
    const { view, page } = this;
    view.setBusy(true);
    view.setError('');
    try {
      const results = await Promise.all(parsed.directions.map((x) => page.api.decode(x.hex)));
      const byDir = {};
      parsed.directions.forEach((x, k) => {
        const events = Array.isArray(results[k] && results[k].events) ? results[k].events : [];
        byDir[x.dir] = events.map((ev) => ({ ...ev, conn: '0', dir: x.dir }));
      });
      const d = this.data;
      page.reset(d);
      d.log.addAll(interleaveBySegments(byDir, parsed.segments));
      page.redraw();
      page.status(this.i18n.tn('ui.paste.decoded', d.log.length));
      // Show the first protocol element, not a note such as "no greeting" that comes before it.
      const first = d.log.events.findIndex((ev) => ev.kind !== 'expert' && ev.kind !== 'gap');
      if (d.log.length) page.select(first >= 0 ? first : 0);
    } catch (err) {
      this.clear();
      view.setError(err.message);
    } finally {
      view.setBusy(false);
    }
  }

  /** Input that does not decode: what an earlier paste decoded must not stay on screen as if it were this. */
  clear() {
    this.page.reset(this.data);
    this.page.status('');
  }
}
