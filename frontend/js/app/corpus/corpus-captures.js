// The Corpus page's captures: this client's uploads in the picker (which ones are ticked), uploading
// more and deleting one. Starting a run over the ticked ones is the page's (corpus.js).

import { CapturePicker } from '../../views/corpus.js';

export class CaptureShelf {
  /**
   * api: the page's API client (uploads); corpus: the corpus API client (the list); searchApi: deletes.
   * onStart(ids): start a run over these captures.
   */
  constructor(container, { i18n, api, corpus, searchApi, onStart }) {
    this.i18n = i18n;
    this.api = api;
    this.corpus = corpus;
    this.searchApi = searchApi;
    this.captures = [];
    this.checked = new Set();
    this.picker = new CapturePicker(container, { i18n: this.i18n, onUpload: (files) => this.upload(files), onStart, onDelete: (id, name) => this.delete(id, name) });
  }

  async load() {
    const { picker } = this;
    try {
      this.captures = (await this.corpus.captures()).captures;
    } catch (err) {
      picker.setNote(this.i18n.t('ui.shelf.listFailed', { error: err.message }), 'error');
      return;
    }
    const ids = new Set(this.captures.map((c) => c.id));
    this.checked = new Set([...this.checked].filter((id) => ids.has(id)));
    picker.setCaptures(this.captures, this.checked);
  }

  /** Deletes an upload from the server (a client may keep only so many). Runs that took it keep their tables. */
  async delete(id, name) {
    try {
      await this.searchApi.deleteCapture(id);
    } catch (err) {
      if (err.status !== 404) {
        this.picker.setNote(this.i18n.t('ui.shelf.deleteFailed', { name, error: err.message }), 'error');
        return;
      }
    }
    this.checked.delete(id);
    this.picker.setNote(this.i18n.t('ui.shelf.deleted', { name }));
    await this.load();
  }

  async upload(files) {
    const { picker } = this;
    this.checked = new Set(picker.selected());
    for (const [i, file] of files.entries()) {
      const which = files.length > 1 ? this.i18n.t('ui.shelf.which', { i: i + 1, n: files.length }) : '';
      picker.setNote(this.i18n.t('ui.shelf.uploading', { name: file.name, which }));
      try {
        const { promise } = this.api.uploadCapture(file, (loaded, total) => {
          const pct = total ? Math.round((100 * loaded) / total) : 0;
          picker.setNote(this.i18n.t('ui.shelf.uploadingPct', { name: file.name, which, pct }));
        });
        const res = await promise;
        this.checked.add(String(res.id));
      } catch (err) {
        picker.setNote(this.i18n.t('ui.shelf.notStored', { name: file.name, error: err.message }), 'error');
        await this.load();
        return;
      }
    }
    picker.setNote(files.length > 1 ? this.i18n.t('ui.shelf.uploadedN', { n: files.length }) : this.i18n.t('ui.shelf.uploaded', { name: files[0].name }));
    await this.load();
  }
}
