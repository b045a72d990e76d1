// The capture viewer's file: which capture is open, and getting it there: uploading one, opening one by
// id, following its dissection (the progress stream, else polling), this client's list of captures and
// deleting one. What a loaded capture shows is the page's (capture.js).

import { UploadView, CaptureListView } from '../../views/capture.js';

/** The banner and notice text while a capture is still being dissected. */
export function dissectingText(i18n, percent) {
  return i18n.t('ui.capture.dissecting', { pct: Math.round(Number(percent) || 0) });
}

const IDLE_WAIT = 10_000; // ms a delete waits for the page's requests in flight

const hasConnections = (s) => Array.isArray(s.connections) && s.connections.length > 0;

export class CaptureFile {
  /**
   * page: { api, searchApi, status(text, kind), setUrl(params), show(summary, link): a summary to show,
   *         shownLink(): what the user looks at now, as a link, closed(id): the open capture leaves the page (deleted) }
   */
  constructor(doc, page) {
    this.i18n = page.i18n;
    this.$ = (id) => doc.getElementById(id);
    this.page = page;
    this.id = null;
    this.summary = null;
    this.stopProgress = null;
    this.upload = new UploadView(this.$('upload'), { i18n: this.i18n, onFile: (f) => this.uploadFile(f) });
    this.list = new CaptureListView(this.$('my-captures'), { i18n: this.i18n, onOpen: (id) => this.open(id), onDelete: (id, name) => this.delete(id, name) });
  }

  /** Stops following a dissection (another capture, or the live tab, takes the page). */
  stopFollowing() {
    if (this.stopProgress) this.stopProgress();
  }

  /** The upload zone and this client's captures under it, or the capture shown. */
  showUpload(on) {
    this.$('upload-section').hidden = !on;
    this.$('open-another').hidden = on || !this.id;
    if (on) this.refreshList();
  }

  /** The list of this client's captures (under the upload zone). */
  async refreshList() {
    try {
      const res = await this.page.searchApi.myCaptures();
      this.list.setCaptures(Array.isArray(res?.captures) ? res.captures : [], this.id);
    } catch (err) {
      this.list.setCaptures([]);
      this.page.status(this.i18n.t('ui.capture.listFailed', { error: err.message }), 'error');
    }
  }

  /**
   * Deletes a capture from the server. The open one leaves the page first and the DELETE waits for the page's
   * requests in flight (up to IDLE_WAIT ms): one answered after it would be a 404 to a page still reading the
   * capture. If the server keeps it, it opens again.
   */
  async delete(id, name) {
    const { page } = this;
    const open = this.id === id;
    if (open) {
      this.close(id);
      page.status(this.i18n.t('ui.capture.deleting', { name }));
    }
    try {
      if (open) await Promise.all([page.api.idle(IDLE_WAIT), page.searchApi.idle(IDLE_WAIT)]);
      await page.searchApi.deleteCapture(id);
    } catch (err) {
      if (err.status !== 404) {
        page.status(this.i18n.t('ui.capture.deleteFailed', { name, error: err.message }), 'error');
        if (open && this.id === null) this.open(id); // (unless another capture took the page meanwhile)
        return;
      }
    }
    page.status(this.i18n.t('ui.capture.deleted', { name }));
    if (open && this.id === null) this.showUpload(true);
    else this.refreshList();
  }

  /** The open capture leaves the page: its progress stream and lists end, and the URL no longer names it. */
  close(id) {
    this.stopFollowing();
    this.page.closed(id);
    this.id = null;
    this.summary = null;
    this.$('capture-section').hidden = true;
    this.upload.reset();
    this.page.setUrl({});
  }

  async uploadFile(file) {
    const { upload } = this;
    upload.reset();
    upload.setUpload(0, file.size);
    try {
      const { promise } = this.page.api.uploadCapture(file, (loaded, total) => upload.setUpload(loaded, total));
      const res = await promise;
      await this.open(String(res.id));
    } catch (err) {
      upload.setError(this.i18n.t('ui.capture.uploadFailed', { error: err.message }));
    }
  }

  async open(id, link = {}) {
    const { page, upload } = this;
    this.stopFollowing();
    this.id = id;
    this.summary = null;
    page.setUrl({ id });
    let summary;
    try {
      summary = await page.api.capture(id);
    } catch (err) {
      this.showUpload(true);
      upload.setError(err.status === 404 ? this.i18n.t('ui.capture.noSuch', { id }) : this.i18n.t('ui.capture.loadFailed', { id, error: err.message }));
      return;
    }
    if (summary.state === 'done' || summary.state === 'error') {
      page.show(summary, link);
      return;
    }
    this.follow(id, summary, link);
  }

  /**
   * Follows a dissection under way through the progress stream. The server serves a big capture's first
   * elements while it dissects the rest: show them as soon as the summary has connections, everything when done.
   */
  follow(id, summary, link) {
    const { page, upload } = this;
    let early = hasConnections(summary);
    if (early) page.show(summary, link);
    else {
      this.showUpload(true);
      upload.setDissect(0, 'dissecting', summary.name || '');
    }
    let asking = false;
    const tryEarly = async () => {
      if (early || asking) return;
      asking = true;
      try {
        const s = await page.api.capture(id);
        if (this.id === id && !early && s.state === 'dissecting' && hasConnections(s)) {
          early = true;
          page.show(s, link);
        }
      } catch {
        // the progress stream reports what went wrong
      } finally {
        asking = false;
      }
    };
    const finish = async () => {
      try {
        const s = await page.api.capture(id);
        if (this.id !== id) return;
        // Keep what the user is looking at in the first elements (their indexes do not change).
        page.show(s, early ? page.shownLink() : link);
      } catch (err) {
        if (early) page.status(err.message, 'error');
        else upload.setError(err.message);
      }
    };
    const onProgress = (msg) => {
      upload.setDissect(msg.percent, msg.state, msg.detail);
      const notice = this.$('dissect-notice');
      if (notice) notice.textContent = dissectingText(this.i18n, msg.percent);
      if (msg.state === 'done' || msg.state === 'error') finish();
      else tryEarly();
    };
    this.stopProgress = page.api.captureProgress(id, onProgress, () => this.poll(id, onProgress));
  }

  /** Without the progress stream: ask for the summary every second until the dissection ends. */
  async poll(id, onProgress) {
    while (this.id === id) {
      let summary;
      try {
        summary = await this.page.api.capture(id);
      } catch (err) {
        this.upload.setError(this.i18n.t('ui.capture.followFailed', { error: err.message }));
        return;
      }
      onProgress({ state: summary.state, percent: summary.percent, detail: '' });
      if (summary.state === 'done' || summary.state === 'error') return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
