"""Property-based checks: whatever arrives, the answer is well formed or an error as data.

The decoder and the parsers are pure and get many examples; the socket
methods run against one real daemon for the module, with fewer examples per
method so the suite stays quick. Path-like params are drawn from directories
made for the test, or from names under a directory that does not exist, so a
generated ``"."`` can never make the daemon watch the repository.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from daemon_fixtures import DaemonProc, module_daemon, write_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import RequestError
from memoryd.indexer.parse import parse_bytes
from memoryd.indexer.records import KIND_INDEX, KIND_MEMORY, KIND_SESSION
from memoryd.ipc.protocol import decode_request
from memoryd.methods import METHODS

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    # Lone surrogates: JSON can spell them (\ud800), UTF-8, SQLite and paths cannot.
    st.text(st.sampled_from("a/.\ud800\udcff\n"), min_size=1, max_size=6),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)

# -- the NDJSON decoder ---------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_decode_to_a_request_or_a_request_error(line: bytes) -> None:
    try:
        decode_request(line)
    except RequestError as err:
        assert err.code in ("parse_error", "invalid_request")


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["id", "method", "params", "jsonrpc", "extra"]), JSON_VALUES, max_size=5
    ),
    st.integers(min_value=0, max_value=3000),
)
def test_any_json_object_or_deep_nesting_decodes_or_is_refused(
    obj: dict[str, Any], depth: int
) -> None:
    for line in (json.dumps(obj).encode(), b"[" * depth * 40 + b"]" * depth * 40):
        try:
            _, method, params = decode_request(line)
        except RequestError as err:
            assert err.code in ("parse_error", "invalid_request")
        else:
            assert isinstance(method, str) and isinstance(params, dict)


# -- the frontmatter and session parsers --------------------------------------

YAML_PIECES = st.sampled_from(
    [
        "name: x\n",
        "description: a memory\n",
        "type: feedback\n",
        "project-name: shop\n",
        "status: done\n",
        "a: &a [x, x]\n",
        "b: [*a, *a, *a]\n",
        "c: !!python/object:os.system {}\n",
        "d: {e: [1, 2, {f: g}]}\n",
        "- list item\n",
        "key: 'unterminated\n",
        "when: 2025-01-02 03:04:05\n",
        "\t\x00\x85\u2028\n",
        "---\n",
        "## Session summary\n",
        "x" * 500 + "\n",
        "postgres://u:hunter22@h/db sk-" + "a" * 40 + "\n",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(YAML_PIECES, max_size=12),
    st.text(max_size=200),
    st.sampled_from([KIND_MEMORY, KIND_SESSION, KIND_INDEX]),
)
def test_any_header_and_body_parse_to_a_record_without_raising(
    pieces: list[str], body: str, kind: str
) -> None:
    data = ("---\n" + "".join(pieces) + "---\n" + body).encode("utf-8", "surrogatepass")
    parsed = parse_bytes(data, kind)  # an alias expansion would also hit the test timeout
    assert (parsed.error is None) or isinstance(parsed.error, str)
    assert len(json.dumps(parsed.meta or {}, default=str)) < 100_000


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([KIND_MEMORY, KIND_SESSION, KIND_INDEX]))
def test_any_bytes_parse_to_a_record_without_raising(data: bytes, kind: str) -> None:
    parsed = parse_bytes(data, kind)
    assert parsed.kind == kind


# -- every socket method, against one real daemon --------------------------------


@pytest.fixture(scope="module")
def hostile_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    home = tmp_path_factory.mktemp("properties")
    write_memory(home / "memory" / "feedback_tests.md", "run the tests with pytest -n 4")
    write_memory(home / "memory" / "project_goal.md", "ship the beta", mtype="project")
    with module_daemon(home) as d:
        yield d


def _dirs(d: DaemonProc) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from([str(d.roots[0]), str(d.roots[0] / "feedback_tests.md")]),
        st.text(max_size=30).map(lambda t: f"/nonexistent-memoryd/{t}"),
        JSON_SCALARS.filter(lambda v: not isinstance(v, str)),
        st.lists(st.text(max_size=5), max_size=2),
    )


PARAM_KEYS = {
    name: [p.name for p in m.params]
    for name, m in METHODS.items()
    if name not in ("unwatch", "shutdown", "check")
}


def _params(d: DaemonProc, method: str) -> st.SearchStrategy[dict[str, Any]]:
    keys = PARAM_KEYS[method]
    value_for = {k: _dirs(d) if k == "dir" else JSON_VALUES for k in keys}
    known = st.fixed_dictionaries({}, optional=value_for) if keys else st.just({})
    unknown = st.dictionaries(st.text(min_size=1, max_size=8), JSON_SCALARS, max_size=1)
    return st.one_of(known, st.tuples(known, unknown).map(lambda kv: {**kv[1], **kv[0]}))


@pytest.mark.parametrize("method", sorted(PARAM_KEYS))
def test_every_method_answers_any_params_with_a_result_or_an_error_as_data(
    hostile_daemon: DaemonProc, method: str
) -> None:
    d = hostile_daemon

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_params(d, method))
    def check(params: dict[str, Any]) -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(60)
            sock.connect(str(d.socket))
            line = json.dumps({"id": 1, "method": method, "params": params}) + "\n"
            sock.sendall(line.encode())
            answer = json.loads(sock.makefile("rb").readline())
        assert answer["id"] == 1
        if "error" in answer:
            assert answer["error"]["code"] != "internal", (params, answer)
            assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]
        else:
            assert "result" in answer

    check()
    assert d.proc is not None and d.proc.poll() is None
