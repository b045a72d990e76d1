"""A 422's problems in the language asked for: pydantic writes English, the catalogs give each error type's words
(the session form and the topology editor show them); English answers stay pydantic's own."""

from __future__ import annotations

from webkit import TestClient


def problems(client: TestClient, body: object, **headers: str) -> list[dict]:
    r = client.post("/api/sessions", json=body, headers=headers)
    assert r.status_code == 422, r.text
    return r.json()["detail"]


def test_validation_problems_in_chinese(client: TestClient) -> None:
    body = {"mode": "simulated", "server": {"type": "REP", "identity": "x" * 300}, "client": {"type": "REQ"},
            "nonsense": 1}
    english = {tuple(p["loc"]): p["msg"] for p in problems(client, body)}
    assert english[("body", "server", "identity")] == "String should have at most 255 characters"
    assert english[("body", "nonsense")] == "Extra inputs are not permitted"
    zh = {tuple(p["loc"]): p["msg"] for p in problems(client, body, **{"Accept-Language": "zh-CN"})}
    assert zh[("body", "server", "identity")] == "最多 255 个字符"
    assert zh[("body", "nonsense")] == "不允许此项"
    assert all("input" not in p and "ctx" not in p for p in problems(client, body, **{"Accept-Language": "zh-CN"}))
    mode = problems(client, {"mode": "radio", "server": {"type": "REP"}, "client": {"type": "REQ"}},
                    **{"Accept-Language": "zh-CN"})
    assert mode[0]["msg"] == "应为以下之一：'simulated'、'tcp'"  # noqa: RUF001 (Chinese punctuation)


def test_a_rule_of_our_own_in_chinese(client: TestClient) -> None:
    """A model's own rule (a value_error) is translated from its English text by the catalogs."""
    body = {"mode": "simulated", "server": {"type": "REP"}}
    english = problems(client, body)[0]["msg"]
    zh = problems(client, body, **{"Accept-Language": "zh-CN"})[0]["msg"]
    assert english == "Value error, a two-peer session needs both 'server' and 'client'"
    assert zh == "双方会话需要同时给出 'server' 和 'client'"


def test_a_topologys_problems_in_chinese(client: TestClient) -> None:
    """The topology editor's 422s (peers.topology's checks) in the language asked for, the node names as given."""
    body = {"mode": "simulated", "nodes": [{"name": "a", "type": "PUSH"}, {"name": "b", "type": "PUSH"}],
            "links": [{"connect": "a", "bind": "b"}]}
    english = problems(client, body)[0]["msg"]
    assert "link 0 (a -> b): a PUSH cannot talk to a PUSH" in english
    zh = problems(client, body, **{"Accept-Language": "zh-CN"})[0]["msg"]
    assert zh == "链路 0（a -> b）：PUSH 不能与 PUSH 通信（23/ZMTP 的套接字配对表）；PUSH 可以与 PULL 通信"  # noqa: RUF001
