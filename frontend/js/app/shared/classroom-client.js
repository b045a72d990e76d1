// The lessons page's presenter mode: a teacher's class or a student's seat in one, over the class
// websocket (lessons/classroom.js), with reconnects. The lesson player around it is `page`.

import { tr } from '../../views/dom.js';
import { frameQueue } from '../../core/frames.js';
import { openClassSocket, authMessage, createFollower, createBroadcaster, normalizeCode, FINAL_CLOSE } from '../../lessons/classroom.js';
import { ClassBar } from '../../lessons/views.js';

// The teacher's token lives in this tab's sessionStorage (a reload resumes the class) and goes to the
// server only as the socket's first message: never in a URL, where logs and history would keep it.
const TOKEN_KEY = 'zmtplab.class.';
const SEAT_KEY = 'zmtplab.seat';
// The pages a class is held on: a teacher (or a student) moving between them takes the class along.
const CLASS_PAGES = new Set(['lessons.html', 'index.html']);

export class ClassroomClient {
  /**
   * host: { i18n, document, window, WebSocket, sessionStorage through window }; api: the lessons API client.
   * page: { status(text, kind), teacherState() -> state | null (null: nothing to show the class),
   *         follow(state) -> Promise (show the teacher's state), hasLesson(), hintOpenLesson(), urlChanged(),
   *         showList() (the lesson list, for this page's own link in the header),
   *         answers(msg, teacher) (the class's answers to a question: the socket's `answers` message) }
   */
  constructor(host, api, page) {
    this.host = host;
    this.i18n = host.i18n;
    this.win = host.window;
    this.api = api;
    this.page = page;
    this.storage = sessionStore(host.window);
    this.role = null; // null | 'teacher' | 'student'
    this.classCode = null;
    this.socket = null;
    this.follower = null;
    this.retry = null;
    this.retryDelay = 1000;
    this.counts = { count: 0, following: 0 };
    this.applyChain = Promise.resolve();
    this.bar = new ClassBar(host.document.getElementById('class-bar'), {
      i18n: host.i18n,
      onPresent: () => this.present(),
      onEnd: () => this.endClass(),
      onJoin: (code) => this.join(code),
      onFollow: () => this.follower && this.follower.follow(),
      onLeave: () => this.leave(),
    });
    this.broadcaster = createBroadcaster((state) => this.socket && this.socket.send(state), frameQueue(host.window).schedule);
    // (the state goes once a frame, in the page's one frame, after the views it describes: core/frames.js)
    this.navLinks = [...host.document.querySelectorAll('header.topbar a[href]')];
    for (const a of this.navLinks) {
      a.addEventListener('click', (ev) => {
        // This page's own link, in a class: back to the lesson list here (a load would leave the class).
        if (this.role && a.getAttribute('aria-current') === 'page' && !ev.ctrlKey && !ev.metaKey && !ev.shiftKey) {
          ev.preventDefault();
          page.showList();
        }
      });
    }
  }

  /**
   * The header's links while in a class: none may leave it without a word (students would see the teacher away,
   * and the class end after two minutes). This page's own link shows the lesson list; the other pages open in a
   * new tab, and say so. Out of a class they are plain links again.
   */
  guardNav() {
    for (const a of this.navLinks) {
      if (!a.dataset.href) a.dataset.href = a.getAttribute('href');
      const plain = a.dataset.href;
      const own = a.getAttribute('aria-current') === 'page';
      // The class's pages (the lessons, the playground) take the class along, in this tab: the teacher shows the
      // class another page (a reload's moment away); the others open in a new tab, and say so.
      const classPage = CLASS_PAGES.has(plain.replace(/[?#].*$/, ''));
      const param = this.role === 'teacher' ? 'present' : 'join';
      if (this.role && classPage && !own) {
        a.setAttribute('href', `${plain}?${param}=${encodeURIComponent(this.classCode)}`);
        a.removeAttribute('target');
        tr(a, this.i18n.message('ui.class.takeAlong'), 'title');
      } else if (this.role && !own) {
        a.setAttribute('href', plain);
        a.target = '_blank';
        a.rel = 'noopener';
        tr(a, this.i18n.message('ui.class.newTab'), 'title');
      } else {
        a.setAttribute('href', plain);
        a.removeAttribute('target');
        a.removeAttribute('rel');
        a.removeAttribute('title');
        a.removeAttribute('data-i18n-title');
      }
    }
  }

  /** A teacher's page shows the class what it now shows. */
  broadcast() {
    if (this.role !== 'teacher' || !this.socket) return;
    const state = this.page.teacherState();
    if (state) this.broadcaster.push(state);
  }

  /** A student's answer to a step's question goes to the class too (counted once per seat: this tab's id). */
  answer(lesson, step, given, lang) {
    if (this.role !== 'student' || !this.socket) return;
    this.socket.send({ type: 'answer', lesson, step, seat: this.seat(), lang, answer: given });
  }

  /** The teacher shows a question's answers to the class. */
  reveal(lesson, step) {
    if (this.role === 'teacher' && this.socket) this.socket.send({ type: 'reveal', lesson, step });
  }

  /** This tab's seat: a random id its reconnects and reloads keep (the class counts one answer per seat). */
  seat() {
    let seat = this.storage.get(SEAT_KEY);
    if (!seat) {
      const bytes = new Uint8Array(12);
      (this.win.crypto || globalThis.crypto).getRandomValues(bytes);
      seat = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
      this.storage.set(SEAT_KEY, seat);
    }
    return seat;
  }

  /** A student who navigates or selects on their own stops following the teacher. */
  wander() {
    if (this.role === 'student' && this.follower) this.follower.wander();
  }

  /** A student's selection of another element than the one shown: wandering too. */
  wanderTo(index, shown) {
    if (this.role === 'student' && this.follower && index !== shown) this.follower.wander();
  }

  /** The class the URL names: ?join=CODE, or ?present=CODE with this tab's token. */
  resume(link) {
    if (link.join) this.join(link.join);
    else if (link.present) {
      const code = normalizeCode(link.present);
      const token = this.storage.get(TOKEN_KEY + code);
      if (token) this.connectTeacher(code, token);
    }
  }

  closeSocket() {
    clearTimeout(this.retry);
    this.retry = null;
    if (this.socket) this.socket.close();
    this.socket = null;
  }

  teacherBar(connected) {
    const loc = this.win.location;
    const joinUrl = `${loc.origin || ''}${loc.pathname}?join=${this.classCode}`;
    this.bar.teacher({ code: this.classCode, joinUrl, count: this.counts.count, following: this.counts.following, connected });
    this.guardNav();
  }

  async present() {
    try {
      const made = await this.api.createClass();
      this.storage.set(TOKEN_KEY + made.code, made.teacher_token);
      this.connectTeacher(made.code, made.teacher_token);
      this.page.hintOpenLesson();
    } catch (err) {
      this.bar.idle(this.i18n.t('ui.class.startFailed', { error: err.message }));
    }
  }

  connectTeacher(code, token) {
    this.closeSocket();
    this.role = 'teacher';
    this.classCode = code;
    this.teacherBar(false);
    this.page.urlChanged();
    this.socket = openClassSocket({
      WebSocket: this.host.WebSocket,
      url: this.api.classSocketUrl(this.win.location, code, 'teacher'),
      first: authMessage(token),
      onOpen: () => {
        // Live only once the server's hello says the token was taken; what is sent meanwhile follows the auth.
        this.broadcaster.reset();
        this.broadcast();
      },
      onMessage: (msg) => {
        if (msg.type === 'hello' || msg.type === 'students') {
          if (msg.type === 'hello') this.retryDelay = 1000;
          this.counts.count = msg.count || 0;
          this.counts.following = msg.following || 0;
          this.teacherBar(true);
        } else if (msg.type === 'ended') {
          this.finish(this.i18n.t('ui.class.endedWhy', { reason: msg.reason || '' }));
        } else if (msg.type === 'answers') this.page.answers(msg, true);
        else if (msg.type === 'error') this.page.status(msg.detail || this.i18n.t('ui.severity.error'), 'error');
      },
      onClose: (closeCode, reason, mine) => {
        if (mine || this.role !== 'teacher') return;
        if (FINAL_CLOSE.has(closeCode)) this.finish(closeCode === 1000 ? this.i18n.t('ui.class.ended') : this.i18n.t('ui.class.closed', { reason: reason || closeCode }));
        else this.reconnect(() => this.connectTeacher(code, token));
      },
    });
  }

  endClass() {
    if (this.socket) this.socket.send({ type: 'end' });
    this.finish(this.i18n.t('ui.class.youEnded'));
  }

  join(text) {
    const code = normalizeCode(text);
    if (code.length < 4) return this.bar.idle(this.i18n.t('ui.class.typeCode'));
    this.api.classInfo(code).then(
      () => this.connectStudent(code),
      (err) => this.bar.idle(err.status === 404 ? this.i18n.t('ui.class.noClass', { code }) : err.message),
    );
  }

  connectStudent(code) {
    this.closeSocket();
    this.role = 'student';
    this.classCode = code;
    let teacherPresent = true;
    let connected = false;
    const render = () => this.bar.student({ code, following: this.follower.following, teacherPresent, connected });
    const previous = this.follower;
    this.follower = createFollower({
      apply: (state) => this.applyTeacher(state),
      changed: (following) => {
        if (this.socket) this.socket.send({ type: 'status', following });
        render();
      },
    });
    if (previous && !previous.following) this.follower.wander();
    render();
    this.guardNav();
    this.page.urlChanged();
    this.socket = openClassSocket({
      WebSocket: this.host.WebSocket,
      url: this.api.classSocketUrl(this.win.location, code, 'student'),
      onOpen: () => {
        this.retryDelay = 1000;
        connected = true;
        if (!this.follower.following) this.socket.send({ type: 'status', following: false });
        render();
      },
      onMessage: (msg) => {
        if (msg.type === 'hello') {
          teacherPresent = !!msg.teacher;
          render();
          if (msg.state) this.follower.receive(msg.state);
          else if (!this.page.hasLesson()) this.page.status(this.i18n.t('ui.class.waiting'));
        } else if (msg.type === 'state') this.follower.receive(msg);
        else if (msg.type === 'teacher') {
          teacherPresent = !!msg.present;
          render();
        } else if (msg.type === 'ended') this.finish(this.i18n.t('ui.class.ended'));
        else if (msg.type === 'answers') this.page.answers(msg, false);
        else if (msg.type === 'error') this.page.status(msg.detail || this.i18n.t('ui.severity.error'), 'error');
      },
      onClose: (closeCode, reason, mine) => {
        if (mine || this.role !== 'student') return;
        connected = false;
        if (FINAL_CLOSE.has(closeCode)) this.finish(closeCode === 1000 ? this.i18n.t('ui.class.ended') : reason || this.i18n.t('ui.class.joinFailed', { code: closeCode }));
        else {
          render();
          this.reconnect(() => this.connectStudent(code));
        }
      },
    });
  }

  /** Shows the teacher's state, one at a time, skipping those a newer one has replaced. */
  applyTeacher(state) {
    this.applyChain = this.applyChain.then(async () => {
      const follower = this.follower;
      if (!follower || !follower.following || follower.latest !== state) return;
      await this.page.follow(state);
    });
    return this.applyChain;
  }

  reconnect(fn) {
    clearTimeout(this.retry);
    this.retry = setTimeout(fn, this.retryDelay);
    this.retryDelay = Math.min(this.retryDelay * 2, 10000);
  }

  leave() {
    this.finish('');
  }

  finish(message) {
    if (this.role === 'teacher' && this.classCode) this.storage.remove(TOKEN_KEY + this.classCode);
    this.closeSocket();
    this.role = null;
    this.classCode = null;
    this.follower = null;
    this.bar.idle(message);
    this.guardNav();
    this.page.urlChanged();
  }
}

function sessionStore(win) {
  try {
    const s = win.sessionStorage;
    return { get: (k) => s.getItem(k), set: (k, v) => s.setItem(k, v), remove: (k) => s.removeItem(k) };
  } catch {
    return { get: () => null, set: () => {}, remove: () => {} };
  }
}
