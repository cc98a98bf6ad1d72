"""Memories and prompts in any language: unspaced scripts as bigrams, mixed scripts, accents.

The texts are written the way agents write memories in Chinese- and
Japanese-speaking teams: prose in the local language with English tool names,
identifiers and commands mixed in, no spaces between words.
"""

from __future__ import annotations

import sqlite3

import pytest

from memoryd._unicode_words import ascii_equivalent, bigrams, fold, unspaced_grams, words
from memoryd.indexer.records import FileStat, ParsedFile, Upsert
from memoryd.indexer.store import IndexStore
from memoryd.select._text import split_words, terms
from memoryd.select.analysis import _words
from memoryd.select.candidates import Candidate
from memoryd.select.large import fts_query
from memoryd.select.local import LocalRanker


def mem(filename: str, name: str, description: str, body: str = "") -> Candidate:
    return Candidate(filename, name, description, "feedback", body, 0.0)


CHINESE_FOLDER = [
    mem(
        "feedback_ui_verify.md",
        "UI 改动真实运行；日志优先，必要时截图自查",
        "涉及 Compose 界面 / HUD / 布局改动，先用日志和 uiautomator 判断，必要时截图复核，"
        "不靠编译或单测通过就算完成",
        "更新 APK 后默认同时推到真机和模拟器；多 adb 设备时显式指定 `adb -s`。",
    ),
    mem(
        "feedback_db_migration.md",
        "数据库迁移必须先在预发环境演练",
        "所有 Alembic 数据库迁移脚本上线前先在预发环境跑一遍，记录耗时和锁表情况",
        "上次直接在生产执行迁移，orders 表被锁了十二分钟。",
    ),
    mem(
        "project_release_train.md",
        "发版节奏：每周四下午发版",
        "移动端每周四下午 3 点发版，周三晚上冻结代码，紧急修复走 hotfix 分支",
    ),
    mem(
        "reference_grafana.md",
        "监控面板地址",
        "Grafana 上延迟和错误率面板的位置，以及告警规则在哪里配置",
    ),
]

JAPANESE_FOLDER = [
    mem(
        "feedback_pytest_xdist.md",
        "pytest の並列実行で Redis テストが落ちる",
        "pytest -n auto で並列実行すると Redis を使うテストが不安定になるので、"
        "serial マーカーを付けて直列で実行する",
    ),
    mem(
        "project_billing_migration.md",
        "請求システムの移行計画",
        "旧請求システムから Stripe への移行は三月末までに完了させる予定",
    ),
    mem(
        "reference_vpn.md",
        "社内 VPN の接続手順",
        "ステージング環境に入るには社内 VPN に接続してから踏み台サーバーを経由する",
    ),
]


def test_unspaced_runs_become_overlapping_bigrams() -> None:
    assert bigrams("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert bigrams("库") == ["库"]
    assert words("用 pytest 跑测试的时候 xdist 报错") == [
        *("用", "pytest", "跑测", "测试", "试的", "的时", "时候", "xdist", "报错"),
    ]


def test_mixed_scripts_keep_identifiers_and_fold_width_and_accents() -> None:
    assert words("在 payment_retry 模块里") == ["在", "payment", "retry", "模块", "块里"]
    assert fold("ＡＰＩ　キー") == "api キー"  # full-width letters and space
    assert words("Café naïve façade Ærø straße") == ["cafe", "naive", "facade", "aero", "strasse"]
    assert words("Привет, мир") == ["привет", "мир"]  # other alphabets are words too
    assert words("서버를 재시작") == ["서버", "버를", "재시", "시작"]


def test_ascii_text_tokenizes_as_before() -> None:
    text = "Don't mock the ORM in test_orders.py; use selectForUpdate--reuse-db"
    assert split_words(text) == _words(text)
    assert split_words(text) == [
        *("don't", "mock", "the", "orm", "in", "test", "orders", "py", "use"),
        *("select", "for", "update", "reuse", "db"),
    ]


def test_the_fast_path_agrees_with_the_tokenizer_on_mixed_text() -> None:
    for c in CHINESE_FOLDER + JAPANESE_FOLDER:
        for text in (c.name, c.description, c.body):
            assert _words(text) == split_words(text)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("数据库迁移之前要做什么？", ["feedback_db_migration.md"]),
        ("改了布局之后怎么验证界面", ["feedback_ui_verify.md"]),
        ("这周四几点发版", ["project_release_train.md"]),
        ("run the alembic 迁移 on staging first?", ["feedback_db_migration.md"]),
    ],
)
def test_chinese_prompts_find_chinese_memories(query: str, expected: list[str]) -> None:
    got = [s.filename for s in LocalRanker().ranked(query, CHINESE_FOLDER)[0]]
    assert got == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("並列実行で Redis のテストが失敗する", ["feedback_pytest_xdist.md"]),
        ("Stripe への移行はいつ終わる？", ["project_billing_migration.md"]),
        ("ステージングに接続する方法", ["reference_vpn.md"]),
    ],
)
def test_japanese_prompts_find_japanese_memories(query: str, expected: list[str]) -> None:
    got = [s.filename for s in LocalRanker().ranked(query, JAPANESE_FOLDER)[0]]
    assert got == expected


@pytest.mark.parametrize("query", ["帮我把这个函数改成异步的", "README の誤字を直して"])
def test_unrelated_prompts_in_either_language_get_nothing(query: str) -> None:
    assert LocalRanker().ranked(query, CHINESE_FOLDER + JAPANESE_FOLDER)[0] == []


def test_accented_and_plain_spellings_meet() -> None:
    folder = [
        mem("feedback_cafe.md", "Café menu export", "The café menu export needs UTF-8 BOM"),
        mem("project_other.md", "Release train", "Releases go out on Tuesdays"),
    ]
    got = [s.filename for s in LocalRanker().ranked("cafe menu export broke", folder)[0]]
    assert got == ["feedback_cafe.md"]


def _parsed(name: str, description: str, body: str) -> ParsedFile:
    return ParsedFile("memory", f"h-{name}", name, description, "feedback", body)


def _stat(path: str) -> FileStat:
    directory, _, filename = path.rpartition("/")
    return FileStat(path, directory, filename, 1_700_000_000_000_000_000, 10, 1)


def _fts_paths(conn: sqlite3.Connection, query: str) -> list[str]:
    match = fts_query(query)
    assert match is not None
    rows = conn.execute(
        "SELECT f.path FROM files_fts JOIN files f ON f.rowid = files_fts.rowid "
        "WHERE files_fts MATCH ? ORDER BY f.path",
        (match,),
    )
    return [r[0] for r in rows]


def test_full_text_index_finds_a_word_inside_an_unspaced_run(store: IndexStore) -> None:
    c = CHINESE_FOLDER[1]
    store.apply([Upsert(_stat("/m/a.md"), _parsed(c.name, c.description, c.body))])
    store.apply([Upsert(_stat("/m/b.md"), _parsed("Cafés", "Export of the café menu", "x"))])
    assert _fts_paths(store.conn, "迁移") == ["/m/a.md"]  # inside "数据库迁移必须先在..."
    assert _fts_paths(store.conn, "预发环境") == ["/m/a.md"]
    assert _fts_paths(store.conn, "cafe") == ["/m/b.md"]
    assert _fts_paths(store.conn, "café") == ["/m/b.md"]


def test_ascii_memories_store_no_bigrams() -> None:
    assert unspaced_grams("a.md", "Deploy order", "Migrations before code") is None
    assert terms("数据库") == ["数据", "据库"]


def test_text_whose_only_non_ascii_is_punctuation_reads_as_the_unicode_path_does() -> None:
    text = "Deploy — then “verify” → prod; don’t skip the smoke test… ™"
    assert ascii_equivalent("a — b") == "a   b"
    assert ascii_equivalent("don’t") is None  # the apostrophe folds into a word character
    assert ascii_equivalent("x™") is None  # NFKC makes "TM"
    assert split_words(text) == words(text) == _words(text)
