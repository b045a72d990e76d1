// The lesson and class routes, over an injected fetch. DOM-free.
//
//   GET  /api/lessons                          -> {lessons: [{id, title, summary, level, step_count}]}
//   GET  /api/lessons/{id}                     -> {id, title, ..., references, steps: [{number, title, narration_tree, question}]}
//   GET  /api/lessons/{id}/steps/{n}           -> a scene: {events, element, field, highlights, writes, received, log, question, narration_tree}
//   POST /api/lessons/{id}/steps/{n}/answer    {choice} | {index, field, offset} -> {correct, message, explain}
//   POST /api/lessons/{id}/steps/{n}/exercise  {answer} | {topology} -> {correct, message, problems, explain}
//   POST /api/classes                          -> 201 {code, teacher_token, join_url}
//   GET  /api/classes/{code}                   -> {code, students, following, teacher, lesson, step}
//   WS   /ws/classes/{code}?role=teacher | ?role=student   (see classroom.js; the teacher's token goes
//        in its first message, never in the URL, where logs and history would keep it)

import { jsonRequester } from '../core/api.js';

const seg = (s) => encodeURIComponent(String(s));

export function createLessonsApi(host) {
  const base = host.base || '';
  const cache = new Map();

  const request = jsonRequester(host);

  /** GETs are immutable for the life of the server: keep them. */
  function cached(path) {
    if (!cache.has(path)) {
      const p = request('GET', path);
      cache.set(path, p);
      p.catch(() => cache.delete(path));
    }
    return cache.get(path);
  }

  // Lessons, scenes and answers come in the page's language (?lang=; cached per language).
  const lang = () => `?lang=${encodeURIComponent(host.i18n.lang)}`;

  return {
    lessons: () => cached(`/api/lessons${lang()}`),
    lesson: (id) => cached(`/api/lessons/${seg(id)}${lang()}`),
    step: (id, n) => cached(`/api/lessons/${seg(id)}/steps/${seg(n)}${lang()}`),
    answer: (id, n, body) => request('POST', `/api/lessons/${seg(id)}/steps/${seg(n)}/answer${lang()}`, body),
    exercise: (id, n, body) => request('POST', `/api/lessons/${seg(id)}/steps/${seg(n)}/exercise${lang()}`, body),
    /** The lesson's illustrated page (a link). */
    illustratedUrl: (id) => `${base}/api/lessons/${seg(id)}/illustrated${lang()}`,
    /** The handout's pyzmq script (a topology lesson's builds its whole topology with libzmq). */
    scriptUrl: (id) => `${base}/api/lessons/${seg(id)}/script.py`,
    createClass: () => request('POST', '/api/classes', {}),
    classInfo: (code) => request('GET', `/api/classes/${seg(code)}`),
    /** ws:// or wss:// URL of a class, from the page's location {protocol, host}. Never holds the token. */
    classSocketUrl(location, code, role) {
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const q = role === 'teacher' ? '?role=teacher' : '?role=student';
      return `${scheme}//${location.host}${base}/ws/classes/${seg(code)}${q}`;
    },
  };
}
