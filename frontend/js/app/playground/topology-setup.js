// The playground's topology box (issue 19.2): the preset menu from the server, the custom topology
// editor, and its file (Save, Load) and link (Share: the topology in the URL's fragment).

import { messages } from '../../core/i18n.js';
import { checkTopology, parseTopologyFile, topologyFile, topologyFragment, parseTopologyFragment } from '../../core/topology-edit.js';
import { TopologyEditor } from '../../views/topology-editor.js';

// The words of this part, in one place (for the catalogs of issue 21).
const SETUP_IDS = {
  noPresets: ['ui.topoSetup.noPresets'],
  loaded: ['ui.topoSetup.loaded'],
  badFile: ['ui.topoSetup.badFile'],
  fromLink: ['ui.topoSetup.fromLink'],
  badLink: ['ui.topoSetup.badLink'],
  shared: 'ui.topoSetup.shared',
  sharedNoClipboard: 'ui.topoSetup.sharedNoClipboard',
  saved: ['ui.topoSetup.saved'],
  fileName: 'topology.json',
};

export class TopologySetup {
  /**
   * host: the page's host (window, clipboard). container: the box's body.
   * page: { api, status(text, kind), start(request, ui) -> Promise }: start creates the session and shows it.
   */
  constructor(host, container, page) {
    this.i18n = host.i18n;
    this.T = messages(this.i18n, SETUP_IDS); // (its words, read when used: in the language in force)
    this.host = host;
    this.win = host.window;
    this.page = page;
    this.editor = new TopologyEditor(container, {
      i18n: this.i18n,
      onStartPreset: (id, o) => this.start({ preset: id, mode: o.mode, autoplay: o.autoplay }),
      onStart: (topology, o) => this.startTopology(topology, o),
      onSave: (topology) => this.save(topology),
      onLoad: (file) => this.load(file),
      onShare: (topology) => this.share(topology),
    });
    page.api.sessionPresets().then(
      (res) => this.editor.setPresets(res && res.presets),
      (err) => {
        this.editor.setPresets([]);
        page.status(this.T.noPresets({ error: err.message }), 'error');
      },
    );
  }

  async start(request) {
    this.editor.setError('');
    this.editor.setBusy(true);
    try {
      await this.page.start(request);
    } catch (err) {
      this.editor.setError(err.message);
    } finally {
      this.editor.setBusy(false);
    }
  }

  startTopology(topology, { mode, autoplay }) {
    let body;
    try {
      body = checkTopology(this.i18n, topology);
    } catch (err) {
      this.editor.setError(err.message);
      return;
    }
    this.start({ ...body, mode, autoplay });
  }

  save(topology) {
    let text;
    try {
      text = topologyFile(this.i18n, topology);
    } catch (err) {
      this.editor.setError(err.message);
      return;
    }
    const win = this.win;
    const url = win.URL.createObjectURL(new win.Blob([text], { type: 'application/json' }));
    const a = win.document.createElement('a');
    a.href = url;
    a.download = this.T.fileName;
    win.document.body.appendChild(a);
    a.click();
    a.remove();
    win.setTimeout(() => win.URL.revokeObjectURL(url), 1000);
    this.editor.setError('');
    this.editor.setNote(this.T.saved({ name: this.T.fileName }));
  }

  async load(file) {
    try {
      const topology = parseTopologyFile(this.i18n, await file.text());
      this.editor.setTopology(topology);
      this.editor.setError('');
      this.editor.setNote(this.T.loaded({ name: file.name, nodes: topology.nodes.length }));
    } catch (err) {
      // What the editor had stays.
      this.editor.setError(this.T.badFile({ name: file.name, error: err.message }));
    }
  }

  share(topology) {
    let url;
    try {
      const loc = this.win.location;
      url = `${loc.origin}${loc.pathname}${topologyFragment(this.i18n, topology)}`;
    } catch (err) {
      this.editor.setError(err.message);
      return;
    }
    this.editor.setError('');
    this.editor.setShareUrl(url);
    const clipboard = this.host.clipboard;
    if (clipboard && clipboard.writeText) {
      clipboard.writeText(url).then(
        () => this.editor.setNote(this.T.shared),
        () => this.editor.setNote(this.T.sharedNoClipboard),
      );
    } else this.editor.setNote(this.T.sharedNoClipboard);
  }

  /** A shared link's topology (the URL's `#topology=`) into the editor; true when the hash held one. */
  fromHash(hash) {
    try {
      const topology = parseTopologyFragment(this.i18n, hash);
      if (!topology) return false;
      this.editor.setTopology(topology);
      this.editor.setNote(this.T.fromLink({ nodes: topology.nodes.length }));
      return true;
    } catch (err) {
      this.editor.setError(this.T.badLink({ error: err.message }));
      return true;
    }
  }
}
