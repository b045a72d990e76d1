"""Lessons on topologies (issue 19.5): a step's source may be several nodes (a preset or nodes, links and proxies),
its actions act on nodes (send from a node, late connect, read by hand), its scene shows the socket decisions beside
the wire elements, and the loader and the player refuse, naming the step, what a topology cannot do."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from zmtplab.lessons import LessonError, LessonPlayError, load_lesson_file, play_lesson

PIPELINE = """
title: A pipeline
summary: Three workers.
steps:
  - title: Tasks
    topology:
      nodes:
        - {name: vent, type: PUSH}
        - {name: w1, type: PULL}
        - {name: w2, type: PULL}
        - {name: w3, type: PULL, recv: manual}
      links:
        - {connect: w1, bind: vent}
        - {connect: w2, bind: vent}
    do:
      - run
      - send: {from: vent, frames: [task 1]}
      - send: {from: vent, frames: [task 2]}
      - send: {from: vent, frames: [task 3]}
    element: {kind: message, node: vent, peer: w2, index: 0}
    highlight: [{field: frame 1, value: task 2}]
    expect:
      inbox:
        w1: [[task 1], [task 3]]
        w2: [[task 2]]
    narration: Round robin.
  - title: A late worker
    do:
      - connect: {connect: w3, bind: vent}
      - run
      - send: {from: vent, frames: [task 4]}
      - send: {from: vent, frames: [task 5]}
      - send: {from: vent, frames: [task 6]}
    element: {kind: message, node: vent, peer: w3, index: 0}
    expect:
      inbox: {w3: []}
    narration: w3 joins.
  - title: w3 reads by hand
    do:
      - recv: {node: w3}
    expect:
      inbox: {w3: [[task 5]]}
    narration: Read one.
"""


def write(tmp_path: Path, text: str, name: str = "topo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_topology_lesson_plays_on_its_nodes(tmp_path):
    scenes = play_lesson(load_lesson_file(write(tmp_path, PIPELINE)))
    first, late, read = scenes
    # One connection per link, numbered in link order; wire elements keep their connection.
    # (connections counted from 0, as a session's are: a lesson's #0 is the playground's #0)
    assert first.topology["conns"] == [{"conn": "0", "link": 0, "client": "w1", "server": "vent"},
                                       {"conn": "1", "link": 1, "client": "w2", "server": "vent"}]
    element = first.events[first.element]
    assert (element["kind"], element["conn"], element["dir"]) == ("message", "1", "s2c")
    assert first.highlights[0]["value"] == "task 2"
    # The late link is the topology's third link and connection "2"; round robin went on over three pipes.
    assert late.topology["links"][-1] == {"connect": "w3", "bind": "vent"}
    assert late.topology["conns"][-1] == {"conn": "2", "link": 2, "client": "w3", "server": "vent"}
    assert late.events[late.element]["conn"] == "2"
    # (task 3 went to w1, so w2 is next; w3's pipe comes after w1's and w2's.)
    assert [(r["peer"], r["frames"]) for r in late.received][-2:] == [("w2", ["task 4"]), ("w1", ["task 6"])]
    # An application receive is an event of the scene too (as in a topology session's stream).
    recvs = [ev for ev in read.events if ev["kind"] == "peer" and ev["what"] == "recv"]
    assert [(ev["peer"], ev["frames"]) for ev in recvs][-1] == ("w3", [b"task 5".hex()])
    public = read.public()
    assert public["topology"]["nodes"][0]["name"] == "vent" and public["decisions"] == []
    assert public["source"] == {"type": "topology", "nodes": [{"name": "vent", "type": "PUSH"},
                                                              {"name": "w1", "type": "PULL"},
                                                              {"name": "w2", "type": "PULL"},
                                                              {"name": "w3", "type": "PULL"}]}


def test_an_inbox_that_does_not_hold_names_the_node_and_what_it_got(tmp_path):
    text = PIPELINE.replace("w2: [[task 2]]", "w2: [[task 3]]")
    with pytest.raises(LessonPlayError, match=r"step 1 \('Tasks'\): expected w2 to have received exactly "
                                              r"\[\['task 3'\]\]; it received \[\['task 2'\]\]"):
        play_lesson(load_lesson_file(write(tmp_path, text)))


def test_reading_more_than_is_there_is_an_error(tmp_path):
    text = PIPELINE.replace("- recv: {node: w3}", "- recv: {node: w3, count: 2}")
    with pytest.raises(LessonPlayError, match="recv: w3 had only 1 of 2 messages to read"):
        play_lesson(load_lesson_file(write(tmp_path, text)))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # An action that names no node of the topology, with the nodes it has.
        ("- send: {from: vent, frames: [task 1]}", "- send: {from: vnet, frames: [task 1]}",
         r"step 1 \('Tasks'\): `send` names 'vnet', which is not a node here \(vent, w1, w2, w3\)"),
        ("- connect: {connect: w3, bind: vent}", "- connect: {connect: w4, bind: vent}",
         r"step 2 \('A late worker'\): `connect` names 'w4'"),
        ("w3: [[task 5]]", "w9: [[task 5]]", r"step 3 \('w3 reads by hand'\): `expect` names 'w9'"),
        # An action a topology does not take.
        ("- recv: {node: w3}", "- close: client", r"step 3 .*: a topology takes no `close` action"),
        # The topology itself: the link at fault, with 23/ZMTP's rule.
        ("{connect: w2, bind: vent}", "{connect: w2, bind: w1}", r"link 1 \(w2 -> w1\): a PULL cannot talk to a PULL"),
        ("{name: w3, type: PULL, recv: manual}", "{name: w3, type: PULL, recv: sometimes}", "node 'w3': recv is"),
    ],
)
def test_the_loader_names_the_step_and_the_node(tmp_path, old, new, expected):
    assert old in PIPELINE
    with pytest.raises(LessonError, match=expected):
        load_lesson_file(write(tmp_path, PIPELINE.replace(old, new)))


def test_topology_actions_and_decisions_need_a_topology(tmp_path):
    session = """
    title: Two peers
    summary: A session.
    steps:
      - title: One
        session: {server: {type: PUSH}, client: {type: PULL}}
        do: [{recv: {node: client}}]
        narration: x.
    """
    with pytest.raises(LessonError, match=r"step 1 \('One'\): `recv` acts on a topology's nodes"):
        load_lesson_file(write(tmp_path, session))
    decisions = session.replace("do: [{recv: {node: client}}]", "decisions: [{node: client}]")
    with pytest.raises(LessonError, match=r"socket decisions \(`decisions`\) come from a topology source"):
        load_lesson_file(write(tmp_path, decisions))


def test_a_preset_is_a_source(tmp_path):
    text = """
    title: A preset
    summary: The load-balancing preset.
    steps:
      - title: One
        topology: {preset: load-balancing}
        do:
          - run
          - send: {from: vent, frames: [x]}
        expect:
          inbox: {w1: [[x]], w2: [], w3: []}
        narration: x.
    """
    lesson = load_lesson_file(write(tmp_path, text))
    assert lesson.steps[0].topology.node_names() == ["vent", "w1", "w2", "w3"]
    (scene,) = play_lesson(lesson)
    assert scene.source["preset"] == "load-balancing"
    with pytest.raises(LessonError, match="no preset 'load-balanced'; one of load-balancing"):
        load_lesson_file(write(tmp_path, text.replace("preset: load-balancing", "preset: load-balanced")))


DECISIONS = """
title: Decisions
summary: A PUB and two SUBs.
steps:
  - title: Filtered
    topology:
      nodes:
        - {name: pub, type: PUB}
        - {name: a, type: SUB, subscribe: [x.]}
        - {name: b, type: SUB, subscribe: [y.]}
      links:
        - {connect: a, bind: pub}
        - {connect: b, bind: pub}
    do:
      - run
      - send: {from: pub, frames: [x.1]}
    element: {kind: socket, node: pub, what: route, peer: a}
    decisions:
      - {node: pub, what: filter, peer: b}
    expect:
      inbox: {a: [[x.1]], b: []}
      decisions:
        - {node: pub, what: filter, rule: prefix-match, peer: b, count: 1}
    narration: Only a.
"""


def test_a_step_points_at_socket_decisions_and_expects_them(tmp_path):
    (scene,) = play_lesson(load_lesson_file(write(tmp_path, DECISIONS)))
    element = scene.events[scene.element]
    assert (element["kind"], element["node"], element["what"], element["peer"]) == ("socket", "pub", "route", "a")
    assert element["text"] == "PUB sent 'x.1' to a (it subscribed to 'x.')"
    (marked,) = scene.decisions
    assert scene.events[marked]["text"] == "PUB filtered out 'x.1' for b (subscribed to 'y.')"
    assert scene.public()["decisions"] == [marked]
    # The message id ties the decision, the wire message and the receive together.
    msg = element["msg"]
    assert [ev["kind"] for ev in scene.events if ev.get("msg") == msg and ev["kind"] != "socket"] == ["message",
                                                                                                      "peer"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("peer: b, count: 1}", "peer: b, count: 2}",
         r"expected 2 socket decision\(s\) element \(node='pub', what='filter', rule='prefix-match', peer='b', "
         r"count=2; index 0\), found 1; the decisions: \["),
        ("- {node: pub, what: filter, peer: b}", "- {node: pub, what: drop}",
         r"no element \(kind='socket', node='pub', what='drop'; index 0\) in the scene \(0 match\)"),
    ],
)
def test_a_decision_that_is_not_there_is_an_error(tmp_path, old, new, expected):
    assert old in DECISIONS
    with pytest.raises(LessonPlayError, match=expected):
        play_lesson(load_lesson_file(write(tmp_path, DECISIONS.replace(old, new))))


def test_a_window_makes_a_slow_reader_push_back(tmp_path):
    text = """
    title: Back-pressure
    summary: A small window.
    steps:
      - title: Blocked
        topology:
          nodes:
            - {name: vent, type: PUSH, sndhwm: 1}
            - {name: worker, type: PULL, rcvhwm: 1, recv: manual}
          links: [{connect: worker, bind: vent}]
          window: 1
        do:
          - run
          - {send: {from: vent, frames: [t1]}}
          - {send: {from: vent, frames: [t2]}}
          - {send: {from: vent, frames: [t3]}}
          - {send: {from: vent, frames: [t4]}}
        expect:
          decisions: [{node: vent, what: block, rule: sndhwm}]
        narration: x.
      - title: Read
        do: [{recv: {node: worker, count: 4}}]
        expect: {inbox: {worker: [[t1], [t2], [t3], [t4]]}}
        narration: y.
    """
    first, _ = play_lesson(load_lesson_file(write(tmp_path, text)))
    decided = [(ev["what"], ev["rule"]) for ev in first.events if ev["kind"] == "socket" and ev["node"] == "vent"]
    waited = decided.count(("block", "sndhwm")) + decided.count(("queue", "blocked"))
    assert decided.count(("unblock", "send")) < waited  # a send still waits at the end of the step (read in step 2)
    # Without the window nothing waits: every task crosses, whatever the reader does.
    with pytest.raises(LessonPlayError, match="expected some socket decision"):
        play_lesson(load_lesson_file(write(tmp_path, text.replace("window: 1", "window: null"))))
