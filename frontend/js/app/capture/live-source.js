// The Live tab's source: the form that starts a live capture or a tap proxy, the server's source, its
// websocket into the LiveModel, its status and stopping it. What is shown of the model is live.js's.

import { openLive, liveRequest, statusText } from '../../core/live.js';
import { LivePanel } from '../../views/live.js';

export class LiveSource {
  /**
   * host: { i18n, document, window, WebSocket }; model: the LiveModel the socket fills.
   * page: { api, status(text, kind), reset() (a new source: show nothing yet), started() (its socket is open),
   *         changed() (new data), statusSeen(status), onUrl() }
   */
  constructor(host, model, page) {
    this.i18n = host.i18n;
    this.host = host;
    this.model = model;
    this.page = page;
    this.id = null; // the live source
    this.socket = null;
    this.lastStatus = null;
    this.interfacesLoaded = false;
    this.panel = new LivePanel(host.document.getElementById('live'), { i18n: this.i18n, onStart: (form) => this.start(form), onStop: () => this.stop() });
    this.listen = null;
    // Another language: follow the source again in it (the server sends its recent events again, their notes and
    // texts in the new language), as the playground's session socket does.
    this.i18n.onChange(() => {
      if (this.id && this.socket) this.attach(this.id, this.listen);
    });
  }

  async loadInterfaces() {
    if (this.interfacesLoaded) return;
    try {
      const res = await this.page.api.liveInterfaces();
      this.panel.setInterfaces(res && Array.isArray(res.interfaces) ? res.interfaces : []);
      this.interfacesLoaded = true;
    } catch (err) {
      this.panel.setError(this.i18n.t('ui.live.ifacesFailed', { error: err.message }));
    }
  }

  async start(form) {
    const { panel } = this;
    const body = liveRequest(this.i18n, form);
    if (body.error) {
      panel.setError(body.error);
      return;
    }
    panel.setError('');
    panel.setBusy(true);
    panel.setStatus(null, this.i18n.t(body.source === 'capture' ? 'ui.live.startingTshark' : 'ui.live.startingProxy'));
    try {
      if (this.id) await this.stop();
      const res = await this.page.api.createLive(body);
      this.attach(String(res.id), res.listen || null);
    } catch (err) {
      panel.setStatus(null, this.i18n.t('ui.live.notStartedLower'));
      panel.setError(err.message);
    } finally {
      panel.setBusy(false);
    }
  }

  /** Follow a live source (new, or from a link: the server sends its recent history first). */
  attach(id, listen = null) {
    const { panel, model, page } = this;
    if (this.socket) this.socket.close();
    this.id = id;
    this.listen = listen;
    this.lastStatus = null;
    model.clear();
    page.reset();
    panel.setRunning(true);
    panel.setListen(listen);
    page.onUrl();
    const socket = openLive({
      i18n: this.i18n,
      WebSocket: this.host.WebSocket,
      url: page.api.liveSocketUrl(this.host.window.location, id),
      onConnection: (msg) => {
        if (this.socket !== socket) return;
        model.addConnection(msg);
        page.changed();
      },
      onEvent: (ev) => {
        if (this.socket !== socket) return;
        model.add(ev);
        page.changed();
      },
      onStatus: (s) => {
        if (this.socket !== socket) return;
        if (!this.lastStatus) panel.setSource(s.source);
        this.lastStatus = s;
        panel.setStatus(s, statusText(this.i18n, s));
        if (s.source && s.source.listen) {
          panel.setListen(s.source.listen);
          this.listen = s.source.listen;
        }
        page.statusSeen(s);
        if (s.state === 'stopped' || s.state === 'error') {
          panel.setRunning(false);
          panel.setListen(null);
        }
      },
      onError: (text) => {
        if (this.socket === socket) panel.setError(text);
      },
      onClose: (code) => {
        if (this.socket !== socket) return;
        this.socket = null;
        panel.setRunning(false);
        const s = this.lastStatus;
        if (!s || (s.state !== 'stopped' && s.state !== 'error')) {
          panel.setStatus(s, code && code !== 1000 ? this.i18n.t('ui.live.disconnectedCode', { code }) : this.i18n.t('ui.live.disconnected'));
        }
      },
    });
    this.socket = socket;
    page.started();
  }

  async stop() {
    const id = this.id;
    if (!id) return;
    try {
      await this.page.api.stopLive(id);
    } catch (err) {
      if (err.status !== 404) this.page.status(this.i18n.t('ui.live.stopFailed', { error: err.message }), 'error');
    }
    this.panel.setRunning(false);
    this.panel.setListen(null);
  }
}
